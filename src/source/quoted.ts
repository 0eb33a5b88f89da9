// go-yaml's reading of a multi-line quoted scalar: libyaml (and go-yaml v2, which kubectl's and
// Argo CD's sigs.k8s.io/yaml use) reads a single- or double-quoted scalar up to its closing quote
// whatever the indentation of its continuation lines, where the `yaml` library ends it at the first
// line indented less than its parent needs ("Missing closing 'quote"). The leading white space of a
// continuation line is not part of the value (line folding drops it), so indenting such lines
// further gives the same value: this makes the text one the `yaml` library reads as go-yaml does.
// A document marker at the start of a line still ends the scalar, as in go-yaml.
import { Parser } from 'yaml';

const QUOTED = new Set(['single-quoted-scalar', 'double-quoted-scalar']);
/** Each pass fixes one scalar and parses again; a text needing more keeps its error. */
const MAX_PASSES = 64;

/** Where the quoted scalar opened at `start` closes, as the `yaml` lexer (and go-yaml) finds it; -1 if never. */
function closingQuote(text: string, start: number): number {
  const quote = text[start] as string;
  let end = text.indexOf(quote, start + 1);
  if (quote === "'") {
    while (end !== -1 && text[end + 1] === "'") end = text.indexOf("'", end + 2);
    return end;
  }
  while (end !== -1) {
    let backslashes = 0;
    while (text[end - 1 - backslashes] === '\\') backslashes++;
    if (backslashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return -1;
}

/** The first quoted scalar the `yaml` library cut short: its start and its real closing quote. */
function firstCutShort(text: string): { start: number; end: number } | undefined {
  // The CST is walked with a stack, not recursion: a deeply nested document must not overflow it.
  // The lexer reads correctly up to the first cut, not after it: the first in the text is the one.
  let first: { start: number; end: number } | undefined;
  const stack: unknown[] = [...new Parser().parse(text)];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    const t = node as { type?: unknown; offset?: unknown; source?: unknown };
    if (typeof t.type === 'string' && QUOTED.has(t.type) && typeof t.offset === 'number') {
      const source = typeof t.source === 'string' ? t.source : '';
      const end = closingQuote(text, t.offset);
      const cut = end !== -1 && end !== t.offset + source.length - 1;
      if (cut && (!first || t.offset < first.start)) first = { start: t.offset, end };
    }
    for (const value of Object.values(node)) if (value !== null && typeof value === 'object') stack.push(value);
  }
  return first;
}

/** Indents the scalar's continuation lines to the column of its opening quote; undefined when it cannot. */
function reindent(text: string, start: number, end: number): string | undefined {
  const column = start - (text.lastIndexOf('\n', start - 1) + 1);
  let out = text.slice(0, start);
  let from = start;
  for (let nl = text.indexOf('\n', start); nl !== -1 && nl < end; nl = text.indexOf('\n', nl + 1)) {
    const line = nl + 1;
    const marker = text.slice(line, line + 3);
    if ((marker === '---' || marker === '...') && /^[\s]?$/.test(text[line + 3] ?? '')) return undefined;
    let spaces = 0;
    while (text[line + spaces] === ' ') spaces++;
    if (spaces >= column || /[\r\n]/.test(text[line + spaces] ?? '\n')) continue;
    out += text.slice(from, line) + ' '.repeat(column - spaces);
    from = line;
  }
  return out + text.slice(from);
}

/**
 * The text with every quoted scalar the `yaml` library would cut short at an unindented line
 * indented to where it reads to its closing quote, as go-yaml does; the text itself when none is.
 * Lines are never added or removed, so line numbers in errors stay right.
 */
export function withQuotedScalarsReindented(text: string): string {
  let current = text;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const cut = firstCutShort(current);
    const next = cut && reindent(current, cut.start, cut.end);
    if (next === undefined || next === current) return current;
    current = next;
  }
  return current;
}

/** Whether a parse error is the `yaml` library's cut-short quoted scalar. */
export function isCutShortQuote(error: { code: string; message: string }): boolean {
  return error.code === 'MISSING_CHAR' && /Missing closing ["']quote/.test(error.message);
}
