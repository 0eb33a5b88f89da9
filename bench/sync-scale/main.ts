// Benchmark: N Applications synced from scratch by impersync, side by side with (a) kubectl and
// (b) a minimal client applying the same manifests as the same ServiceAccounts, in one run on one
// control plane (each reference on its own fresh namespaces). Not a test: it asserts nothing.
//   node bench/sync-scale/main.ts [--apps 100] [--trials 1] [--timeout 1800] [--apiserver-profile SECONDS]
// --trials T runs impersync and the minimal client T times in turn, each trial on a fresh control
// plane, and reports every trial's ratio and their median (the tables below it are the median
// trial's; kubectl runs once, after the last trial, on its control plane).
// --apiserver-profile takes kube-apiserver's CPU profile over the first SECONDS of impersync's run
// (the file is named in the output; `go tool pprof -top` reads it).
// IMPERSYNC_BENCH_BASELINE=<another checkout, with node_modules> also runs that checkout's controller
// on its own fresh namespaces in the same run (before/after side by side).
import os from 'node:os';
import path from 'node:path';
import { startControlPlane } from '../../test/support/index.ts';
import { attribution, breakdown, failures, requestsBy } from '../common/audit.ts';
import {
  createApplications,
  createRepo,
  deleteApplications,
  healthCounts,
  prepareControlNamespace,
  waitAllDone,
} from '../common/impersync.ts';
import { findKubectl } from '../common/kubectl.ts';
import { apiserverCpuProfile } from '../common/pprof.ts';
import { startControllerProcess, type PairPeak } from '../common/process.ts';
import { fixed, intFlags, mib, seconds, sleep, table } from '../common/report.ts';
import { appName, createTenants } from '../common/tenants.ts';
import { directReference, kubectlReference, type ReferenceResult } from './references.ts';

const USAGE =
  'usage: node bench/sync-scale/main.ts [--apps N (default 100; try 500, 1000)] [--trials T (default 1)] [--timeout SECONDS (default 1800)] [--apiserver-profile SECONDS (default none)]';
const flags = intFlags(USAGE, { apps: 100, trials: 1, timeout: 1800, 'apiserver-profile': 0 });
const N = flags.apps;
const T = flags.trials;
const SWEEP = [4, 16, 64];
const names = (prefix: string) => Array.from({ length: N }, (_, i) => appName(prefix, i));

const kubectl = findKubectl();
console.log(
  `sync-scale: ${N} Applications × 5 resources; kubectl ${kubectl.version} (${kubectl.path}); node ${process.version}`,
);
const baselineRoot = process.env['IMPERSYNC_BENCH_BASELINE'];
const profileSeconds = flags['apiserver-profile'];
// Each trial on a control plane of its own: one trial's Deployments keep kube-controller-manager
// busy for minutes after it, which would slow the next trial's impersync far more than its
// minimal client (docs/benchmarks.md, 2026-12-05).
const freshControlPlane = async () => {
  const plane = await startControlPlane({ profiling: profileSeconds > 0 });
  await prepareControlNamespace(plane);
  return plane;
};
let cp = await freshControlPlane();
let profiled = false;

type ImpRun = {
  ms: number;
  from: number;
  to: number;
  cpu: number;
  gitCpu: number;
  rendererCpu: number;
  peakRss: number;
  rendererPeakRss: number;
  pair: PairPeak;
  health: Record<string, number>;
  /** How long after the last Application was done the controller's last queued Event was written. */
  eventsMs: number;
};

/**
 * Waits until the controller has written every Event it queued (impersync_events_pending at 0), so
 * that what it sends for these Applications is all counted; resolves to when that was seen (at
 * once for a controller without the metric: a baseline checkout that writes its Events in line).
 */
async function eventsWritten(ctl: { metric(name: string): Promise<number> }, timeoutMs = 120_000): Promise<number> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const pending = await ctl.metric('impersync_events_pending');
    if (!(pending > 0)) return Date.now();
    if (Date.now() > end) throw new Error(`the controller still had ${pending} Events to write after ${timeoutMs} ms`);
    await sleep(200);
  }
}

