// Runs every benchmark behind docs/benchmarks.md, one after the other (never two at once: they
// would compete for the same cores), each in its own process, with the machine's load before each.
//   node bench/common/all.ts [--apps 100] [--steady-seconds 300] [--trials 20] [--max-apps N] [--objects N]
// `--max-apps 1000 --objects 10000` (npm run bench:docs) is every table of docs/benchmarks.md:
// sync-scale at 100, 500 and 1,000 and large-repo at 10,000 too (about an hour).
import { spawnSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { intFlags } from './report.ts';

const USAGE =
  'usage: node bench/common/all.ts [--apps N (default 100)] [--steady-seconds S (default 300)] [--trials T (default 20)] [--max-apps N: also sync-scale at 500 and 1000 up to N] [--objects N: also large-repo with N manifests]';
const flags = intFlags(USAGE, { apps: 100, 'steady-seconds': 300, trials: 20, 'max-apps': 1, objects: 1 });
const root = fileURLToPath(new URL('../../', import.meta.url));
const node = path.join(root, 'node_modules', '.bin', 'node');

const larger = [500, 1000].filter((n) => n > flags.apps && n <= flags['max-apps']);
const runs: Array<[string, string[]]> = [
  ['resolve', []],
  ['sync-scale', ['--apps', String(flags.apps)]],
  ...larger.map((n): [string, string[]] => ['sync-scale', ['--apps', String(n), '--timeout', '2400']]),
  ['steady', ['--apps', String(flags.apps), '--seconds', String(flags['steady-seconds'])]],
  ['react', ['--trials', String(flags.trials)]],
  ['tenants', []],
  ['rights', []],
  ...(flags.objects > 1 ? [['large-repo', ['--objects', String(flags.objects)]] as [string, string[]]] : []),
];
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
);
let failed = 0;
for (const [name, args] of runs) {
  console.log(
    `\n=== bench/${name} ${args.join(' ')} (load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}, ${new Date().toISOString()})`,
  );
  const r = spawnSync(
    node,
    ['--disable-warning=ExperimentalWarning', path.join(root, 'bench', name, 'main.ts'), ...args],
    { stdio: 'inherit', cwd: root },
  );
  if (r.status !== 0) {
    failed++;
    console.error(`bench/${name} failed (exit ${r.status ?? r.signal})`);
  }
}
process.exit(failed ? 1 : 0);
