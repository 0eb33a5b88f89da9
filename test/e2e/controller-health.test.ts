// Application health through the running controller, on a control plane with a kwok node: a
// Deployment's Application is Progressing while its pods start and Healthy once they run; an
// argocd-cm Lua check makes a custom resource's health count, so a failed one degrades its
// Application, names it as the cause, and a wave waits for it; a check that fails is a
// ComparisonError in Argo CD's words.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { applyRaw, getRaw, request, startControlPlane, WIDGET_CRD } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  IN_CLUSTER,
  application,
  condition,
  deployer,
  getApp,
  grantControllerRights,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

const WIDGET_CHECK = [
  'hs = { status = "Progressing", message = "Waiting for the widget" }',
  'if obj.status ~= nil and obj.status.phase == "Ready" then hs.status = "Healthy"; hs.message = "ready" end',
  'if obj.status ~= nil and obj.status.phase == "Failed" then hs.status = "Degraded"; hs.message = obj.status.reason end',
  'return hs',
].join('\n');

const files: Record<string, string> = {
  'web/deployment.yaml': [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata: {name: web}',
    'spec:',
    '  replicas: 2',
    '  selector: {matchLabels: {app: web}}',
    '  template:',
    '    metadata: {labels: {app: web}}',
    '    spec: {automountServiceAccountToken: false, containers: [{name: web, image: nginx}]}',
  ].join('\n'),
  'widgets/gadget.yaml': 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: gadget}\nspec: {size: 1}\n',
  'widgets/after.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after-gadget\n  annotations: {argocd.argoproj.io/sync-wave: "1"}\ndata: {a: "1"}\n',
};

type App = Awaited<ReturnType<typeof waitForApp>>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** status.health without its lastTransitionTime (controller-bundled-health.test.ts checks that). */
const health = (a: App) => {
  const h = a.status?.['health'] as { status?: string; message?: string; lastTransitionTime?: string } | undefined;
  if (!h) return h;
  const { lastTransitionTime: _at, ...rest } = h;
  return rest;
};

async function setWidgetStatus(status: Record<string, unknown>): Promise<void> {
  const res = await request(cp.admin, {
    method: 'PATCH',
    path: '/apis/example.com/v1/namespaces/tenant/widgets/gadget',
    body: { status },
    contentType: 'application/merge-patch+json',
  });
  assert.equal(res.status, 200, res.text);
}

before(async () => {
  cp = await startControlPlane({ nodes: 1 });
  await grantControllerRights(cp);
  await deployer(cp, 'tenant', 'deployer');
  await applyRaw(cp.admin, WIDGET_CRD);
  await setSettings(cp, {
    'application.sync.impersonation.enabled': 'true',
    'resource.customizations.health.example.com_Widget': WIDGET_CHECK,
  });
  await applyRaw(
    cp.admin,
    project('tenant', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'tenant', defaultServiceAccount: 'deployer' }],
    }),
  );
  fx = await startFixture(cp, files, { waitTimeoutMs: 60_000 });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('a Deployment on the kwok node: the Application becomes Healthy once its pods run', async () => {
  const dest = { server: IN_CLUSTER, namespace: 'tenant' };
  await applyRaw(cp.admin, application('web', fx.repo.url, { project: 'tenant', path: 'web', destination: dest }));
  const app = await waitForApp(
    cp,
    'web',
    'Synced and Healthy',
    (a) => operationPhase(a) === 'Succeeded' && health(a)?.status === 'Healthy',
  );
  const resources = app.status?.['resources'] as Array<{ kind: string; health?: { status: string } }>;
  assert.deepEqual(
    resources.map((r) => [r.kind, r.health?.status]),
    [['Deployment', 'Healthy']],
  );
});

test('a wave waits for a Lua-assessed custom resource; a failed one degrades the Application and is named', async () => {
  const dest = { server: IN_CLUSTER, namespace: 'tenant' };
  await applyRaw(
    cp.admin,
    application('widgets', fx.repo.url, { project: 'tenant', path: 'widgets', destination: dest }),
  );
  // The Widget is applied in wave 0; wave 1 waits while the Lua check says Progressing.
  const ref = (apiVersion: string, kind: string, name: string) => ({ apiVersion, kind, name, namespace: 'tenant' });
  const end = Date.now() + 30_000;
  while (!(await getRaw(cp.admin, ref('example.com/v1', 'Widget', 'gadget'))) && Date.now() < end) await sleep(200);
  await sleep(2000);
  assert.equal(operationPhase(await getApp(cp, 'widgets')), 'Running');
  assert.equal(await getRaw(cp.admin, ref('v1', 'ConfigMap', 'after-gadget')), undefined, 'wave 1 waits');
  await setWidgetStatus({ phase: 'Ready' });
  const synced = await waitForApp(
    cp,
    'widgets',
    'Succeeded and Healthy',
    (a) => operationPhase(a) === 'Succeeded' && health(a)?.status === 'Healthy',
  );
  assert.ok((synced.status?.['resources'] as Array<{ name: string }>).some((r) => r.name === 'after-gadget'));

  await setWidgetStatus({ phase: 'Failed', reason: 'the widget factory is closed' });
  const degraded = await waitForApp(cp, 'widgets', 'Degraded by the Widget', (a) => health(a)?.status === 'Degraded');
  assert.deepEqual(health(degraded), { status: 'Degraded', message: 'Caused by example.com/Widget:tenant/gadget' });
  const widget = (degraded.status?.['resources'] as Array<{ kind: string; health?: unknown }>).find(
    (r) => r.kind === 'Widget',
  );
  assert.deepEqual(widget?.health, { status: 'Degraded', message: 'the widget factory is closed' });
});

test('a Lua check that fails: the resource is Unknown with the error, and a ComparisonError in Argo CD words', async () => {
  await setSettings(cp, {
    'application.sync.impersonation.enabled': 'true',
    'resource.customizations.health.example.com_Widget': 'error("cannot judge widgets today")',
  });
  const app = await waitForApp(cp, 'widgets', 'the failed check reported', (a) =>
    (condition(a, 'ComparisonError') ?? '').startsWith('error setting app health'),
  );
  assert.equal(
    condition(app, 'ComparisonError'),
    'error setting app health: failed to get resource health for "Widget" with name "gadget" in namespace "tenant": ' +
      'failed to get resource health for tenant/gadget: <string>:1: cannot judge widgets today',
  );
  assert.equal((app.status?.['sync'] as { status: string }).status, 'Synced', 'the sync status stands');
  assert.deepEqual(health(app), { status: 'Unknown', message: 'Caused by example.com/Widget:tenant/gadget' });
});
