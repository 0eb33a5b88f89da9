// Benchmark of the ServiceAccount resolver (spec §3): resolutions per second for projects of 10,
// 100 and 1,000 destinationServiceAccounts entries, the match always last (the worst case: every
// entry is visited and both of its patterns evaluated).
//   node bench/resolve/main.ts
// Three tables:
//   1. mixed lists (half literal entries, half glob entries), by list size;
//   2. the same 1,000-entry list resolved for 1, 100 and 10,000 different Applications: the cost of
//      one resolution does not grow with the number of Applications (compiled patterns are cached
//      per pattern, nothing is kept per Application);
//   3. all-literal against all-glob lists: literal entries skip glob matching (string equality).
// Not part of the tests: it asserts nothing about time.
import { resolveServiceAccount, type ServiceAccountEntry, type ResolveTarget } from '../../src/impersonation/index.ts';

const IN = 'https://kubernetes.default.svc';
// The machine may be shared: each row is the best of several short rounds.
const WARMUP_MS = 150;
const ROUND_MS = 100;
const ROUNDS = 5;

function literalEntry(i: number): ServiceAccountEntry {
  return {
    server: `https://cluster-${i}.example:6443`,
    namespace: `team-${i}`,
    defaultServiceAccount: `sa-${i}`,
    fromProject: 'bench',
  };
}
function globEntry(i: number): ServiceAccountEntry {
  return {
    server: `https://cluster-${i}-*.example:6443`,
    namespace: `team-${i}-{dev,prod}-[a-z]*`,
    defaultServiceAccount: `sa-${i}`,
    fromProject: 'bench',
  };
}
const matching: ServiceAccountEntry = {
  server: IN,
  namespace: 'guestbook-*',
  defaultServiceAccount: 'deployer',
  fromProject: 'bench',
};

function list(size: number, kind: 'mixed' | 'literal' | 'glob'): ServiceAccountEntry[] {
  const out: ServiceAccountEntry[] = [];
  for (let i = 0; i < size - 1; i++)
    out.push(kind === 'literal' || (kind === 'mixed' && i % 2 === 0) ? literalEntry(i) : globEntry(i));
  out.push(matching);
  return out;
}

function targets(apps: number): ResolveTarget[] {
  return Array.from({ length: apps }, (_, i) => ({
    resolvedServer: IN,
    destinationNamespace: `guestbook-${i}`,
    applicationNamespace: 'argocd',
  }));
}

/** Resolutions per second, cycling over `apps` targets: the best of ROUNDS timed rounds, after a warm-up. */
function measure(entries: ServiceAccountEntry[], apps: ResolveTarget[]): number {
  let sink = 0;
  let n = 0;
  const batch = () => {
    for (let k = 0; k < 20; k++) {
      const r = resolveServiceAccount(entries, apps[n++ % apps.length] as ResolveTarget);
      if (r.outcome !== 'found') throw new Error('the last entry must match');
      sink += r.serviceAccount.length;
    }
  };
  const timed = (ms: number) => {
    const start = performance.now();
    const first = n;
    let elapsed = 0;
    while (elapsed < ms) {
      batch();
      elapsed = performance.now() - start;
    }
    return ((n - first) / elapsed) * 1000;
  };
  timed(WARMUP_MS);
  let best = 0;
  for (let r = 0; r < ROUNDS; r++) best = Math.max(best, timed(ROUND_MS));
  if (sink === 0) throw new Error('unreachable');
  return best;
}

function table(title: string, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  console.log(`\n${title}`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const perEntryNs = (rps: number, size: number) => (1e9 / rps / size).toFixed(1);

console.log(
  `impersync resolver benchmark, node ${process.version}, match last, best of ${ROUNDS} rounds of ${ROUND_MS} ms per row`,
);

const sizes = [10, 100, 1000];
table(
  '1. Mixed lists (every other entry literal), one Application',
  ['entries', 'resolutions/s', 'µs/resolution', 'ns/entry'],
  sizes.map((size) => {
    const rps = measure(list(size, 'mixed'), targets(1));
    return [String(size), fmt(rps), (1e6 / rps).toFixed(2), perEntryNs(rps, size)];
  }),
);

const big = list(1000, 'mixed');
table(
  '2. 1,000 mixed entries, many Applications (different destination namespaces)',
  ['applications', 'resolutions/s', 'µs/resolution'],
  [1, 100, 10_000].map((apps) => {
    const rps = measure(big, targets(apps));
    return [fmt(apps), fmt(rps), (1e6 / rps).toFixed(2)];
  }),
);

table(
  '3. Literal entries skip glob matching (1,000 entries, one Application)',
  ['list', 'resolutions/s', 'µs/resolution', 'ns/entry'],
  (['literal', 'mixed', 'glob'] as const).map((kind) => {
    const rps = measure(list(1000, kind), targets(1));
    return [`all ${kind}`.replace('all mixed', 'half/half'), fmt(rps), (1e6 / rps).toFixed(2), perEntryNs(rps, 1000)];
  }),
);
