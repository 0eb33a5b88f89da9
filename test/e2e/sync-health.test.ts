// Health on real controller behaviour: a control plane with a kwok node, where kube-scheduler
// places pods, kwok runs them, and kube-controller-manager's Deployment and Job controllers do the
// rest. Waves wait for Deployments to become Available, hook Jobs complete or fail as their pods
// do, and a custom resource assessed by an argocd-cm Lua check holds its wave until it is Ready.
// Every request is the ServiceAccount's, through one impersonating client.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { IN_CLUSTER } from '../../src/api/index.ts';
import { DestinationClientFactory } from '../../src/kube/factory.ts';
import type { DestinationClient } from '../../src/kube/types.ts';
import type { HealthAssessor } from '../../src/sync/index.ts';
import { LuaRunner, compare, createHealthAssessor, readHealthCustomizations } from '../../src/sync/index.ts';
import { sync, type SyncOptions } from './sync-driver.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  applyRaw,
  createNamespace,
  createServiceAccount,
  getRaw,
  grantImpersonation,
  grantRole,
  labelNode,
  request,
  startControlPlane,
  userNameOf,
  madeForTest,
  WIDGET_CRD,
} from '../support/index.ts';

const ns = 'orders';
const saUser = userNameOf({ serviceAccount: 'deployer', namespace: ns });
let cp: TestControlPlane;
let factory: DestinationClientFactory;
let client: DestinationClient;
const runner = new LuaRunner();
let health: HealthAssessor;

/** Argo CD-style check for the test's Widget kind: Ready, Failed, or still on its way. */
const WIDGET_CHECK = `
hs = { status = "Progressing", message = "Waiting for the widget" }
if obj.status ~= nil then
  if obj.status.phase == "Ready" then hs.status = "Healthy"; hs.message = "widget ready" end
  if obj.status.phase == "Failed" then hs.status = "Degraded"; hs.message = obj.status.reason end
end
return hs`;

const opts = (appName: string, extra: Partial<SyncOptions> = {}): SyncOptions => ({
  appName,
  namespace: ns,
  pollIntervalMs: 200,
  waitTimeoutMs: 60_000,
  health,
  ...extra,
});
const cm = (name: string, wave: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, annotations: { 'argocd.argoproj.io/sync-wave': wave } },
  data: { a: '1' },
});
const deployment = (name: string, spec: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { automountServiceAccountToken: false, containers: [{ name: 'web', image: 'nginx' }] },
    },
    ...spec,
  },
});
const job = (name: string, command: string, annotations: Record<string, string>): KubeObject => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name, annotations },
  spec: {
    backoffLimit: 0,
    template: {
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', command] }],
      },
    },
  },
});
const widget = (name: string, wave = '0'): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name, annotations: { 'argocd.argoproj.io/sync-wave': wave } },
  spec: { size: 1 },
});
const live = (apiVersion: string, kind: string, name: string) =>
  getRaw(cp.admin, { apiVersion, kind, name, namespace: ns });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, fn: () => Promise<T | undefined | null>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await fn();
    if (v !== undefined && v !== null) return v;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}
async function setWidgetStatus(name: string, status: Record<string, unknown>): Promise<void> {
  const res = await request(cp.admin, {
    method: 'PATCH',
    path: `/apis/example.com/v1/namespaces/${ns}/widgets/${name}`,
    body: { status },
    contentType: 'application/merge-patch+json',
  });
  assert.equal(res.status, 200, res.text);
}

