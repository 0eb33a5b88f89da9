// Benchmark: one noisy tenant against ten quiet ones (issue 12). Ten quiet tenants (an AppProject
// each) have one small Application each; the noisy tenant (its own AppProject) has many, cycling
// through the hostile inputs of test/support/attacks.ts: a legal ConfigMap of 88,000 keys (a slow
// render), 490 KiB of aliases that expand to 480 MB, a 12,000-key ConfigMap whose values all change
// at every commit, a commit that checks out to 2.5 GiB, and plain ones. Each trial is one commit
// that changes every quiet Application's ConfigMap, followed by a refresh of every Application of
// the repository (what Argo CD's Git webhook does); the time from the commit until a quiet
// Application is Synced at it, its operation Succeeded, is one sample. The same trials run first
// without the noisy tenant, then with it, in one run against one controller process: the ratio is
// what the noisy tenant costs the quiet ones. The controller's peak RSS (and its child renderer's)
// is read from /proc after each half.
// The child renderer gets a memory limit too (--renderer-memory-limit-mib), and its peak RSS is
// set against it.
//   node bench/tenants/main.ts [--noisy 40] [--trials 5] [--reconciliation 10] [--memory-limit-mib 1024]
//                              [--renderer-memory-limit-mib 11264]
import { Agent, request } from 'undici';
import { applyRaw, requestOk, startControlPlane, type KubeObject } from '../../test/support/index.ts';
import { TestRepo } from '../../test/support/git.ts';
import { aliasBomb, checkoutBombRepo, manyKeysConfigMap, wideConfigMap } from '../../test/support/attacks.ts';
import { mapLimit } from '../../src/sync/util.ts';
import { NS, prepareControlNamespace } from '../common/impersync.ts';
import { sample, startControllerProcess } from '../common/process.ts';
import { fixed, intFlags, mib, percentile, seconds, sleep, table } from '../common/report.ts';
import { appName, createTenant, DEPLOYER, manifestFiles } from '../common/tenants.ts';
import { readdirSync, readFileSync } from 'node:fs';

const USAGE =
  "usage: node bench/tenants/main.ts [--noisy N Applications of the noisy tenant (default 40)] [--trials T commits per half (default 5)] [--reconciliation SECONDS (default 10)] [--memory-limit-mib MIB (the --memory-limit of the controller, as the install 1 GiB limit by default)] [--renderer-memory-limit-mib MIB (the child renderer's: by default 11 GiB, which with its 4 render threads of 1 GiB leaves it the budget the install's 8 GiB renderer has with its 384 MiB threads)]";
const flags = intFlags(USAGE, {
  noisy: 40,
  trials: 5,
  reconciliation: 10,
  'memory-limit-mib': 1024,
  'renderer-memory-limit-mib': 11264,
});
const QUIET = 10;
/** The label that tells the quiet Applications from the noisy ones, so that each set is listed alone. */
const ROLE = 'bench.impersync.dev/role';
const IN_CLUSTER = 'https://kubernetes.default.svc';
const KINDS = ['keys', 'alias', 'wide', 'bomb', 'plain'] as const;
type Kind = (typeof KINDS)[number];

console.log(
  `tenants: ${QUIET} quiet tenants (1 Application each), 1 noisy tenant (${flags.noisy} Applications: ${KINDS.join(', ')} in turn), ${flags.trials} commits per half, timeout.reconciliation ${flags.reconciliation}s; node ${process.version}`,
);

