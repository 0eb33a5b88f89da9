// What rendered objects cost once they leave the render: parsing keeps a YAML alias as one value,
// but the answer (and the controller's memory) holds every use of it, so a 1 MiB file with a
// thousand aliases would be a 1 GiB answer. Measured here as JSON bytes without writing the JSON,
// stopping as soon as the limit is passed, so that measuring costs no more than the limit.

export type Measure = { ok: true; bytes: number } | { ok: false; why: 'size' | 'depth' };

/** The size of `value` as JSON (UTF-8), or why it is over `maxBytes` or nested more than `maxDepth`. */
export function measureJSON(value: unknown, maxBytes: number, maxDepth: number): Measure {
  // Long strings are measured once, however often they are used (an alias is the same string).
  const strings = new Map<string, number>();
  const stringBytes = (s: string): number => {
    if (s.length < 256) return Buffer.byteLength(JSON.stringify(s));
    let n = strings.get(s);
    if (n === undefined) strings.set(s, (n = Buffer.byteLength(JSON.stringify(s))));
    return n;
  };
  let bytes = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (typeof v === 'string') bytes += stringBytes(v);
    else if (typeof v === 'number') bytes += Number.isFinite(v) ? String(v).length : 4;
    else if (typeof v === 'boolean') bytes += v ? 4 : 5;
    else if (v === null || typeof v !== 'object')
      bytes += 4; // null, and undefined in a list
    else {
      if (depth > maxDepth) return { ok: false, why: 'depth' };
      if (Array.isArray(v)) {
        bytes += 2 + Math.max(0, v.length - 1);
        for (const item of v) stack.push([item, depth + 1]);
      } else {
        const entries = Object.entries(v).filter(([, x]) => x !== undefined);
        bytes += 2 + Math.max(0, entries.length - 1);
        for (const [key, x] of entries) {
          bytes += stringBytes(key) + 1;
          stack.push([x, depth + 1]);
        }
      }
    }
    if (bytes > maxBytes) return { ok: false, why: 'size' };
  }
  return { ok: true, bytes };
}
