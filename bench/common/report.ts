// Printing and small statistics shared by the benchmarks: aligned tables, percentiles, flags.
import { parseArgs } from 'node:util';

export function table(title: string, header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  const out = [`\n${title}`, line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
  console.log(out);
  return out;
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] as number;
}

export const seconds = (ms: number): string => (ms / 1000).toFixed(2);
export const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(0);
export const fixed = (n: number, digits = 1): string => n.toFixed(digits);

/** Parses `--name value` integer flags with defaults; unknown flags are an error with the usage. */
export function intFlags<K extends string>(usage: string, defaults: Record<K, number>): Record<K, number> {
  const options = Object.fromEntries(Object.keys(defaults).map((k) => [k, { type: 'string' as const }]));
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: process.argv.slice(2),
      options: { ...options, help: { type: 'boolean' } },
      allowPositionals: false,
    }).values;
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    process.exit(2);
  }
  if (values['help']) {
    console.log(usage);
    process.exit(0);
  }
  const out = { ...defaults };
  for (const k of Object.keys(defaults) as K[]) {
    const v = values[k];
    if (typeof v !== 'string') continue;
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) {
      console.error(`--${k} must be a positive whole number, not '${v}'\n${usage}`);
      process.exit(2);
    }
    out[k] = n;
  }
  return out;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