const cp = await startControlPlane();
const stops: Array<() => Promise<void>> = [() => cp.stop()];
try {
  await prepareControlNamespace(cp, { 'timeout.reconciliation': `${flags.reconciliation}s` });
  const project = (name: string, namespaces: string) =>
    applyRaw(cp.admin, {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AppProject',
      metadata: { name, namespace: NS },
      spec: {
        sourceRepos: ['*'],
        destinations: [{ server: IN_CLUSTER, namespace: namespaces }],
        destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: namespaces, defaultServiceAccount: DEPLOYER }],
      },
    });
  const quiet = Array.from({ length: QUIET }, (_, i) => appName('quiet-', i));
  const noisy = Array.from({ length: flags.noisy }, (_, i) => appName('noisy-', i));
  const kindOf = (i: number): Kind => KINDS[i % KINDS.length] as Kind;
  for (const q of quiet) await project(q, q);
  await project('noisy', 'noisy-*');
  await mapLimit([...quiet, ...noisy], 8, (ns) => createTenant(cp, ns));

  const repo = await TestRepo.create();
  stops.push(() => repo.remove());
  const bomb = await checkoutBombRepo();
  stops.push(() => bomb.remove());
  const quietFiles = (version: string) =>
    Object.fromEntries(
      quiet.flatMap((q) => Object.entries(manifestFiles(q, version)).map(([f, text]) => [`${q}/${f}`, text])),
    );
  let version = 1;
  await repo.commit({
    ...quietFiles('v1'),
    'noisy/keys/cm.yaml': manyKeysConfigMap(),
    'noisy/alias/cm.yaml': aliasBomb(),
    'noisy/wide/cm.yaml': wideConfigMap('wide', 'v1'),
    ...Object.fromEntries(Object.entries(manifestFiles('plain')).map(([f, text]) => [`noisy/plain/${f}`, text])),
  });

  const application = (name: string, projectName: string, repoURL: string, path: string): KubeObject => ({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: NS, labels: { [ROLE]: projectName === 'noisy' ? 'noisy' : 'quiet' } },
    spec: {
      project: projectName,
      source: { repoURL, targetRevision: 'HEAD', path },
      destination: { server: IN_CLUSTER, namespace: name },
      syncPolicy: { automated: { prune: true } },
    },
  });

  // The install's limit (resources.limits.memory 1Gi), given as the chart gives it.
  const controller = await startControllerProcess(cp.controllerKubeconfigPath, [
    `--memory-limit=${flags['memory-limit-mib']}Mi`,
    `--renderer-memory-limit=${flags['renderer-memory-limit-mib']}Mi`,
  ]);
  stops.push(() => controller.stop());
  const renderers = (): number[] =>
    readdirSync('/proc')
      .filter((e) => /^\d+$/.test(e))
      .filter((e) => {
        try {
          const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === controller.pid;
        } catch {
          return false;
        }
      })
      .map(Number);

  const agent = new Agent({ connect: { ca: cp.caPem }, connections: 8 });
  stops.push(() => agent.close());
  const token = await cp.tokenFor('admin');
  const refresh = async (app: string) => {
    const res = await request(`${cp.server}/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/${app}`, {
      method: 'PATCH',
      dispatcher: agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ metadata: { annotations: { 'argocd.argoproj.io/refresh': 'normal' } } }),
    });
    await res.body.text();
  };
  type Status = {
    sync?: { status?: string; revision?: string };
    operationState?: { phase?: string; syncResult?: { revision?: string } };
    reconciledAt?: string;
  };
  // A list that times out (an API server slowed by the load) is asked again: a sample is late, not lost.
  // The trials list the quiet Applications only: a list of the noisy ones' large statuses every
  // 100 ms would load the API server and this process (and at 100 noisy Applications ended the run).
  const statuses = async (role?: 'quiet' | 'noisy'): Promise<Map<string, Status>> => {
    const selector = role ? `?labelSelector=${encodeURIComponent(`${ROLE}=${role}`)}` : '';
    for (let attempt = 1; ; attempt++) {
      try {
        const { items: apps } = (await requestOk(cp.admin, {
          path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications${selector}`,
        })) as { items: KubeObject[] };
        return new Map(apps.map((a) => [a.metadata.name, (a['status'] ?? {}) as Status]));
      } catch (err) {
        if (attempt >= 5) throw err;
        console.log(`listing the Applications failed (${(err as Error).message}); asking again`);
      }
    }
  };
  // The quiet tenants' time waiting in the work queues (impersync_tenant_queue_wait_seconds), summed.
  const portLine = controller.lines.find((l) => l.includes('serving /healthz'));
  const port = portLine ? (JSON.parse(portLine) as { port?: number }).port : undefined;
  const quietWait = async (): Promise<{ seconds: number; takes: number }> => {
    if (port === undefined) return { seconds: Number.NaN, takes: 0 };
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    let seconds = 0;
    let takes = 0;
    for (const m of text.matchAll(
      /^impersync_tenant_queue_wait_seconds_(sum|count)\{queue="[a-z]+",tenant="([^"]+)"\} (\S+)$/gm,
    )) {
      if (!quiet.includes(m[2] as string)) continue;
      if (m[1] === 'sum') seconds += Number(m[3]);
      else takes += Number(m[3]);
    }
    return { seconds, takes };
  };
  const syncedAt = (s: Status | undefined, revision: string) =>
    s?.sync?.status === 'Synced' &&
    s.sync.revision === revision &&
    s.operationState?.phase === 'Succeeded' &&
    s.operationState.syncResult?.revision === revision;

  /** One commit, a refresh of every Application; each quiet Application's time to Synced at it. */
  const trial = async (apps: string[]): Promise<number[]> => {
    version++;
    const t0 = Date.now();
    const revision = await repo.commit(
      { ...quietFiles(`v${version}`), 'noisy/wide/cm.yaml': wideConfigMap('wide', `v${version}`) },
      `v${version}`,
    );
    await mapLimit(apps, 8, refresh);
    const times = new Map<string, number>();
    const deadline = t0 + 600_000;
    while (times.size < quiet.length) {
      if (Date.now() > deadline) throw new Error(`quiet Applications not Synced at ${revision} after 600 s`);
      const st = await statuses('quiet');
      for (const q of quiet) if (!times.has(q) && syncedAt(st.get(q), revision)) times.set(q, Date.now() - t0);
      await sleep(100);
    }
    return [...times.values()];
  };

  // The quiet tenants first, alone.
  await mapLimit(quiet, 8, (q) => applyRaw(cp.admin, application(q, q, repo.url, q)));
  const first = repo.head();
  for (;;) {
    const st = await statuses('quiet');
    if (quiet.every((q) => syncedAt(st.get(q), first))) break;
    await sleep(500);
  }
  const alone: number[] = [];
  const w0 = await quietWait();
  for (let i = 0; i < flags.trials; i++) alone.push(...(await trial(quiet)));
  const w1 = await quietWait();
  const aloneRss = {
    controller: sample(controller.pid).peakRss,
    renderer: Math.max(0, ...renderers().map((p) => sample(p).peakRss)),
  };

  // Then the noisy tenant joins and is seen by the controller (every one of its Applications compared once).
  const noisyStart = Date.now();
  await mapLimit(noisy, 8, (n, i) => {
    const kind = kindOf(i);
    return applyRaw(
      cp.admin,
      application(n, 'noisy', kind === 'bomb' ? bomb.url : repo.url, kind === 'bomb' ? 'bomb' : `noisy/${kind}`),
    );
  });
  for (;;) {
    const st = await statuses('noisy');
    if (noisy.every((n) => st.get(n)?.reconciledAt !== undefined)) break;
    if (Date.now() - noisyStart > 900_000) throw new Error('the noisy Applications were not all compared in 900 s');
    await sleep(1000);
  }
  console.log(
    `the noisy tenant's ${flags.noisy} Applications all compared after ${seconds(Date.now() - noisyStart)} s`,
  );
  const withNoisy: number[] = [];
  const w2 = await quietWait();
  for (let i = 0; i < flags.trials; i++) withNoisy.push(...(await trial([...quiet, ...noisy])));
  const w3 = await quietWait();
  const withRss = {
    controller: sample(controller.pid).peakRss,
    renderer: Math.max(0, ...renderers().map((p) => sample(p).peakRss)),
  };
  const st = await statuses('noisy');
  const noisyStates: Record<string, number> = {};
  for (const [i, n] of noisy.entries()) {
    const s = st.get(n);
    const k = `${kindOf(i)}: ${s?.sync?.status ?? 'none'}`;
    noisyStates[k] = (noisyStates[k] ?? 0) + 1;
  }

  const row = (label: string, a: number, b: number) => [label, seconds(a), seconds(b), `${fixed(b / a, 2)}×`];
  table(
    `Quiet tenants, Git change → Synced (${alone.length} samples each: ${QUIET} Applications × ${flags.trials} commits)`,
    ['', 'without noisy (s)', `with noisy, ${flags.noisy} apps (s)`, 'with / without'],
    [
      row('p50', percentile(alone, 50), percentile(withNoisy, 50)),
      row('p95', percentile(alone, 95), percentile(withNoisy, 95)),
      row('max', percentile(alone, 100), percentile(withNoisy, 100)),
    ],
  );
  const meanWait = (a: { seconds: number; takes: number }, b: { seconds: number; takes: number }) =>
    b.takes > a.takes ? ((b.seconds - a.seconds) / (b.takes - a.takes)) * 1000 : Number.NaN;
  const aloneWait = meanWait(w0, w1);
  const withWait = meanWait(w2, w3);
  table(
    "Quiet tenants' mean wait in the refresh and operation queues per key taken (the fair share's part)",
    ['', 'without noisy (ms)', 'with noisy (ms)', 'with / without'],
    [['mean wait', fixed(aloneWait), fixed(withWait), `${fixed(withWait / aloneWait, 2)}×`]],
  );
  table(
    'Peak RSS (VmHWM), MiB',
    ['process', 'after the quiet half', 'after the noisy half'],
    [
      [
        `controller (\`impersync run\`; limit ${flags['memory-limit-mib']} MiB)`,
        mib(aloneRss.controller),
        mib(withRss.controller),
      ],
      [
        `its child renderer (limit ${flags['renderer-memory-limit-mib']} MiB)`,
        mib(aloneRss.renderer),
        mib(withRss.renderer),
      ],
    ],
  );
  console.log(`\nthe noisy Applications at the end (kind: sync status): ${JSON.stringify(noisyStates)}`);
  for (const l of controller.lines
    .filter(
      (l) => l.includes('memory budget of') || l.includes('MemoryBudget') || l.includes('waiting for memory budget'),
    )
    .slice(0, 6))
    console.log(l.slice(0, 600));
} finally {
  for (const s of stops.reverse())
    await s().catch((err: unknown) => console.error(`cleanup: ${(err as Error).message}`));
}
