// Argo CD's sync and delete semantics end to end, with Argo CD's YAML and messages
// (gitops-engine pkg/sync/sync_context.go, controller/appcontroller.go, controller/sync.go,
// pkg/apis/application/v1alpha1/types.go): Delete=false, Prune=false and Prune=confirm with
// deletion-approved (the audit log shows no delete was sent), the /background finalizer, sync
// windows holding a manual sync, a rollback rendering operation.sync.source, and label tracking.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, getRaw, requestOk } from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import {
  application,
  deleteApp,
  NS,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
  startDeployersPlane,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';
import { until } from '../support/faults.ts';

let cp: TestControlPlane;
let fx: Fixture;

const cm = (name: string, syncOptions?: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${syncOptions ? `  annotations:\n    argocd.argoproj.io/sync-options: ${syncOptions}\n` : ''}data:\n  a: "1"\n`;

function app(
  name: string,
  path: string,
  ns: string,
  extra: { spec?: Record<string, unknown>; finalizers?: string[] } = {},
) {
  const base = application(name, fx.repo.url, {
    project: 'sem',
    path,
    automated: false,
    destination: { server: 'https://kubernetes.default.svc', namespace: ns },
  });
  return {
    ...base,
    metadata: {
      ...base.metadata,
      ...(extra.finalizers ? { finalizers: extra.finalizers } : {}),
    },
    spec: { ...(base['spec'] as Record<string, unknown>), ...(extra.spec ?? {}) },
  };
}

async function sync(manifest: ReturnType<typeof app>, op: Record<string, unknown> = {}) {
  await applyRaw(cp.admin, {
    ...manifest,
    operation: { sync: { revision: 'HEAD', prune: true, ...op }, initiatedBy: { username: 'alice' } },
  });
}

const get = (ns: string, name: string) =>
  getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name, namespace: ns });
const deletes = (records: AuditRecord[], ns: string, name: string) =>
  records.filter((r) => r.verb === 'delete' && r.namespace === ns && r.name === name && r.resource === 'configmaps');
const state = (a: { status?: Record<string, unknown> }) =>
  a.status?.['operationState'] as { phase?: string; message?: string; startedAt?: string } | undefined;

before(async () => {
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'sem',
    namespaces: ['keep', 'noprune', 'confirm', 'bg', 'window', 'rollback', 'label'],
  });
  fx = await startFixture(cp, {
    'keep/kept.yaml': cm('kept', 'Delete=false'),
    'keep/gone.yaml': cm('gone'),
    'noprune/stays.yaml': cm('stays'),
    'noprune/other.yaml': cm('other'),
    'confirm/careful.yaml': cm('careful', 'Prune=confirm'),
    'confirm/other.yaml': cm('other'),
    'bg/one.yaml': cm('one'),
    'window/w.yaml': cm('w'),
    'rollback/now.yaml': cm('now'),
    'rollback-old/then.yaml': cm('then'),
    'label/l.yaml': cm('l'),
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('Delete=false: the resource survives deleting its Application; no delete is sent for it', async () => {
  await sync(app('keep', 'keep', 'keep', { finalizers: ['resources-finalizer.argocd.argoproj.io'] }));
  await waitForApp(
    cp,
    'keep',
    'synced',
    (a) => operationPhase(a) === 'Succeeded' && ((a.status?.['resources'] ?? []) as unknown[]).length === 2,
  );
  await deleteApp(cp, 'keep');
  const end = Date.now() + 60_000;
  while (
    Date.now() < end &&
    (await getRaw(cp.admin, { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', name: 'keep', namespace: NS }))
  )
    await new Promise((r) => setTimeout(r, 300));
  assert.equal(await get('keep', 'gone'), undefined, 'the other resource was deleted');
  assert.ok(await get('keep', 'kept'), 'the Delete=false resource is still there');
  await cp.waitForAudit((r) => deletes([r], 'keep', 'gone').length > 0);
  assert.deepEqual(deletes(await cp.readAudit(), 'keep', 'kept'), []);
});

test("Prune=false as the Application's sync option: the extra object is PruneSkipped, never deleted", async () => {
  const manifest = app('noprune', 'noprune', 'noprune', { spec: { syncPolicy: { syncOptions: ['Prune=false'] } } });
  await sync(manifest);
  // The inventory (status.resources) holds both before one goes from Git.
  await waitForApp(
    cp,
    'noprune',
    'synced, both in the inventory',
    (a) => operationPhase(a) === 'Succeeded' && ((a.status?.['resources'] ?? []) as unknown[]).length === 2,
  );
  // The next sync renders the new commit (HEAD) whatever the last refresh saw.
  await fx.repo.commit({ 'noprune/stays.yaml': null });
  await sync(manifest, { syncOptions: ['Prune=false'] });
  const done = await waitForApp(
    cp,
    'noprune',
    'second sync',
    (a) =>
      operationPhase(a) === 'Succeeded' &&
      ((a.status?.['history'] ?? []) as unknown[]).length === 2 &&
      ((state(a) as { syncResult?: { resources?: unknown[] } }).syncResult?.resources ?? []).some(
        (r) => (r as { name: string }).name === 'stays',
      ),
  );
  const result = (
    done.status?.['operationState'] as {
      syncResult: { resources: Array<{ name: string; status: string; message: string }> };
    }
  ).syncResult.resources.find((r) => r.name === 'stays');
  assert.deepEqual(
    { status: result?.status, message: result?.message },
    { status: 'PruneSkipped', message: 'ignored (no prune)' },
  );
  assert.ok(await get('noprune', 'stays'));
  assert.deepEqual(deletes(await cp.readAudit(), 'noprune', 'stays'), []);
});

test('Prune=confirm: the sync waits, Running, until argocd.argoproj.io/deletion-approved; only then is it deleted', async () => {
  const manifest = app('confirm', 'confirm', 'confirm');
  await sync(manifest);
  // The inventory (status.resources) holds both before one goes from Git.
  await waitForApp(
    cp,
    'confirm',
    'synced, both in the inventory',
    (a) => operationPhase(a) === 'Succeeded' && ((a.status?.['resources'] ?? []) as unknown[]).length === 2,
  );
  await fx.repo.commit({ 'confirm/careful.yaml': null });
  await sync(manifest);
  const waiting = await waitForApp(
    cp,
    'confirm',
    'waiting for confirmation',
    (a) => state(a)?.message === 'waiting for pruning confirmation of /ConfigMap/careful',
  );
  assert.equal(state(waiting)?.phase, 'Running');
  await new Promise((r) => setTimeout(r, 2000));
  assert.ok(await get('confirm', 'careful'), 'not deleted before approval');
  assert.deepEqual(deletes(await cp.readAudit(), 'confirm', 'careful'), []);
  const approvedAt = new Date(Date.parse(state(waiting)?.startedAt ?? '') + 1000)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z');
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/confirm`,
    body: { metadata: { annotations: { 'argocd.argoproj.io/deletion-approved': approvedAt } } },
    contentType: 'application/merge-patch+json',
  });
  await waitForApp(cp, 'confirm', 'pruned after approval', (a) => operationPhase(a) === 'Succeeded', 60_000);
  // The prune is a foreground delete, as in Argo CD: the sync is done once it is asked for, and the
  // garbage collector removes the object (its foregroundDeletion finalizer) soon after, later under load.
  assert.deepEqual(
    deletes(await cp.readAudit(), 'confirm', 'careful')
      .filter((r) => !r.dryRun)
      .map((r) => r.impersonatedUser),
    ['system:serviceaccount:confirm:deployer'],
  );
  await until('careful gone', async () => (await get('confirm', 'careful')) === undefined, 60_000);
});