before(async () => {
  cp = await startControlPlane({ nodes: 1 });
  await createNamespace(cp.admin, ns);
  await createServiceAccount(cp.admin, ns, 'deployer');
  const to = { serviceAccount: 'deployer', namespace: ns };
  await grantRole(cp.admin, {
    name: 'deployer',
    namespace: ns,
    to,
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  await grantImpersonation(cp.admin, {
    name: 'impersync-impersonate',
    serviceAccounts: [{ namespace: ns, name: 'deployer' }],
  });
  // The Widget kind is installed by the cluster's admin; the tenant only creates Widgets.
  await applyRaw(cp.admin, WIDGET_CRD);
  await until('the default ServiceAccount', () => live('v1', 'ServiceAccount', 'default'));
  await until('the Widget kind to be served', async () => {
    const res = await request(cp.admin, { path: '/apis/example.com/v1' });
    return res.status === 200 ? true : undefined;
  });
  health = createHealthAssessor({
    customizations: readHealthCustomizations({ 'resource.customizations.health.example.com_Widget': WIDGET_CHECK }),
    runner,
  });
  factory = await DestinationClientFactory.fromKubeConfig({ kubeconfig: cp.controllerKubeconfigPath });
  client = factory.forIdentity(IN_CLUSTER, { impersonate: saUser }, madeForTest('sync-health'));
});

after(async () => {
  await runner.close();
  await factory?.close();
  await cp?.stop();
});

test('a wave waits until its Deployment is Available: pods scheduled and run by the kwok node', async () => {
  // The pods can only be placed on a node labelled web=ready, a label the test adds once the sync
  // says it waits: however fast the node is, the wave has to wait for the Deployment.
  const web = deployment('web');
  const template = (web['spec'] as { template: { spec: Record<string, unknown> } }).template;
  template.spec['nodeSelector'] = { web: 'ready' };
  const progress: string[] = [];
  let released: Promise<unknown> | undefined;
  const result = await sync(client, [cm('after-web', '1'), web], [], {
    ...opts('web-app'),
    onProgress: (m) => {
      progress.push(m);
      released ??= (async () => {
        const next = await live('v1', 'ConfigMap', 'after-web');
        await labelNode(cp.admin, 0, { web: 'ready' });
        return next;
      })();
    },
  });
  assert.equal(result.phase, 'Succeeded', result.message);
  assert.equal(progress[0], 'waiting for healthy state of apps/Deployment/web', JSON.stringify(progress));
  assert.equal(await released, undefined, 'the next wave was not applied while the Deployment was not Available');
  const got = (await live('apps/v1', 'Deployment', 'web')) as { status?: { availableReplicas?: number } };
  assert.equal(got.status?.availableReplicas, 2, 'both replicas run');
  assert.ok(await live('v1', 'ConfigMap', 'after-web'), 'the next wave ran once it was');
  const after = await compare(client, [web], [], opts('web-app'));
  assert.deepEqual(after.resources[0]?.health, { status: 'Healthy' });
});

test('a Deployment whose pods can never be placed exceeds its progress deadline: Degraded, the sync fails', async () => {
  const stuck = deployment('stuck', {
    replicas: 1,
    progressDeadlineSeconds: 2,
    template: {
      metadata: { labels: { app: 'stuck' } },
      spec: { nodeSelector: { disk: 'nowhere' }, containers: [{ name: 'web', image: 'nginx' }] },
    },
  });
  const result = await sync(client, [stuck, cm('after-stuck', '1')], [], opts('stuck-app'));
  assert.equal(result.phase, 'Failed');
  assert.equal(result.message, 'one or more synchronization tasks completed unsuccessfully');
  assert.deepEqual(
    result.resources.map((r) => [r.kind, r.name, r.hookPhase, r.message]),
    [['Deployment', 'stuck', 'Failed', 'Deployment "stuck" exceeded its progress deadline']],
  );
  assert.equal(await live('v1', 'ConfigMap', 'after-stuck'), undefined, 'the next wave never ran');
});

test('PreSync and PostSync hook Jobs run to completion on the node, around the Sync phase', async () => {
  const hook = (phase: string) => ({ 'argocd.argoproj.io/hook': phase });
  const result = await sync(
    client,
    [
      job('migrate', 'echo migrating', hook('PreSync')),
      cm('app-config', '0'),
      job('smoke', 'exit 0', hook('PostSync')),
    ],
    [],
    opts('hooks-app'),
  );
  assert.equal(result.phase, 'Succeeded', result.message);
  assert.deepEqual(
    result.resources.map((r) => [r.syncPhase, r.kind, r.name, r.hookPhase]),
    [
      ['PreSync', 'Job', 'migrate', 'Succeeded'],
      ['Sync', 'ConfigMap', 'app-config', 'Succeeded'],
      ['PostSync', 'Job', 'smoke', 'Succeeded'],
    ],
  );
  const migrate = (await live('batch/v1', 'Job', 'migrate')) as { status?: { succeeded?: number } };
  assert.equal(migrate.status?.succeeded, 1);
});

test('a PreSync Job whose pod exits 3 fails the sync; the SyncFail Job runs and completes', async () => {
  const result = await sync(
    client,
    [
      job('bad-migrate', 'echo no; exit 3', { 'argocd.argoproj.io/hook': 'PreSync' }),
      cm('never', '0'),
      job('cleanup', 'exit 0', { 'argocd.argoproj.io/hook': 'SyncFail' }),
    ],
    [],
    opts('failing-app'),
  );
  assert.equal(result.phase, 'Failed');
  assert.equal(result.message, 'one or more synchronization tasks completed unsuccessfully');
  assert.deepEqual(
    result.resources.map((r) => [r.name, r.hookType, r.hookPhase, r.message]),
    [
      ['bad-migrate', 'PreSync', 'Failed', 'Job has reached the specified backoff limit'],
      // The Job controller's own words on its Complete condition.
      ['cleanup', 'SyncFail', 'Succeeded', 'Reached expected number of succeeded pods'],
    ],
  );
  assert.equal(await live('v1', 'ConfigMap', 'never'), undefined);
  const cleanup = (await live('batch/v1', 'Job', 'cleanup')) as { status?: { succeeded?: number } };
  assert.equal(cleanup.status?.succeeded, 1);
});

test('a wave waits for a custom resource assessed by an argocd-cm Lua check, until the check says Healthy', async () => {
  const running = sync(client, [widget('gadget'), cm('after-gadget', '1')], [], opts('widget-app'));
  await until('the Widget', () => live('example.com/v1', 'Widget', 'gadget'));
  await sleep(1500);
  assert.equal(
    await live('v1', 'ConfigMap', 'after-gadget'),
    undefined,
    'wave 1 waits while the check says Progressing',
  );
  const waiting = await compare(client, [widget('gadget')], [], opts('widget-app'));
  assert.deepEqual(waiting.resources[0]?.health, { status: 'Progressing', message: 'Waiting for the widget' });
  // No kwok stage plays a Widget's controller: the test is that controller.
  await setWidgetStatus('gadget', { phase: 'Ready' });
  const result = await running;
  assert.equal(result.phase, 'Succeeded', result.message);
  assert.ok(await live('v1', 'ConfigMap', 'after-gadget'));
});

test('the aggregate over real objects: a failed Widget degrades the Application and is named as the cause', async () => {
  const desired = [deployment('shop'), widget('broken')];
  const result = await sync(client, desired, [], opts('agg-app'));
  assert.equal(result.phase, 'Succeeded', 'the last wave is applied, not waited for (as Argo CD)');
  await setWidgetStatus('broken', { phase: 'Failed', reason: 'the widget factory is closed' });
  const cmp = await until('the Deployment to be Available', async () => {
    const c = await compare(client, desired, [], opts('agg-app'));
    return c.resources[0]?.health?.status === 'Healthy' ? c : undefined;
  });
  assert.deepEqual(
    cmp.resources.map((r) => [r.kind, r.health?.status, r.health?.message]),
    [
      ['Deployment', 'Healthy', undefined],
      ['Widget', 'Degraded', 'the widget factory is closed'],
    ],
  );
  assert.deepEqual(cmp.health, { status: 'Degraded', message: `Caused by example.com/Widget:${ns}/broken` });
});
