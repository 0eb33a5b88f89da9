// Benchmark: ONE Application whose Git folder holds N ConfigMaps (default 10,000, in files of 100),
// impersonated as a `deployer` ServiceAccount with a Role on configmaps, automated sync. In one run:
// the time from creating the Application until Synced + operation Succeeded, the controller
// process's CPU and peak RSS, its API requests (audit log); then a second refresh once everything
// is Synced (the refresh annotation, until the controller removes it); and, side by side on a fresh
// namespace with the same identity, the minimal client applying the same objects, 16 in flight.
// Not a test: it asserts nothing. Takes minutes; not part of bench/common/all.ts.
//   node bench/large-repo/main.ts [--objects 10000] [--in-flight 16] [--settle 10] [--timeout 1800]
import { loadavg } from 'node:os';
import { getRaw, requestOk, type KubeObject, type TestControlPlane } from '../../test/support/index.ts';
import { TestRepo } from '../../test/support/git.ts';
import { startControlPlane } from '../../test/support/index.ts';
import { breakdown, byUserWithin, failures, readAllAudit, type Window } from '../common/audit.ts';
import { applyDirect } from '../common/direct.ts';
import { createApplications, isDone, NS, prepareControlNamespace } from '../common/impersync.ts';
import { startControllerProcess, type ControllerProcess } from '../common/process.ts';
import { fixed, intFlags, mib, seconds, sleep, table } from '../common/report.ts';
import { deployerUser } from '../common/tenants.ts';
import { configMapFiles, configMapObjects, createConfigMapTenant } from './repo.ts';

const USAGE =
  'usage: node bench/large-repo/main.ts [--objects N (default 10000)] [--in-flight C for the minimal client (default 16)] [--settle SECONDS before the second refresh (default 10)] [--timeout SECONDS for the sync (default 1800)]';
const flags = intFlags(USAGE, { objects: 10_000, 'in-flight': 16, settle: 10, timeout: 1800 });
const N = flags.objects;
const APP = 'app-large';
const DIRECT_NS = 'direct-large';
const REFRESH = 'argocd.argoproj.io/refresh';
const APP_PATH = `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/${APP}`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

type AppStatus = {
  sync?: { status?: string };
  operationState?: { phase?: string; message?: string };
  health?: { status?: string };
  resources?: unknown[];
};
const statusOf = (a: KubeObject | undefined) => a?.['status'] as AppStatus | undefined;

/** The same error logged this often means the controller is in a loop it will not leave by itself. */
const REPEATED_ERRORS = 5;

/**
 * Polls the Application every 2 s until Synced + Succeeded. Also notes when the sync status first
 * read Synced (the objects are all applied even if the operation's result is not yet written).
 * A failed operation, a dead controller or the same error logged REPEATED_ERRORS times ends the wait.
 */
async function waitSynced(
  cp: TestControlPlane,
  ctl: ControllerProcess,
  from: number,
  timeoutMs: number,
  progress: { firstSyncedAt?: number },
): Promise<{ doneAt: number; app: KubeObject }> {
  let lastReport = from;
  for (;;) {
    const app = await getRaw(cp.admin, {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      name: APP,
      namespace: NS,
    });
    const s = statusOf(app);
    if (s?.sync?.status === 'Synced' && progress.firstSyncedAt === undefined) progress.firstSyncedAt = Date.now();
    if (app && isDone(s)) return { doneAt: Date.now(), app };
    const phase = s?.operationState?.phase;
    if (phase === 'Failed' || phase === 'Error')
      throw new Error(`operation ${phase}: ${s?.operationState?.message ?? ''}`);
    if (ctl.child.exitCode !== null || ctl.child.signalCode !== null)
      throw new Error(`the controller exited:\n${ctl.lines.slice(-20).join('\n')}`);
    const repeated = repeatedError(ctl.lines);
    if (repeated)
      throw new Error(`the controller logged the same error ${REPEATED_ERRORS} times, giving up: ${repeated}`);
    if (Date.now() - from > timeoutMs)
      throw new Error(
        `not Synced + Succeeded after ${timeoutMs / 1000} s: ${JSON.stringify({ sync: s?.sync, operationState: s?.operationState }).slice(0, 2000)}`,
      );
    if (Date.now() - lastReport >= 30_000) {
      lastReport = Date.now();
      const p = ctl.sample();
      console.log(
        `  ${seconds(Date.now() - from)} s: sync ${s?.sync?.status ?? '-'}, operation ${phase ?? '-'} (${(s?.operationState?.message ?? '').slice(0, 120)}), controller RSS ${mib(p.rss)} MiB, CPU ${fixed(p.cpu, 1)} s, load ${load()}`,
      );
    }
    await sleep(2000);
  }
}

