// Go's path/filepath.Match (on Linux), the matcher Argo CD uses for the group, kind and name patterns
// of an AppProject's resource allow and deny lists. This is a different dialect from spec §2's glob:
// `*` and `?` do not match `/`, classes are `[a-z]` / `[^a-z]` (`^`, not `!`), `\` escapes, and a
// malformed pattern matches nothing (Argo CD ignores the error and treats it as no match).

const cache = new Map<string, RegExp | null>();
const CACHE_LIMIT = 2000;

/** True when `name` matches `pattern` as filepath.Match would say; a malformed pattern matches nothing. */
export function pathMatch(pattern: string, name: string): boolean {
  let re = cache.get(pattern);
  if (re === undefined) {
    re = compile(pattern);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(pattern, re);
  }
  return re !== null && re.test(name);
}

function compile(pattern: string): RegExp | null {
  const chars = Array.from(pattern);
  let out = '^';
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c === '*') {
      out += '[^/]*';
    } else if (c === '?') {
      out += '[^/]';
    } else if (c === '\\') {
      const next = chars[++i];
      if (next === undefined) return null;
      out += escape(next);
    } else if (c === '[') {
      const cls = compileClass(chars, i + 1);
      if (!cls) return null;
      out += cls.regex;
      i = cls.end;
    } else {
      out += escape(c);
    }
  }
  return new RegExp(`${out}$`, 'su');
}

/** A class starting after `[` at `start`; returns its regex and the index of its closing `]`. */
function compileClass(chars: string[], start: number): { regex: string; end: number } | null {
  let i = start;
  let negated = false;
  if (chars[i] === '^') {
    negated = true;
    i++;
  }
  const ranges: string[] = [];
  while (true) {
    const c = chars[i];
    if (c === undefined) return null; // unterminated
    if (c === ']' && ranges.length > 0) break;
    const lo = escaped(chars, i);
    if (!lo) return null;
    i = lo.next;
    let hi = lo.char;
    if (chars[i] === '-') {
      const h = escaped(chars, i + 1);
      if (!h) return null;
      hi = h.char;
      i = h.next;
    }
    // lo > hi is not an error in Go: the range simply matches nothing.
    const loCp = lo.char.codePointAt(0) ?? 0;
    const hiCp = hi.codePointAt(0) ?? 0;
    ranges.push(loCp <= hiCp ? `${escapeInClass(lo.char)}-${escapeInClass(hi)}` : '(?!)');
  }
  const body = ranges.map((r) => (r === '(?!)' ? '' : r)).join('');
  if (body === '') return { regex: negated ? '.' : '(?!)', end: i };
  return { regex: `[${negated ? '^' : ''}${body}]`, end: i };
}

/** One class character, `\`-escaped or not; `-` and `]` unescaped are malformed there. */
function escaped(chars: string[], i: number): { char: string; next: number } | null {
  const c = chars[i];
  if (c === undefined || c === '-' || c === ']') return null;
  if (c === '\\') {
    const n = chars[i + 1];
    return n === undefined ? null : { char: n, next: i + 2 };
  }
  return { char: c, next: i + 1 };
}

function escape(c: string): string {
  return c.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

function escapeInClass(c: string): string {
  return c.replace(/[\\\][^-]/g, '\\$&');
}
