// A line differ for the diffs a person reads (`impersync diff`): Myers' O(ND) algorithm in its
// linear-space form (the middle snake, as diff-match-patch's bisect), so memory grows with the
// lines compared, never with their product: the trace-keeping form needed 4.7 GB for a ConfigMap of
// 12,000 keys whose values all changed. Past `maxChanges` changed lines it stops searching and says
// how many lines differ instead of showing them. The controller's comparisons make no text diff at
// all unless asked (compare.ts), since nothing reads it there.
import { stringify } from 'yaml';

export type DiffOp = { op: ' ' | '-' | '+'; line: string };

/** Most changed lines (removed plus added) a diff shows; past it, unifiedDiff says how many. */
export const DEFAULT_MAX_CHANGES = 2000;

/**
 * The shortest edit script turning `a` into `b`, as kept/removed/added lines; undefined when it
 * changes more than `maxChanges` lines.
 */
export function diffLines(a: readonly string[], b: readonly string[], maxChanges = Infinity): DiffOp[] | undefined {
  // Lines as numbers: equal lines, equal numbers, compared in constant time.
  const ids = new Map<string, number>();
  const id = (line: string): number => {
    let n = ids.get(line);
    if (n === undefined) ids.set(line, (n = ids.size));
    return n;
  };
  const x = Int32Array.from(a, id);
  const y = Int32Array.from(b, id);
  const ops: Array<{ op: DiffOp['op']; from: number; to: number }> = [];
  const budget = { left: maxChanges };
  if (!diffRange(x, 0, x.length, y, 0, y.length, ops, budget)) return undefined;
  const out: DiffOp[] = [];
  for (const o of ops) {
    const lines = o.op === '+' ? b : a;
    for (let i = o.from; i < o.to; i++) out.push({ op: o.op, line: lines[i] as string });
  }
  return out;
}

type Ops = Array<{ op: DiffOp['op']; from: number; to: number }>;

function emit(ops: Ops, op: DiffOp['op'], from: number, to: number): void {
  if (to <= from) return;
  const last = ops[ops.length - 1];
  if (last && last.op === op && last.to === from) last.to = to;
  else ops.push({ op, from, to });
}

/** Appends the edit script of a[a0, a1) → b[b0, b1); false once the budget of changes is spent. */
function diffRange(
  a: Int32Array,
  a0: number,
  a1: number,
  b: Int32Array,
  b0: number,
  b1: number,
  ops: Ops,
  budget: { left: number },
): boolean {
  // Common prefix and suffix cost nothing and shrink the search.
  const start = a0;
  while (a0 < a1 && b0 < b1 && a[a0] === b[b0]) {
    a0++;
    b0++;
  }
  emit(ops, ' ', start, a0);
  let e1 = a1;
  let f1 = b1;
  while (e1 > a0 && f1 > b0 && a[e1 - 1] === b[f1 - 1]) {
    e1--;
    f1--;
  }
  let ok = true;
  if (e1 === a0 || f1 === b0) {
    budget.left -= e1 - a0 + (f1 - b0);
    if (budget.left < 0) return false;
    emit(ops, '-', a0, e1);
    emit(ops, '+', b0, f1);
  } else {
    const split = middleSnake(a, a0, e1, b, b0, f1, budget.left);
    if (split === undefined) return false;
    if (split === null) {
      // Nothing in common: all of one out, all of the other in.
      budget.left -= e1 - a0 + (f1 - b0);
      if (budget.left < 0) return false;
      emit(ops, '-', a0, e1);
      emit(ops, '+', b0, f1);
    } else {
      ok =
        diffRange(a, a0, split.x, b, b0, split.y, ops, budget) &&
        diffRange(a, split.x, e1, b, split.y, f1, ops, budget);
    }
  }
  emit(ops, ' ', e1, a1);
  return ok;
}

/**
 * A point on a shortest edit path of a[a0, a1) → b[b0, b1), found by searching from both ends at
 * once; null when the two share nothing, undefined when the path changes more than `max` lines.
 */