/** N Applications named `prefix`… synced from scratch by a controller run from `root` (this checkout by default). */
async function runImpersync(prefix: string, root: string | undefined): Promise<ImpRun> {
  const apps = names(prefix);
  await createTenants(cp, apps);
  const repo = await createRepo(apps);
  const ctl = await startControllerProcess(cp.controllerKubeconfigPath, [], root);
  try {
    const s0 = ctl.sample();
    const r0 = ctl.rendererCpu();
    const stopPair = ctl.samplePair();
    const from = Date.now();
    // Only the first run is profiled.
    const profile =
      profileSeconds > 0 && !profiled
        ? apiserverCpuProfile(
            cp,
            profileSeconds,
            path.join(os.tmpdir(), `sync-scale-apiserver-${prefix}${Date.now()}.pprof`),
          )
        : undefined;
    profiled ||= profile !== undefined;
    await createApplications(cp, apps, repo.url);
    const done = await waitAllDone(cp, apps, flags.timeout * 1000);
    // The peaks (VmHWM) as they were when the last Application was done, before its Events were all written.
    const peaksAtDone = { controller: ctl.sample().peakRss, renderer: ctl.rendererPeakRss() };
    const writtenAt = await eventsWritten(ctl);
    // What the live-object watches hold (bytes of JSON), against their bound.
    const liveBytes = await ctl.metric('impersync_live_object_bytes{state="used"}');
    const liveCapacity = await ctl.metric('impersync_live_object_bytes{state="capacity"}');
    if (profile) console.log(`kube-apiserver CPU profile of the first ${profileSeconds} s: ${await profile}`);
    // CPU, memory and requests through the last Event; the time is until the last Application was done.
    const s1 = ctl.sample();
    const pair = stopPair();
    const run = {
      ms: done.doneAt - from,
      from,
      to: writtenAt,
      eventsMs: writtenAt - done.doneAt,
      cpu: s1.cpu - s0.cpu,
      gitCpu: s1.childCpu - s0.childCpu,
      rendererCpu: ctl.rendererCpu() - r0,
      peakRss: s1.peakRss,
      rendererPeakRss: ctl.rendererPeakRss(),
      pair,
      health: healthCounts(done.apps),
    };
    console.log(
      `impersync${root ? ` (${root})` : ''}: all ${N} Synced + Succeeded after ${seconds(run.ms)} s (health: ${JSON.stringify(run.health)}); its Events all written ${seconds(run.eventsMs)} s later (requests, CPU and memory counted through then; peak RSS when the last was done: ${mib(peaksAtDone.controller)} + ${mib(peaksAtDone.renderer)} MiB); startup CPU ${fixed(s0.cpu, 2)} s; the live-object watches hold ${Number.isNaN(liveBytes) ? 'n/a' : `${fixed(liveBytes / 2 ** 20, 1)} of ${fixed(liveCapacity / 2 ** 20, 0)}`} MiB (by the estimate of what their objects take)`,
    );
    return run;
  } finally {
    await ctl.stop();
    await repo.remove();
    await deleteApplications(cp, apps);
  }
}

