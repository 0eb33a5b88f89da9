// Benchmark: the controller at rest. N Applications synced, then nothing changes for the window:
// the controller process's CPU time, its RSS, and its API requests per minute (audit log). The
// periodic refresh (timeout.reconciliation, default 120 s) is the only work left to do.
//   node bench/steady/main.ts [--apps 100] [--seconds 300] [--settle 10]
import { breakdown, failures, requestsBy } from '../common/audit.ts';
import { fixed, intFlags, mib, sleep, table } from '../common/report.ts';
import { syncedEnvironment } from '../common/synced.ts';

const USAGE =
  'usage: node bench/steady/main.ts [--apps N (default 100)] [--seconds WINDOW (default 300)] [--settle SECONDS after the last sync (default 10)]';
const flags = intFlags(USAGE, { apps: 100, seconds: 300, settle: 10 });
const N = flags.apps;

console.log(`steady: ${N} Applications synced, then ${flags.seconds} s with nothing changing; node ${process.version}`);
const env = await syncedEnvironment(N);
try {
  await sleep(flags.settle * 1000);
  const s0 = env.controller.sample();
  const from = Date.now();
  let minRss = s0.rss;
  let maxRss = s0.rss;
  const end = from + flags.seconds * 1000;
  while (Date.now() < end) {
    await sleep(Math.min(2000, end - Date.now()));
    const s = env.controller.sample();
    minRss = Math.min(minRss, s.rss);
    maxRss = Math.max(maxRss, s.rss);
  }
  const s1 = env.controller.sample();
  const to = Date.now();
  const watches = await env.controller.metric('impersync_live_object_watches');
  const minutes = (to - from) / 60_000;
  const requests = await requestsBy(env.cp, env.cp.controllerUserName, { from, to });
  const cpu = s1.cpu - s0.cpu;
  const gitCpu = s1.childCpu - s0.childCpu;
  table(
    `steady: ${N} synced Applications, ${fixed((to - from) / 1000, 0)} s with nothing changing (timeout.reconciliation 120 s)`,
    ['measure', 'value'],
    [
      ['controller CPU s (process)', fixed(cpu, 2)],
      ['  per minute', fixed(cpu / minutes, 2)],
      ['  share of one core', `${fixed((cpu / ((to - from) / 1000)) * 100, 2)} %`],
      ['git CPU s (child processes)', fixed(gitCpu, 2)],
      ['RSS at start / min / max / end, MiB', `${mib(s0.rss)} / ${mib(minRss)} / ${mib(maxRss)} / ${mib(s1.rss)}`],
      ['peak RSS since start (VmHWM), MiB', mib(s1.peakRss)],
      ['API requests', String(requests.length)],
      ['  per minute', fixed(requests.length / minutes, 1)],
      ['  per minute per Application', fixed(requests.length / minutes / N, 2)],
      ['  failed (by code)', JSON.stringify(failures(requests))],
      ['live-object watches open (each renewed every 30-60 min)', String(watches)],
    ],
  );
  table(
    'requests by kind, per minute',
    ['request', 'per minute', 'total'],
    breakdown(requests)
      .slice(0, 20)
      .map(([what, n]) => [what, fixed(n / minutes, 1), String(n)]),
  );
} finally {
  await env.stop();
}
