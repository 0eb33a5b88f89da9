// A small line differ (Myers' O(ND) algorithm) and unified-diff output with context, to show
// what a sync would change as YAML lines a person can read.
import { stringify } from 'yaml';

export type DiffOp = { op: ' ' | '-' | '+'; line: string };

/** The shortest edit script turning `a` into `b`, as kept/removed/added lines. */
export function diffLines(a: readonly string[], b: readonly string[]): DiffOp[] {
  // Common prefix and suffix cost nothing and shrink the search.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const head: DiffOp[] = a.slice(0, start).map((line) => ({ op: ' ', line }));
  const tail: DiffOp[] = a.slice(endA).map((line) => ({ op: ' ', line }));
  return [...head, ...myers(a.slice(start, endA), b.slice(start, endB)), ...tail];
}

function myers(a: readonly string[], b: readonly string[]): DiffOp[] {
  const n = a.length;
  const m = b.length;
  if (n === 0) return b.map((line) => ({ op: '+', line }));
  if (m === 0) return a.map((line) => ({ op: '-', line }));
  const max = n + m;
  const offset = max;
  let v: Int32Array = new Int32Array(2 * max + 2);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
      let x = down ? (v[offset + k + 1] ?? 0) : (v[offset + k - 1] ?? 0) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  // Walk the trace back from (n, m) to (0, 0), collecting the edit script in reverse.
  const out: DiffOp[] = [];
  let x = n;
  let y = m;
  for (let d = found; d >= 0; d--) {
    v = trace[d] as Int32Array;
    const k = x - y;
    const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
    const prevK = down ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : (v[offset + prevK] ?? 0);
    const prevY = d === 0 ? 0 : prevX - prevK;
    while (x > prevX && y > prevY) {
      out.push({ op: ' ', line: a[x - 1] as string });
      x--;
      y--;
    }
    if (d > 0) {
      if (down) out.push({ op: '+', line: b[prevY] as string });
      else out.push({ op: '-', line: a[prevX] as string });
    }
    x = prevX;
    y = prevY;
  }
  return out.reverse();
}

/** Unified diff of two texts with `context` lines around each change; '' when they are equal. */
export function unifiedDiff(oldText: string, newText: string, context = 3): string {
  const split = (t: string) => (t === '' ? [] : t.replace(/\n$/, '').split('\n'));
  const ops = diffLines(split(oldText), split(newText));
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

/** YAML for diffs: no line folding, keys in the order the server or the manifest gave them. */
export function toYaml(value: unknown): string {
  if (value === null || value === undefined) return '';
  return stringify(value, { lineWidth: 0, minContentWidth: 0 });
}
