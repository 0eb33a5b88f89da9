// Glob matching for destinationServiceAccounts (spec §2): gobwas/glob compiled with no separators,
// anchored, case-sensitive, matching by code point.
//
// Compiled patterns are cached (bounded). The common shapes take a fast path: a literal pattern is
// a string comparison, and `*`, `p*`, `*s`, `p*s`, `*m*` use startsWith/endsWith/includes, so a list
// of literal entries never pays for glob matching. Everything else runs on a small NFA simulated
// position-set by position-set, whose cost is linear in the text for a given pattern: no pattern,
// however hostile, can make a match backtrack exponentially.
import { parseGlob, type GlobNode } from './glob-syntax.ts';

export interface Glob {
  readonly pattern: string;
  /** True when the pattern has no glob syntax at all: matching is string equality. */
  readonly literal: boolean;
  match(text: string): boolean;
}

export type CompileResult = { ok: true; glob: Glob } | { ok: false; error: string };
export type MatchResult = { ok: true; matched: boolean } | { ok: false; error: string };

const CACHE_LIMIT = 10_000;
const cache = new Map<string, CompileResult>();

/** ASCII characters that can make a pattern differ from its own text (spec §2), and NUL (the lexer's end). */
const SPECIAL_ASCII = new Uint8Array(128);
for (const ch of '*?[]{}\\\0') SPECIAL_ASCII[ch.charCodeAt(0)] = 1;

/** Compiles `pattern` (cached). An invalid pattern yields the library's reason, e.g. `unexpected end of input`. */
export function compileGlob(pattern: string): CompileResult {
  const hit = cache.get(pattern);
  if (hit) return hit;
  const result = compileUncached(pattern);
  if (cache.size >= CACHE_LIMIT) {
    // Drop the oldest entry: patterns come from a bounded set of AppProjects, so churn is rare.
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
  cache.set(pattern, result);
  return result;
}

/** True when the pattern has no glob syntax: it matches exactly its own text (spec §2). */
export function isLiteralPattern(pattern: string): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charCodeAt(i);
    if (c < 128 ? SPECIAL_ASCII[c] === 1 : c >= 0xd800 && (c <= 0xdfff || c === 0xfffd)) return false;
  }
  return true;
}

/**
 * The resolver's hot path: a literal pattern is compared with `===` without touching the cache;
 * otherwise the cached matcher runs. Returns the (cached) failed CompileResult for an invalid pattern.
 */
export function testGlob(pattern: string, text: string): boolean | { ok: false; error: string } {
  if (isLiteralPattern(pattern)) return pattern === text;
  const compiled = compileGlob(pattern);
  return compiled.ok ? compiled.glob.match(text) : compiled;
}

/** Matches `text` against `pattern`, reporting an invalid pattern as an error value. */
export function matchGlob(pattern: string, text: string): MatchResult {
  const compiled = compileGlob(pattern);
  if (!compiled.ok) return compiled;
  return { ok: true, matched: compiled.glob.match(text) };
}

/** Matches `text` against `pattern`; an invalid pattern matches nothing (as Argo CD's glob.Match). */
export function globMatch(pattern: string, text: string): boolean {
  const compiled = compileGlob(pattern);
  return compiled.ok && compiled.glob.match(text);
}

/** Number of cached compiled patterns (for tests and the benchmark). */
export function globCacheSize(): number {
  return cache.size;
}

function compileUncached(pattern: string): CompileResult {
  if (isLiteralPattern(pattern)) {
    return { ok: true, glob: { pattern, literal: true, match: (text) => text === pattern } };
  }
  const parsed = parseGlob(pattern);
  if (!parsed.ok) return parsed;
  return { ok: true, glob: { pattern, literal: false, match: buildMatcher(parsed.nodes) } };
}

function buildMatcher(nodes: readonly GlobNode[]): (text: string) => boolean {
  const simple = simpleShape(nodes);
  if (simple) return simple;
  const program = new Program();
  program.emit(nodes);
  program.finish();
  // Most texts are rejected by a fixed prefix or suffix before the NFA runs.
  const first = nodes[0];
  const last = nodes[nodes.length - 1];
  const prefix = first?.kind === 'text' ? first.text : '';
  const suffix = nodes.length > 1 && last?.kind === 'text' ? last.text : '';
  return (text) => text.startsWith(prefix) && text.endsWith(suffix) && program.run(text);
}