try {
  type Requests = Awaited<ReturnType<typeof requestsBy>>;
  type Trial = {
    imp: ImpRun;
    impRequests: Requests;
    baseline: (ImpRun & { requests: Requests }) | undefined;
    sweep: Array<ReferenceResult & { requests: number }>;
    /** The fastest level of the sweep: the practical limit. */
    b: ReferenceResult & { requests: number };
  };
  const trials: Trial[] = [];
  for (let t = 0; t < T; t++) {
    const tag = T > 1 ? `t${t + 1}-` : '';
    if (t > 0) {
      await cp.stop();
      cp = await freshControlPlane();
    }
    // impersync; with IMPERSYNC_BENCH_BASELINE, also the checkout it names (before/after in one run)
    const imp = await runImpersync(`app-${tag}`, undefined);
    const impRequests = await requestsBy(cp, cp.controllerUserName, imp);
    const baseline = baselineRoot
      ? await runImpersync(`app-base-${tag}`, baselineRoot).then(async (r) => ({
          ...r,
          requests: await requestsBy(cp, cp.controllerUserName, r),
        }))
      : undefined;
    // (b) minimal client, a concurrency sweep; the fastest level is the practical limit
    const sweep: Array<ReferenceResult & { requests: number }> = [];
    for (const c of SWEEP) {
      const dApps = names(`direct-${tag}c${c}-`);
      await createTenants(cp, dApps);
      const r = await directReference(cp, dApps, c);
      sweep.push({ ...r, requests: (await requestsBy(cp, cp.controllerUserName, r)).length });
      console.log(`${r.label}: ${seconds(r.ms)} s`);
    }
    const b = sweep.reduce((best, r) => (r.ms < best.ms ? r : best));
    trials.push({ imp, impRequests, baseline, sweep, b });
    if (T > 1)
      console.log(
        `trial ${t + 1} of ${T}: impersync ${seconds(imp.ms)} s, practical limit ${seconds(b.ms)} s: ${fixed(imp.ms / b.ms, 2)}×`,
      );
  }
  const ratioOf = (x: Trial) => x.imp.ms / x.b.ms;
  // The median trial by its ratio (the lower of the two middle ones for an even count).
  const median = [...trials].sort((x, y) => ratioOf(x) - ratioOf(y))[Math.floor((T - 1) / 2)] as Trial;
  const { imp, impRequests, baseline, sweep, b } = median;

  // (a) kubectl, once
  const kApps = names('kubectl-');
  await createTenants(cp, kApps);
  const a = await kubectlReference(cp, kubectl.path, kApps);
  const aRequests = await requestsBy(cp, cp.controllerUserName, a);
  console.log(`${a.label}: ${seconds(a.ms)} s`);

  // The sum of the two peaks: an upper bound of the pair's peak, since they need not peak together,
  // and both count the pages of the node binary they share. Then the peaks of the sums sampled every
  // 0.5 s, RSS and PSS (which counts a shared page once): a sample can miss a short peak.
  const peaks = (r: ImpRun) =>
    `${mib(r.peakRss)} + ${mib(r.rendererPeakRss)} = ${mib(r.peakRss + r.rendererPeakRss)}` +
    ` (together: RSS ${mib(r.pair.rss)}, PSS ${mib(r.pair.pss)})`;
  const row = (label: string, ms: number, requests: number, cpu: string, rss: string) => [
    label,
    seconds(ms),
    fixed(N / (ms / 1000), 1),
    fixed(ms / N, 1),
    fixed(requests / N, 1),
    cpu,
    rss,
  ];
  table(
    `sync-scale: ${N} Applications, 5 resources each, impersonated (time until every Application is Synced with its operation Succeeded)`,
    ['', 'total s', 'apps/s', 'ms/app', 'requests/app', 'CPU s', 'peak RSS MiB (controller + renderer)'],
    [
      ...trials.map((x, i) =>
        row(
          `impersync (controller process)${T > 1 ? `, trial ${i + 1}${x === median ? ' (median)' : ''}` : ''}`,
          x.imp.ms,
          x.impRequests.length,
          `${fixed(x.imp.cpu, 1)} + renderer ${fixed(x.imp.rendererCpu, 1)} + git ${fixed(x.imp.gitCpu, 1)}`,
          peaks(x.imp),
        ),
      ),
      ...(baseline
        ? [
            row(
              `impersync baseline (${baselineRoot})`,
              baseline.ms,
              baseline.requests.length,
              `${fixed(baseline.cpu, 1)} + renderer ${fixed(baseline.rendererCpu, 1)} + git ${fixed(baseline.gitCpu, 1)}`,
              peaks(baseline),
            ),
          ]
        : []),
      row(
        '(a) kubectl --server-side --as, 8 at a time',
        a.ms,
        aRequests.length,
        `${fixed(a.childCpu ?? 0, 1)} (all kubectl)`,
        '-',
      ),
      ...sweep.map((r) =>
        row(`${r.label}${r === b ? ' (best)' : ''}${T > 1 ? ', median trial' : ''}`, r.ms, r.requests, '-', '-'),
      ),
    ],
  );
  table(
    'ratios (time)',
    ['', 'ratio'],
    [
      ['impersync / (a) kubectl', `${fixed(imp.ms / a.ms, 2)}×`],
      ...(T > 1
        ? trials.map((x, i) => [
            `trial ${i + 1}: impersync / (b) practical limit (${seconds(x.imp.ms)} / ${seconds(x.b.ms)} s)`,
            `${fixed(ratioOf(x), 2)}×`,
          ])
        : []),
      [`impersync / (b) practical limit${T > 1 ? `, the median of ${T} trials` : ''}`, `${fixed(imp.ms / b.ms, 2)}×`],
      ...(baseline
        ? [
            ['impersync / baseline (time)', `${fixed(imp.ms / baseline.ms, 2)}×`],
            ['impersync / baseline (requests)', `${fixed(impRequests.length / baseline.requests.length, 2)}×`],
            ['baseline / (b) practical limit', `${fixed(baseline.ms / b.ms, 2)}×`],
          ]
        : []),
    ],
  );
  table(
    `where impersync's requests went (controller user, per Application; failures by code: ${JSON.stringify(failures(impRequests))})`,
    ['request', 'per app', 'total'],
    breakdown(impRequests)
      .slice(0, 30)
      .map(([what, n]) => [what, fixed(n / N, 2), String(n)]),
  );
  if (baseline)
    table(
      `where the baseline's requests went (per Application; failures by code: ${JSON.stringify(failures(baseline.requests))})`,
      ['request', 'per app', 'total'],
      breakdown(baseline.requests)
        .slice(0, 30)
        .map(([what, n]) => [what, fixed(n / N, 2), String(n)]),
    );
  const named = attribution(impRequests);
  table(
    "impersync's requests as a ServiceAccount: naming their Application (docs/impersonation.md §11), rights asked (§12)",
    ['', 'per app', 'total'],
    [
      ['as a ServiceAccount', fixed(named.asServiceAccount / N, 2), String(named.asServiceAccount)],
      ['  naming Application, project and revision', fixed(named.named / N, 2), String(named.named)],
      ['  shared live-object watches (name none)', fixed(named.sharedWatches / N, 2), String(named.sharedWatches)],
      ['  naming none otherwise', fixed(named.unnamed / N, 2), String(named.unnamed)],
      ['SelfSubjectAccessReviews (only after a refusal)', fixed(named.reviews / N, 2), String(named.reviews)],
    ],
  );
  table(
    'kubectl requests per Application',
    ['request', 'per app', 'total'],
    breakdown(aRequests)
      .slice(0, 10)
      .map(([what, n]) => [what, fixed(n / N, 2), String(n)]),
  );
} finally {
  await cp.stop();
}
