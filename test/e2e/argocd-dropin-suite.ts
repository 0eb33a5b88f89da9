// The drop-in suite: impersync's controller in the place of Argo CD's application controller, and
// Argo CD v3.6.1's own argocd-server, argocd-repo-server and `argocd` CLI on the same control plane
// and the same Redis, as an install that scaled argocd-application-controller to zero has them.
// Every `argocd` command here is one a user of Argo CD types; each test says what Argo CD's
// controller would have given. Run by argocd-dropin-impersync-crd.test.ts (impersync's CRD, with a
// status subresource) and argocd-dropin-argocd-crd.test.ts (Argo CD's CRDs as installed, without).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { applyRaw, getRaw, grantRole, request, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { installArgoCDCrds, runTrigger, startArgoCD } from '../support/argocd.ts';
import type { ArgoCD, CrdShape } from '../support/argocd.ts';
import { startRedis } from '../support/redis.ts';
import type { TestRedis } from '../support/redis.ts';
import { until } from '../support/faults.ts';
import {
  EVERY_DESTINATION_AS_DEPLOYER,
  IN_CLUSTER,
  NS,
  application,
  deployer,
  getApp,
  grantControllerRights,
  heldWaveFiles,
  operationPhase,
  project,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

type App = Awaited<ReturnType<typeof getApp>>;
type OperationState = {
  phase?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  syncResult?: { revision?: string };
};
const opState = (a: App) => a.status?.['operationState'] as OperationState | undefined;
const syncOf = (a: App) => a.status?.['sync'] as { status?: string; revision?: string } | undefined;
const healthOf = (a: App) => a.status?.['health'] as { status?: string; lastTransitionTime?: string } | undefined;
const historyOf = (a: App) => (a.status?.['history'] ?? []) as Array<{ id: number; revision: string }>;
const annotationsOf = (a: App) =>
  ((a['metadata'] as { annotations?: Record<string, string> }).annotations ?? {}) as Record<string, string>;

/** A Deployment whose pod runs on the kwok node, a ConfigMap and a Service. Path `guestbook`. */
const GUESTBOOK: Record<string, string> = {
  'guestbook/deployment.yaml': [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata: {name: web}',
    'spec:',
    '  replicas: 1',
    '  selector: {matchLabels: {app: web}}',
    '  template:',
    '    metadata: {labels: {app: web}}',
    '    spec: {automountServiceAccountToken: false, containers: [{name: web, image: nginx:1.27}]}',
  ].join('\n'),
  'guestbook/configmap.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guestbook-config\ndata:\n  greeting: hello\n',
  'guestbook/service.yaml':
    'apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n  selector:\n    app: web\n',
};

const settingsConfigMap = (value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  value: "${value}"\n`;

/** A pod that ends Failed on the kwok node (its command exits 1): Degraded in Argo CD's health. */
const BROKEN =
  'apiVersion: v1\nkind: Pod\nmetadata:\n  name: crash\nspec:\n  restartPolicy: Never\n  automountServiceAccountToken: false\n  containers:\n  - name: c\n    image: busybox\n    command: [sh, -c, "exit 1"]\n';

/** A PreSync hook pod that ends Failed: the sync fails. */
const FAILING_HOOK =
  'apiVersion: v1\nkind: Pod\nmetadata:\n  name: migrate\n  annotations:\n    argocd.argoproj.io/hook: PreSync\nspec:\n  restartPolicy: Never\n  automountServiceAccountToken: false\n  containers:\n  - name: c\n    image: busybox\n    command: [sh, -c, "exit 1"]\n';

function childApplication(repoURL: string): string {
  return [
    'apiVersion: argoproj.io/v1alpha1',
    'kind: Application',
    'metadata:',
    '  name: child',
    `  namespace: ${NS}`,
    'spec:',
    '  project: tenant',
    `  source: {repoURL: "${repoURL}", targetRevision: HEAD, path: child}`,
    `  destination: {server: "${IN_CLUSTER}", namespace: child}`,
    '  syncPolicy: {automated: {prune: true}}',
  ].join('\n');
}

const PART_OF = { 'app.kubernetes.io/part-of': 'argocd' };
const NAMESPACES = ['guestbook', 'manual', 'held', 'broken', 'hookfail', 'child'];

export function dropinSuite(shape: CrdShape): void {
  let cp: TestControlPlane;
  let redis: TestRedis;
  let fx: Fixture;
  let argocd: ArgoCD;
  let firstRevision = '';

  /** A failure message with what Argo CD's processes logged. */
  const withLogs = async (what: string) => `${what}\n${argocd ? await argocd.logs() : ''}`;
  const app = (name: string) => getApp(cp, name);
  const dest = (namespace: string) => ({ server: IN_CLUSTER, namespace });

  before(async () => {
    cp = await startControlPlane(shape === 'argocd' ? { nodes: 1, crds: false } : { nodes: 1 });
    await installArgoCDCrds(cp, shape);
    await grantControllerRights(cp);
    // Argo CD reads only settings labelled as its own (app.kubernetes.io/part-of: argocd).
    await applyRaw(
      cp.admin,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'argocd-cm', namespace: NS, labels: PART_OF },
        data: { 'application.sync.impersonation.enabled': 'true' },
      },
      { force: true },
    );
    // Argo CD's server reads these as an install has them; the secret key signs its sessions.
    await applyRaw(cp.admin, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'argocd-secret', namespace: NS, labels: PART_OF },
      stringData: { 'server.secretkey': 'drop-in-test-key' },
    });
    await applyRaw(cp.admin, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-rbac-cm', namespace: NS, labels: PART_OF },
      data: { 'policy.default': 'role:admin' },
    });
    await applyRaw(cp.admin, project('tenant', EVERY_DESTINATION_AS_DEPLOYER));
    for (const ns of NAMESPACES) await deployer(cp, ns, 'deployer');
    // The app of apps writes Applications into Argo CD's namespace, as its project's ServiceAccount
    // there, which may write Applications and nothing else.
    await applyRaw(cp.admin, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'deployer', namespace: NS },
    });
    await grantRole(cp.admin, {
      name: 'deployer-applications',
      namespace: NS,
      to: { serviceAccount: 'deployer', namespace: NS },
      rules: [{ apiGroups: ['argoproj.io'], resources: ['applications'], verbs: ['*'] }],
    });
    redis = await startRedis();
    // Argo CD's controller finds Redis in argocd-cmd-params-cm (redis.server); so does impersync.
    await applyRaw(cp.admin, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-cmd-params-cm', namespace: NS, labels: PART_OF },
      data: { 'redis.server': redis.address },
    });
    argocd = await startArgoCD(cp, { redis });
    fx = await startFixture(
      cp,
      { ...GUESTBOOK, 'manual/settings.yaml': settingsConfigMap('one') },
      { waitTimeoutMs: 120_000 },
    );
  });

  after(async () => {
    await fx?.stop();
    await argocd?.stop();
    await redis?.stop();
    await cp?.stop();
  });

  test(`[${shape} CRD] argocd app get shows the sync and health impersync wrote`, async () => {
    await applyRaw(
      cp.admin,
      application('guestbook', fx.repo.url, { project: 'tenant', path: 'guestbook', destination: dest('guestbook') }),
    );
    const synced = await waitForApp(
      cp,
      'guestbook',
      'Synced and Healthy after its automated sync',
      (a) => syncOf(a)?.status === 'Synced' && healthOf(a)?.status === 'Healthy' && operationPhase(a) === 'Succeeded',
      120_000,
    ).catch(async (err: Error) => assert.fail(await withLogs(`${err.message}\n${fx.logs.slice(-40).join('')}`)));
    firstRevision = syncOf(synced)?.revision ?? '';
    const out = await argocd.cliOk(['app', 'get', 'guestbook']);
    assert.match(out, new RegExp(`Sync Status:\\s+Synced to HEAD \\(${firstRevision.slice(0, 7)}\\)`), out);
    assert.match(out, /Health Status:\s+Healthy/, out);
    // The resources table comes from status.resources: every managed object, Synced and Healthy.
    for (const [kind, name] of [
      ['Deployment', 'web'],
      ['ConfigMap', 'guestbook-config'],
      ['Service', 'web'],
    ] as const)
      assert.match(out, new RegExp(`${kind}\\s+guestbook\\s+${name}\\s+Synced`), out);
    const json = JSON.parse(await argocd.cliOk(['app', 'get', 'guestbook', '-o', 'json'])) as App;
    assert.equal(syncOf(json)?.status, 'Synced');
    assert.equal(healthOf(json)?.status, 'Healthy');
  });

  test(`[${shape} CRD] argocd app resources shows the tree with the Deployment's ReplicaSet and Pod`, async () => {
    // The tree is Argo CD's Redis cache that impersync fills; the Pod runs on the kwok node.
    let out = '';
    await until(
      'the tree to hold the Pod',
      async () => {
        const r = await argocd.cli(['app', 'resources', 'guestbook', '--output', 'tree']);
        out = `${r.code}\n${r.stdout}\n${r.stderr}`;
        return r.code === 0 && /Pod/.test(r.stdout);
      },
      60_000,
    ).catch(async (err: Error) => assert.fail(await withLogs(`${err.message}\nlast answer: ${out}`)));
    assert.match(out, /Deployment\s+guestbook\s+web/, out);
    assert.match(out, /ReplicaSet\s+guestbook\s+web-[a-z0-9]+/, out);
    // The Pod is the ReplicaSet's child, one level deeper in the tree.
    assert.match(out, /[│ ]+└─\s*Pod\s+guestbook\s+web-[a-z0-9]+-[a-z0-9]+\s+No/, out);
    assert.match(out, /ConfigMap\s+guestbook\s+guestbook-config/, out);
    const flat = await argocd.cliOk(['app', 'resources', 'guestbook']);
    assert.match(flat, /Service\s+guestbook\s+web\s+No/, flat);
  });

  test(`[${shape} CRD] argocd cluster list shows the destination cluster's state from impersync's cache`, async () => {
    let out = '';
    await until(
      'the in-cluster destination Successful',
      async () => {
        const r = await argocd.cli(['cluster', 'list']);
        out = `${r.code}\n${r.stdout}\n${r.stderr}`;
        return r.code === 0 && /Successful/.test(r.stdout);
      },
      60_000,
    ).catch(async (err: Error) => assert.fail(await withLogs(`${err.message}\nlast answer: ${out}`)));
    // The API server's version as Argo CD v3.6's controller reports it (gitops-engine: "v" + major.minor.patch).
    assert.match(
      out,
      new RegExp(`${IN_CLUSTER.replace(/[.]/g, '\\.')}\\s+in-cluster\\s+v1\\.34\\.\\d+\\s+Successful`),
      out,
    );
  });

  test(`[${shape} CRD] the notifications catalog's triggers fire on the status of a deployed Application`, async () => {
    const fired = async (trigger: string) => (await runTrigger(argocd, trigger, 'guestbook')).every(Boolean);
    assert.equal(await fired('on-created'), true);
    // on-deployed parses health.lastTransitionTime and the operation's times.
    assert.equal(await fired('on-deployed'), true, 'on-deployed');
    assert.equal(await fired('on-sync-succeeded'), true, 'on-sync-succeeded');
    assert.equal(await fired('on-sync-running'), false, 'on-sync-running');
    assert.equal(await fired('on-sync-failed'), false, 'on-sync-failed');
    assert.equal(await fired('on-health-degraded'), false, 'on-health-degraded');
    assert.equal(await fired('on-sync-status-unknown'), false, 'on-sync-status-unknown');
  });

  test(`[${shape} CRD] argocd app diff: nothing in sync (exit 0), then a live edit's diff (exit 1)`, async () => {
    const clean = await argocd.cli(['app', 'diff', 'guestbook']);
    assert.equal(clean.code, 0, await withLogs(`in sync, no diff expected:\n${clean.stdout}\n${clean.stderr}`));
    assert.equal(clean.stdout.trim(), '');
    const res = await request(cp.admin, {
      method: 'PATCH',
      path: '/api/v1/namespaces/guestbook/configmaps/guestbook-config',
      body: { data: { greeting: 'edited-live' } },
      contentType: 'application/merge-patch+json',
    });
    assert.equal(res.status, 200, res.text);
    // No self-heal: the edit stays, the Application is OutOfSync.
    await waitForApp(cp, 'guestbook', 'OutOfSync after the live edit', (a) => syncOf(a)?.status === 'OutOfSync');
    const diff = await argocd.cli(['app', 'diff', 'guestbook', '--refresh']);
    assert.equal(diff.code, 1, await withLogs(`a diff expected:\n${diff.stdout}\n${diff.stderr}`));
    assert.match(diff.stdout, /===== \/ConfigMap guestbook\/guestbook-config ======/, diff.stdout);
    assert.match(diff.stdout, /<\s+greeting: edited-live/, diff.stdout);
    assert.match(diff.stdout, />\s+greeting: hello/, diff.stdout);
    assert.doesNotMatch(diff.stdout, /Deployment|Service/, 'only the edited object differs');
    // The live manifests the UI shows come from the same cache.
    const live = await argocd.cliOk(['app', 'manifests', 'guestbook', '--source', 'live']);
    assert.match(live, /name: guestbook-config/, live);
    assert.match(live, /greeting: edited-live/, live);
    // A sync from the CLI repairs it.
    const synced = await argocd.cliOk(['app', 'sync', 'guestbook', '--timeout', '120']);
    assert.match(synced, /Phase:\s+Succeeded/, synced);
    const after = await argocd.cli(['app', 'diff', 'guestbook', '--refresh']);
    assert.equal(after.code, 0, `${after.stdout}\n${after.stderr}`);
  });

  test(`[${shape} CRD] argocd app get --refresh waits for impersync to take the refresh annotation away`, async () => {
    const before = (await app('guestbook')).status?.['reconciledAt'] as string;
    await new Promise((r) => setTimeout(r, 1100)); // reconciledAt has a resolution of one second
    const r = await argocd.cli(['app', 'get', 'guestbook', '--refresh'], { timeoutMs: 90_000 });
    assert.equal(r.code, 0, await withLogs(`${r.stdout}\n${r.stderr}`));
    assert.equal(
      annotationsOf(await app('guestbook'))['argocd.argoproj.io/refresh'],
      undefined,
      'the annotation is gone',
    );
    // Argo CD's controller writes reconciledAt with every refresh it makes.
    let seen: unknown;
    await until(
      `reconciledAt later than ${before}`,
      async () => {
        const a = await app('guestbook');
        seen = { reconciledAt: a.status?.['reconciledAt'], annotations: annotationsOf(a) };
        return Date.parse(a.status?.['reconciledAt'] as string) > Date.parse(before);
      },
      15_000,
      () => `last seen: ${JSON.stringify(seen)}`,
    );
  });

  test(`[${shape} CRD] argocd app sync and app wait on an Application without automated sync`, async () => {
    await applyRaw(
      cp.admin,
      application('manual', fx.repo.url, {
        project: 'tenant',
        path: 'manual',
        destination: dest('manual'),
        automated: false,
      }),
    );
    await waitForApp(cp, 'manual', 'OutOfSync, never synced', (a) => syncOf(a)?.status === 'OutOfSync');
    const out = await argocd.cliOk(['app', 'sync', 'manual', '--timeout', '120']);
    assert.match(out, /Operation:\s+Sync/, out);
    assert.match(out, /Phase:\s+Succeeded/, out);
    assert.match(out, /ConfigMap\s+manual\s+settings\s+Synced/, out);
    const waited = await argocd.cliOk(['app', 'wait', 'manual', '--sync', '--health', '--timeout', '60']);
    assert.match(waited, /Sync Status:\s+Synced/, waited);
    // Again, with nothing to change: the comparison after it finds nothing new and is written all
    // the same, or the CLI would wait for it until its timeout.
    const again = await argocd.cli(['app', 'sync', 'manual', '--timeout', '30'], { timeoutMs: 60_000 });
    assert.equal(again.code, 0, await withLogs(`${again.stdout}\n${again.stderr}`));
    assert.match(again.stdout, /Phase:\s+Succeeded/, again.stdout);
    assert.match(again.stdout, /ConfigMap\s+manual\s+settings\s+Synced/, again.stdout);
    const live = await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings', namespace: 'manual' });
    assert.equal((live?.['data'] as Record<string, string>)['value'], 'one');
  });

  test(`[${shape} CRD] argocd app get --hard-refresh sees a new commit at once`, async () => {
    const second = await fx.repo.commit({ 'manual/settings.yaml': settingsConfigMap('two') }, 'two');
    const r = await argocd.cli(['app', 'get', 'manual', '--hard-refresh'], { timeoutMs: 90_000 });
    assert.equal(r.code, 0, await withLogs(`${r.stdout}\n${r.stderr}`));
    assert.match(r.stdout, new RegExp(`Sync Status:\\s+OutOfSync from HEAD \\(${second.slice(0, 7)}\\)`), r.stdout);
    assert.equal(annotationsOf(await app('manual'))['argocd.argoproj.io/refresh'], undefined);
  });

  test(`[${shape} CRD] argocd app history lists the syncs and app rollback returns to the first`, async () => {
    await argocd.cliOk(['app', 'sync', 'manual', '--timeout', '120']);
    const synced = await app('manual');
    const history = historyOf(synced);
    assert.equal(history.length, 3, JSON.stringify(history)); // two syncs of the first commit, one of the second
    const out = await argocd.cliOk(['app', 'history', 'manual']);
    assert.match(out, new RegExp(`SOURCE\\s+${fx.repo.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), out);
    for (const h of history)
      assert.match(out, new RegExp(`^${h.id}\\s+.*HEAD \\(${h.revision.slice(0, 7)}\\)`, 'm'), out);
    const first = history[0]!;
    const rolled = await argocd.cliOk(['app', 'rollback', 'manual', String(first.id), '--timeout', '120']);
    assert.match(rolled, /Phase:\s+Succeeded/, rolled);
    const live = await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings', namespace: 'manual' });
    assert.equal((live?.['data'] as Record<string, string>)['value'], 'one', 'the first revision is live again');
    const after = await app('manual');
    assert.equal(opState(after)?.syncResult?.revision, first.revision);
    assert.equal(historyOf(after).length, 4);
    // HEAD says "two" again: OutOfSync, as Argo CD shows an Application rolled back.
    await waitForApp(cp, 'manual', 'OutOfSync after the rollback', (a) => syncOf(a)?.status === 'OutOfSync');
  });

  test(`[${shape} CRD] argocd app terminate-op ends a sync waiting on a wave's health`, async () => {
    await fx.repo.commit(heldWaveFiles(), 'held');
    await applyRaw(
      cp.admin,
      application('held', fx.repo.url, {
        project: 'tenant',
        path: 'held',
        destination: dest('held'),
        automated: false,
      }),
    );
    // Its path came in a commit after impersync last resolved HEAD: a hard refresh, as a user would.
    await argocd.cliOk(['app', 'get', 'held', '--hard-refresh']);
    await waitForApp(cp, 'held', 'compared', (a) => syncOf(a)?.status === 'OutOfSync');
    const started = await argocd.cliOk(['app', 'sync', 'held', '--async']);
    assert.doesNotMatch(started, /Phase:\s+Failed/, started);
    await waitForApp(
      cp,
      'held',
      'the sync Running, waiting on the LoadBalancer',
      (a) => operationPhase(a) === 'Running',
    );
    assert.deepEqual(await runTrigger(argocd, 'on-sync-running', 'held'), [true], 'on-sync-running while it runs');
    const out = await argocd.cliOk(['app', 'terminate-op', 'held']);
    assert.match(out, /Application 'held' operation terminating/, out);
    const ended = await waitForApp(
      cp,
      'held',
      'the operation terminated',
      (a) => operationPhase(a) === 'Failed',
      60_000,
    ).catch(async (err: Error) => assert.fail(await withLogs(err.message)));
    assert.equal(opState(ended)?.message, 'Operation terminated');
    assert.equal(
      await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'later', namespace: 'held' }),
      undefined,
      'wave 1 never applied',
    );
    assert.deepEqual(await runTrigger(argocd, 'on-sync-failed', 'held'), [true], 'on-sync-failed once terminated');
    const again = await argocd.cli(['app', 'terminate-op', 'held']);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /No operation is in progress/, again.stderr);
  });

  test(`[${shape} CRD] a failed sync and a degraded Application: argocd app get and the catalog's triggers`, async () => {
    await fx.repo.commit({
      'broken/pod.yaml': BROKEN,
      'hookfail/hook.yaml': FAILING_HOOK,
      'hookfail/cm.yaml': settingsConfigMap('x'),
    });
    await applyRaw(
      cp.admin,
      application('broken', fx.repo.url, { project: 'tenant', path: 'broken', destination: dest('broken') }),
    );
    await applyRaw(
      cp.admin,
      application('hookfail', fx.repo.url, { project: 'tenant', path: 'hookfail', destination: dest('hookfail') }),
    );
    await argocd.cliOk(['app', 'get', 'broken', '--hard-refresh']);
    await argocd.cliOk(['app', 'get', 'hookfail', '--hard-refresh']);
    await waitForApp(cp, 'broken', 'Degraded', (a) => healthOf(a)?.status === 'Degraded', 90_000);
    const out = await argocd.cliOk(['app', 'get', 'broken']);
    assert.match(out, /Health Status:\s+Degraded/, out);
    assert.deepEqual(await runTrigger(argocd, 'on-health-degraded', 'broken'), [true]);
    assert.deepEqual(await runTrigger(argocd, 'on-deployed', 'broken'), [false], 'not healthy: not deployed');
    await waitForApp(cp, 'hookfail', 'the hook failed the sync', (a) => operationPhase(a) === 'Failed', 90_000);
    assert.deepEqual(await runTrigger(argocd, 'on-sync-failed', 'hookfail'), [true]);
    assert.deepEqual(await runTrigger(argocd, 'on-sync-succeeded', 'hookfail'), [false]);
    const shown = await argocd.cliOk(['app', 'get', 'hookfail', '--show-operation']);
    assert.match(shown, /Phase:\s+Failed/, shown);
  });

  test(`[${shape} CRD] an app of apps: the parent syncs an Application, which impersync then syncs`, async () => {
    await fx.repo.commit({
      'apps/child.yaml': childApplication(fx.repo.url),
      'child/configmap.yaml': settingsConfigMap('child'),
    });
    await applyRaw(
      cp.admin,
      application('parent', fx.repo.url, { project: 'tenant', path: 'apps', destination: dest(NS) }),
    );
    await argocd.cliOk(['app', 'get', 'parent', '--hard-refresh']);
    await waitForApp(
      cp,
      'child',
      'the child, written by the parent, Synced',
      (a) => syncOf(a)?.status === 'Synced' && operationPhase(a) === 'Succeeded',
      120_000,
    ).catch(async (err: Error) =>
      assert.fail(
        await withLogs(
          `${err.message}\n${JSON.stringify((await app('parent').catch(() => undefined))?.status ?? {}).slice(0, 3000)}`,
        ),
      ),
    );
    await waitForApp(
      cp,
      'parent',
      'Synced and Healthy',
      (a) => syncOf(a)?.status === 'Synced' && healthOf(a)?.status === 'Healthy',
    );
    const parent = await argocd.cliOk(['app', 'get', 'parent']);
    assert.match(parent, /Sync Status:\s+Synced/, parent);
    assert.match(parent, new RegExp(`argoproj.io\\s+Application\\s+${NS}\\s+child\\s+Synced`), parent);
    const child = await argocd.cliOk(['app', 'get', 'child']);
    assert.match(child, /Sync Status:\s+Synced/, child);
    assert.match(child, /Health Status:\s+Healthy/, child);
    const list = await argocd.cliOk(['app', 'list', '-o', 'name']);
    for (const name of ['parent', 'child', 'guestbook']) assert.match(list, new RegExp(`^${NS}/${name}$`, 'm'), list);
    const tree = await argocd.cliOk(['app', 'resources', 'parent']);
    assert.match(tree, new RegExp(`argoproj.io\\s+Application\\s+${NS}\\s+child`), tree);
  });
}