/** Fast paths for patterns made only of text and `*` with at most two stars. */
function simpleShape(nodes: readonly GlobNode[]): ((text: string) => boolean) | null {
  // Adjacent text nodes (e.g. around a NUL) and repeated stars collapse first.
  const parts: (string | null)[] = []; // null = star
  for (const node of nodes) {
    if (node.kind === 'text') {
      const last = parts.length > 0 ? parts[parts.length - 1] : undefined;
      if (typeof last === 'string') parts[parts.length - 1] = last + node.text;
      else parts.push(node.text);
    } else if (node.kind === 'any') {
      if (parts[parts.length - 1] !== null || parts.length === 0) parts.push(null);
    } else return null;
  }
  const shape = parts.map((p) => (p === null ? '*' : 't')).join('');
  const t = (i: number) => parts[i] as string;
  switch (shape) {
    case '':
      return (text) => text === '';
    case 't': {
      const s = t(0);
      return (text) => text === s;
    }
    case '*':
      return () => true;
    case 't*': {
      const p = t(0);
      return (text) => text.startsWith(p);
    }
    case '*t': {
      const s = t(1);
      return (text) => text.endsWith(s);
    }
    case 't*t': {
      const p = t(0);
      const s = t(2);
      return (text) => text.length >= p.length + s.length && text.startsWith(p) && text.endsWith(s);
    }
    case '*t*': {
      const m = t(1);
      return (text) => text.includes(m);
    }
    default:
      return null;
  }
}

// NFA instructions: CHAR consumes one code point accepted by its test; STAR consumes any code point
// and stays, or moves on without consuming; SPLIT moves to several targets; JUMP moves to one; MATCH
// accepts when the text is used up.
const CHAR = 0,
  STAR = 1,
  SPLIT = 2,
  JUMP = 3,
  MATCH = 4;
type Test = (cp: number) => boolean;

class Program {
  private readonly ops: number[] = [];
  private readonly tests: (Test | null)[] = [];
  private readonly targets: number[][] = [];
  private mark: Uint32Array = new Uint32Array(0);
  private generation = 0;

  private add(op: number, test: Test | null = null, targets: number[] = []): number {
    this.ops.push(op);
    this.tests.push(test);
    this.targets.push(targets);
    return this.ops.length - 1;
  }

  emit(nodes: readonly GlobNode[]): void {
    for (const node of nodes) {
      switch (node.kind) {
        case 'text':
          for (const ch of node.text) {
            const cp = ch.codePointAt(0) ?? 0;
            this.add(CHAR, (c) => c === cp);
          }
          break;
        case 'any':
          this.add(STAR);
          break;
        case 'single':
          this.add(CHAR, () => true);
          break;
        case 'list': {
          const set = new Set(node.chars);
          const not = node.not;
          this.add(CHAR, (c) => set.has(c) !== not);
          break;
        }
        case 'range': {
          const { lo, hi, not } = node;
          this.add(CHAR, (c) => (c >= lo && c <= hi) !== not);
          break;
        }
        case 'alternatives': {
          const split = this.add(SPLIT);
          const jumps: number[] = [];
          for (const option of node.options) {
            (this.targets[split] as number[]).push(this.ops.length);
            this.emit(option);
            jumps.push(this.add(JUMP));
          }
          for (const j of jumps) (this.targets[j] as number[]).push(this.ops.length);
          break;
        }
      }
    }
  }

  finish(): void {
    this.add(MATCH);
    this.mark = new Uint32Array(this.ops.length);
  }

  /** Adds `pc` and everything reachable from it without consuming input. */
  private close(pc: number, into: number[]): void {
    if (this.mark[pc] === this.generation) return;
    this.mark[pc] = this.generation;
    const op = this.ops[pc];
    if (op === SPLIT || op === JUMP) {
      for (const t of this.targets[pc] as number[]) this.close(t, into);
      return;
    }
    into.push(pc);
    if (op === STAR) this.close(pc + 1, into);
  }

  run(text: string): boolean {
    this.nextGeneration();
    let current: number[] = [];
    this.close(0, current);
    for (const ch of text) {
      if (current.length === 0) return false;
      const cp = ch.codePointAt(0) ?? 0;
      this.nextGeneration();
      const next: number[] = [];
      for (const pc of current) {
        const op = this.ops[pc];
        if (op === STAR) this.close(pc, next);
        else if (op === CHAR && (this.tests[pc] as Test)(cp)) this.close(pc + 1, next);
      }
      current = next;
    }
    return current.includes(this.ops.length - 1);
  }

  private nextGeneration(): void {
    this.generation++;
    if (this.generation === 0xffffffff) {
      this.mark.fill(0);
      this.generation = 1;
    }
  }
}