/** Sets the refresh annotation and polls the Application's metadata until the controller removed it. */
async function secondRefresh(cp: TestControlPlane, timeoutMs: number): Promise<Window> {
  const from = Date.now();
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: APP_PATH,
    contentType: 'application/merge-patch+json',
    body: { metadata: { annotations: { [REFRESH]: 'normal' } } },
  });
  for (;;) {
    const meta = (await requestOk(cp.admin, {
      path: APP_PATH,
      headers: { accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json' },
    })) as { metadata?: { annotations?: Record<string, string> } };
    if (meta.metadata?.annotations?.[REFRESH] === undefined) return { from, to: Date.now() };
    if (Date.now() - from > timeoutMs)
      throw new Error(`the refresh annotation was still there after ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}

/** The controller's log lines at warn or above (pino with level labels), grouped by message, most frequent first. */
function logProblems(lines: string[]): Array<[string, number, string]> {
  const groups = new Map<string, { n: number; example: string }>();
  for (const line of lines) {
    let rec: { level?: string; msg?: string; err?: unknown };
    try {
      rec = JSON.parse(line) as typeof rec;
    } catch {
      rec = { level: 'error', msg: `(not JSON) ${line.slice(0, 100)}` };
    }
    if (!['warn', 'error', 'fatal'].includes(rec.level ?? '')) continue;
    const key = `${rec.level} ${(rec.msg ?? '').slice(0, 150)}`;
    const g = groups.get(key) ?? {
      n: 0,
      example: (typeof rec.err === 'string' ? rec.err : JSON.stringify(rec.err ?? '')).slice(0, 240),
    };
    g.n++;
    groups.set(key, g);
  }
  return [...groups].sort((a, b) => b[1].n - a[1].n).map(([k, g]) => [k, g.n, g.example]);
}

/** An error-level `err` text the controller logged REPEATED_ERRORS times or more, if any. */
function repeatedError(lines: string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const line of lines) {
    if (!line.includes('"level":"error"')) continue;
    let err = line;
    try {
      err = String((JSON.parse(line) as { err?: unknown }).err ?? line);
    } catch {
      // not JSON: the line itself
    }
    const n = (counts.get(err) ?? 0) + 1;
    if (n >= REPEATED_ERRORS) return err;
    counts.set(err, n);
  }
  return undefined;
}

function printProblems(problems: Array<[string, number, string]>): void {
  table(
    'controller log lines at warn or above (level, message)',
    ['level message', 'count', 'example err'],
    problems.length ? problems.slice(0, 15).map(([k, n, e]) => [k, String(n), e]) : [['none', '0', '']],
  );
}

console.log(
  `large-repo: one Application, ${N} ConfigMaps in ${Math.ceil(N / 100)} files, impersonated; minimal client ${flags['in-flight']} in flight; node ${process.version}; load ${load()}`,
);
const files = configMapFiles(N);
const cp = await startControlPlane();
try {
  await prepareControlNamespace(cp);
  await createConfigMapTenant(cp, APP);
  const repo = await TestRepo.create();
  await repo.commit(
    Object.fromEntries(Object.entries(files).map(([f, text]) => [`${APP}/${f}`, text])),
    `${N} configmaps`,
  );
  const ctl = await startControllerProcess(cp.controllerKubeconfigPath);
  let sync: Window & {
    firstSynced: number;
    cpu: number;
    gitCpu: number;
    peakRss: number;
    resources: number;
    health: string;
  };
  let refresh: Window & { cpu: number; watches: number; status: string };
  let problems: Array<[string, number, string]>;
  try {
    // impersync: from creating the Application until Synced with its operation Succeeded.
    const s0 = ctl.sample();
    const from = Date.now();
    await createApplications(cp, [APP], repo.url);
    const progress: { firstSyncedAt?: number } = {};
    const done = await waitSynced(cp, ctl, from, flags.timeout * 1000, progress).catch((err: unknown) => {
      const p = ctl.sample();
      console.log(`\nimpersync did not finish: ${(err as Error).message}`);
      console.log(
        `sync status first read Synced after ${progress.firstSyncedAt ? `${seconds(progress.firstSyncedAt - from)} s` : '(never)'}; controller CPU ${fixed(p.cpu - s0.cpu, 1)} s + git ${fixed(p.childCpu - s0.childCpu, 1)} s, peak RSS ${mib(p.peakRss)} MiB; load ${load()}`,
      );
      printProblems(logProblems(ctl.lines));
      throw err;
    });
    const s1 = ctl.sample();
    const st = statusOf(done.app);
    sync = {
      from,
      to: done.doneAt,
      firstSynced: (progress.firstSyncedAt ?? done.doneAt) - from,
      cpu: s1.cpu - s0.cpu,
      gitCpu: s1.childCpu - s0.childCpu,
      peakRss: s1.peakRss,
      resources: st?.resources?.length ?? 0,
      health: st?.health?.status ?? '-',
    };
    console.log(
      `impersync: Synced + Succeeded after ${seconds(sync.to - from)} s (sync status first Synced after ${seconds(sync.firstSynced)} s; ${sync.resources} resources in status, health ${sync.health}); load ${load()}`,
    );

    // The second refresh, once everything is Synced: live objects from watches, dry-runs memoised.
    await sleep(flags.settle * 1000);
    const r0 = ctl.sample();
    const w = await secondRefresh(cp, 600_000);
    const r1 = ctl.sample();
    const after = await getRaw(cp.admin, {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      name: APP,
      namespace: NS,
    });
    refresh = {
      ...w,
      cpu: r1.cpu - r0.cpu,
      watches: await ctl.metric('impersync_live_object_watches'),
      status: `${statusOf(after)?.sync?.status ?? '-'} / ${statusOf(after)?.operationState?.phase ?? '-'}`,
    };
    console.log(
      `second refresh: annotation removed after ${seconds(w.to - w.from)} s; then ${refresh.status}; peak RSS now ${mib(r1.peakRss)} MiB`,
    );
    problems = logProblems(ctl.lines);
  } finally {
    await ctl.stop();
    await repo.remove();
  }

  // The minimal client: the same objects, the same identity (deployer of its own fresh namespace).
  await createConfigMapTenant(cp, DIRECT_NS);
  const direct = await applyDirect(
    cp,
    configMapObjects(files, DIRECT_NS).map((object) => ({ object, asUser: deployerUser(DIRECT_NS) })),
    flags['in-flight'],
  );
  console.log(`minimal client: ${N} applies in ${seconds(direct.ms)} s; load ${load()}`);

  // One read of the audit log (all its rotated files) for every window: tens of thousands of requests.
  await sleep(1500);
  const audit = await readAllAudit(cp);
  const impRequests = byUserWithin(audit, cp.controllerUserName, sync);
  const refreshRequests = byUserWithin(audit, cp.controllerUserName, refresh);
  const directRequests = byUserWithin(audit, cp.controllerUserName, direct);
  const impMs = sync.to - sync.from;

  const row = (label: string, ms: number, requests: number, cpu: string, rss: string) => [
    label,
    seconds(ms),
    fixed(N / (ms / 1000), 1),
    String(requests),
    fixed(requests / N, 2),
    cpu,
    rss,
  ];
  table(
    `large-repo: one Application, ${N} ConfigMaps, impersonated (time until Synced with its operation Succeeded)`,
    ['', 'total s', 'objects/s', 'requests', 'requests/object', 'CPU s', 'peak RSS MiB'],
    [
      row(
        'impersync (controller process)',
        impMs,
        impRequests.length,
        `${fixed(sync.cpu, 1)} + git ${fixed(sync.gitCpu, 1)}`,
        mib(sync.peakRss),
      ),
      row(`minimal client, ${flags['in-flight']} in flight`, direct.ms, directRequests.length, '-', '-'),
    ],
  );
  table('ratio (time)', ['', 'ratio'], [['impersync / minimal client', `${fixed(impMs / direct.ms, 2)}×`]]);
  table(
    `second refresh after Synced (annotation ${REFRESH}: normal until removed; ${flags.settle} s after Synced)`,
    ['measure', 'value'],
    [
      ['time until the annotation was removed, s', seconds(refresh.to - refresh.from)],
      ['API requests by the controller', String(refreshRequests.length)],
      ['  failed (by code)', JSON.stringify(failures(refreshRequests))],
      ['controller CPU s', fixed(refresh.cpu, 2)],
      ['Application afterwards (sync / operation)', refresh.status],
      ['live-object watches open', String(refresh.watches)],
    ],
  );
  table(
    'second refresh: requests',
    ['request', 'total'],
    breakdown(refreshRequests).map(([what, n]) => [what, String(n)]),
  );
  table(
    `where impersync's sync requests went (controller user; failures by code: ${JSON.stringify(failures(impRequests))})`,
    ['request', 'per object', 'total'],
    breakdown(impRequests)
      .slice(0, 20)
      .map(([what, n]) => [what, fixed(n / N, 3), String(n)]),
  );
  printProblems(problems);
  console.log(`\nload at the end: ${load()}`);
} finally {
  await cp.stop();
}
