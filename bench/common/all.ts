// Runs every benchmark behind docs/benchmarks.md, one after the other (never two at once: they
// would compete for the same cores), each in its own process, with the machine's load before each.
//   node bench/common/all.ts [--apps 100] [--steady-seconds 300] [--trials 20]
import { spawnSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { intFlags } from './report.ts';

const USAGE = 'usage: node bench/common/all.ts [--apps N (default 100)] [--steady-seconds S (default 300)] [--trials T (default 20)]';
const flags = intFlags(USAGE, { apps: 100, 'steady-seconds': 300, trials: 20 });
const root = fileURLToPath(new URL('../../', import.meta.url));
const node = path.join(root, 'node_modules', '.bin', 'node');

const runs: Array<[string, string[]]> = [
  ['resolve', []],
  ['sync-scale', ['--apps', String(flags.apps)]],
  ['steady', ['--apps', String(flags.apps), '--seconds', String(flags['steady-seconds'])]],
  ['react', ['--trials', String(flags.trials)]],
];
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`);
let failed = 0;
for (const [name, args] of runs) {
  console.log(`\n=== bench/${name} ${args.join(' ')} (load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}, ${new Date().toISOString()})`);
  const r = spawnSync(node, ['--disable-warning=ExperimentalWarning', path.join(root, 'bench', name, 'main.ts'), ...args], { stdio: 'inherit', cwd: root });
  if (r.status !== 0) {
    failed++;
    console.error(`bench/${name} failed (exit ${r.status ?? r.signal})`);
  }
}
process.exit(failed ? 1 : 0);