function middleSnake(
  a: Int32Array,
  a0: number,
  a1: number,
  b: Int32Array,
  b0: number,
  b1: number,
  max: number,
): { x: number; y: number } | null | undefined {
  const n = a1 - a0;
  const m = b1 - b0;
  const maxD = Math.ceil((n + m) / 2);
  const offset = maxD;
  const length = 2 * maxD + 2;
  const v1 = new Int32Array(length).fill(-1);
  const v2 = new Int32Array(length).fill(-1);
  v1[offset + 1] = 0;
  v2[offset + 1] = 0;
  const delta = n - m;
  const front = delta % 2 !== 0;
  let k1start = 0;
  let k1end = 0;
  let k2start = 0;
  let k2end = 0;
  for (let d = 0; d < maxD; d++) {
    // The searches have not met after d - 1 rounds: the path changes more than 2(d - 1) lines.
    if (2 * d - 2 >= max) return undefined;
    for (let k1 = -d + k1start; k1 <= d - k1end; k1 += 2) {
      const i = offset + k1;
      let x1 =
        k1 === -d || (k1 !== d && (v1[i - 1] as number) < (v1[i + 1] as number))
          ? (v1[i + 1] as number)
          : (v1[i - 1] as number) + 1;
      let y1 = x1 - k1;
      while (x1 < n && y1 < m && a[a0 + x1] === b[b0 + y1]) {
        x1++;
        y1++;
      }
      v1[i] = x1;
      if (x1 > n) k1end += 2;
      else if (y1 > m) k1start += 2;
      else if (front) {
        const j = offset + delta - k1;
        if (j >= 0 && j < length && v2[j] !== -1 && x1 >= n - (v2[j] as number)) return { x: a0 + x1, y: b0 + y1 };
      }
    }
    for (let k2 = -d + k2start; k2 <= d - k2end; k2 += 2) {
      const i = offset + k2;
      let x2 =
        k2 === -d || (k2 !== d && (v2[i - 1] as number) < (v2[i + 1] as number))
          ? (v2[i + 1] as number)
          : (v2[i - 1] as number) + 1;
      let y2 = x2 - k2;
      while (x2 < n && y2 < m && a[a1 - x2 - 1] === b[b1 - y2 - 1]) {
        x2++;
        y2++;
      }
      v2[i] = x2;
      if (x2 > n) k2end += 2;
      else if (y2 > m) k2start += 2;
      else if (!front) {
        const j = offset + delta - k2;
        if (j >= 0 && j < length && v1[j] !== -1) {
          const x1 = v1[j] as number;
          const y1 = offset + x1 - j;
          if (x1 >= n - x2) return { x: a0 + x1, y: b0 + y1 };
        }
      }
    }
  }
  return null;
}

export interface UnifiedDiffOptions {
  /** Unchanged lines shown around each change. Default 3. */
  context?: number;
  /** Most changed lines shown; past it, one line says how many differ. Default DEFAULT_MAX_CHANGES. */
  maxChanges?: number;
}

/** Unified diff of two texts with context around each change; '' when they are equal. */
export function unifiedDiff(oldText: string, newText: string, opts: UnifiedDiffOptions | number = {}): string {
  const { context = 3, maxChanges = DEFAULT_MAX_CHANGES } = typeof opts === 'number' ? { context: opts } : opts;
  const split = (t: string) => (t === '' ? [] : t.replace(/\n$/, '').split('\n'));
  const oldLines = split(oldText);
  const newLines = split(newText);
  const ops = diffLines(oldLines, newLines, maxChanges);
  if (!ops) return tooLarge(oldLines, newLines, maxChanges);
  const changed = ops.map((o) => o.op !== ' ');
  if (!changed.includes(true)) return '';
  const lines: string[] = [];
  let i = 0;
  // Line numbers (1-based) in the old and new text of ops[i].
  const oldAt: number[] = [];
  const newAt: number[] = [];
  let ol = 1;
  let nl = 1;
  for (const o of ops) {
    oldAt.push(ol);
    newAt.push(nl);
    if (o.op !== '+') ol++;
    if (o.op !== '-') nl++;
  }
  while (i < ops.length) {
    if (!changed[i]) {
      i++;
      continue;
    }
    const from = Math.max(0, i - context);
    let to = i;
    // Extend the hunk while the next change is within 2×context unchanged lines.
    for (let j = i; j < ops.length; j++) {
      if (changed[j]) to = j;
      else if (j - to > 2 * context) break;
    }
    const end = Math.min(ops.length, to + context + 1);
    const slice = ops.slice(from, end);
    const oldCount = slice.filter((o) => o.op !== '+').length;
    const newCount = slice.filter((o) => o.op !== '-').length;
    const oldStart = oldCount === 0 ? (oldAt[from] ?? 1) - 1 : (oldAt[from] ?? 1);
    const newStart = newCount === 0 ? (newAt[from] ?? 1) - 1 : (newAt[from] ?? 1);
    lines.push(`@@ -${oldStart},${oldCount} +${newStart},${newCount} @@`);
    for (const o of slice) lines.push(`${o.op}${o.line}`);
    i = end;
  }
  return lines.join('\n') + '\n';
}

/**
 * What is said instead of a diff past the limit: how many lines are only in the old text and how
 * many only in the new one, counted as multisets (linear; a line that moved counts as neither).
 */
function tooLarge(oldLines: readonly string[], newLines: readonly string[], max: number): string {
  const count = new Map<string, number>();
  for (const l of oldLines) count.set(l, (count.get(l) ?? 0) + 1);
  let added = 0;
  for (const l of newLines) {
    const c = count.get(l) ?? 0;
    if (c > 0) count.set(l, c - 1);
    else added++;
  }
  let removed = 0;
  for (const c of count.values()) removed += c;
  return `# diff not shown: ${removed} lines removed and ${added} added, more than the ${max} changed lines a diff shows\n`;
}

/** YAML for diffs: no line folding, keys in the order the server or the manifest gave them. */
export function toYaml(value: unknown): string {
  if (value === null || value === undefined) return '';
  return stringify(value, { lineWidth: 0, minContentWidth: 0 });
}