test('resources-finalizer.argocd.argoproj.io/background: the resources go and the finalizer with them', async () => {
  await sync(app('bg', 'bg', 'bg', { finalizers: ['resources-finalizer.argocd.argoproj.io/background'] }));
  await waitForApp(
    cp,
    'bg',
    'synced',
    (a) => operationPhase(a) === 'Succeeded' && ((a.status?.['resources'] ?? []) as unknown[]).length === 1,
  );
  await deleteApp(cp, 'bg');
  const end = Date.now() + 60_000;
  while (
    Date.now() < end &&
    (await getRaw(cp.admin, { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', name: 'bg', namespace: NS }))
  )
    await new Promise((r) => setTimeout(r, 300));
  assert.equal(
    await getRaw(cp.admin, { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', name: 'bg', namespace: NS }),
    undefined,
  );
  assert.equal(await get('bg', 'one'), undefined);
});

test("a deny sync window holds a manual sync, Running with Argo CD's message, and shows in status", async () => {
  const windows = [{ kind: 'deny', schedule: '* * * * *', duration: '1h', applications: ['window'] }];
  await applyRaw(
    cp.admin,
    project('sem', {
      destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }],
      syncWindows: windows,
    }),
  );
  const manifest = app('window', 'window', 'window');
  await applyRaw(cp.admin, manifest);
  const shown = await waitForApp(cp, 'window', 'syncWindows in status', (a) => a.status?.['syncWindows'] !== undefined);
  assert.deepEqual(shown.status?.['syncWindows'], { assignedWindows: windows, activeWindows: windows, canSync: false });
  await sync(manifest);
  const held = await waitForApp(
    cp,
    'window',
    'held',
    (a) => state(a)?.message === 'Sync operation blocked by sync window',
  );
  assert.equal(state(held)?.phase, 'Running');
  assert.equal(await get('window', 'w'), undefined);
  assert.deepEqual(
    (await cp.readAudit()).filter(
      (r) => r.namespace === 'window' && r.verb === 'patch' && !r.dryRun && r.user === cp.controllerUserName,
    ),
    [],
  );
  // The window lifted, the held operation runs.
  await applyRaw(
    cp.admin,
    project('sem', {
      destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }],
      syncWindows: [],
    }),
  );
  await waitForApp(cp, 'window', 'synced after the window', (a) => operationPhase(a) === 'Succeeded', 60_000);
  assert.ok(await get('window', 'w'));
});

test("rollback: operation.sync.source is rendered, not today's spec.source, and recorded in history", async () => {
  const manifest = app('rollback', 'rollback', 'rollback');
  const source = { repoURL: fx.repo.url, path: 'rollback-old', targetRevision: 'HEAD' };
  await sync(manifest, { source });
  const done = await waitForApp(cp, 'rollback', 'rolled back', (a) => operationPhase(a) === 'Succeeded');
  assert.ok(await get('rollback', 'then'), 'the historical source was applied');
  assert.equal(await get('rollback', 'now'), undefined, "today's source was not");
  const history = done.status?.['history'] as Array<{ source?: { path?: string } }>;
  assert.equal(history.at(-1)?.source?.path, 'rollback-old');
});

test('application.resourceTrackingMethod: label writes and reads app.kubernetes.io/instance', async () => {
  await setSettings(cp, {
    'application.sync.impersonation.enabled': 'true',
    'application.resourceTrackingMethod': 'label',
  });
  await sync(app('label', 'label', 'label'));
  await waitForApp(cp, 'label', 'synced', (a) => operationPhase(a) === 'Succeeded');
  const live = (await get('label', 'l')) as unknown as {
    metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  };
  assert.equal(live.metadata.labels?.['app.kubernetes.io/instance'], 'label');
  assert.equal(live.metadata.annotations?.['argocd.argoproj.io/tracking-id'], undefined);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
});
