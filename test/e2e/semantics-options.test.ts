// Argo CD's sync options and compare options end to end, with Argo CD's YAML and messages
// (gitops-engine pkg/sync/sync_context.go, controller/appcontroller.go, controller/state.go):
// Replace=true, Delete=confirm with deletion-approved (the audit log shows no delete before it),
// PrunePropagationPolicy=orphan, syncStrategy apply and hook, revisionHistoryLimit, the
// IgnoreExtraneous compare option, and PostDelete hooks (controller/hook.go).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, getRaw, requestOk } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import {
  application,
  deleteApp,
  getApp,
  NS,
  operationPhase,
  startFixture,
  waitForApp,
  startDeployersPlane,
  untilAppGone,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

const cm = (name: string, annotations: Record<string, string> = {}, data = '1') =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${
    Object.keys(annotations).length > 0
      ? `  annotations:\n${Object.entries(annotations)
          .map(([k, v]) => `    ${k}: "${v}"`)
          .join('\n')}\n`
      : ''
  }data:\n  a: "${data}"\n`;

function app(name: string, ns: string, extra: { spec?: Record<string, unknown>; finalizers?: string[] } = {}) {
  const base = application(name, fx.repo.url, {
    project: 'sem',
    path: ns,
    automated: false,
    destination: { server: 'https://kubernetes.default.svc', namespace: ns },
  });
  return {
    ...base,
    metadata: { ...base.metadata, ...(extra.finalizers ? { finalizers: extra.finalizers } : {}) },
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
  getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name, namespace: ns }) as Promise<
    { data?: Record<string, string>; metadata: { uid: string; ownerReferences?: unknown[] } } | undefined
  >;
const state = (a: { status?: Record<string, unknown> }) =>
  a.status?.['operationState'] as
    | { phase?: string; message?: string; syncResult?: { resources?: Array<{ name: string; message: string }> } }
    | undefined;
const resources = (a: { status?: Record<string, unknown> }) =>
  (a.status?.['resources'] ?? []) as Array<{ name: string; status: string; requiresPruning?: boolean }>;
const finished = (n: number) => (a: { status?: Record<string, unknown> }) =>
  operationPhase(a) === 'Succeeded' && resources(a).length === n;

before(async () => {
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'sem',
    namespaces: ['replace', 'dconfirm', 'orphan', 'strategy', 'history', 'extraneous', 'postdel'],
  });
  fx = await startFixture(cp, {
    'replace/r.yaml': cm('r', { 'argocd.argoproj.io/sync-options': 'Replace=true' }),
    'dconfirm/precious.yaml': cm('precious', { 'argocd.argoproj.io/sync-options': 'Delete=confirm' }),
    'orphan/owner.yaml': cm('owner'),
    'orphan/other.yaml': cm('other'),
    'strategy/plain.yaml': cm('plain'),
    'strategy/pre.yaml': cm('pre', { 'argocd.argoproj.io/hook': 'PreSync' }),
    'history/h.yaml': cm('h'),
    'extraneous/a.yaml': cm('a'),
    'extraneous/b.yaml': cm('b', { 'argocd.argoproj.io/compare-options': 'IgnoreExtraneous' }),
    'postdel/app.yaml': cm('app-cm'),
    'postdel/done.yaml': cm('done-hook', {
      'argocd.argoproj.io/hook': 'PostDelete',
      'argocd.argoproj.io/hook-delete-policy': 'HookSucceeded',
    }),
    'postdel/kept.yaml': cm('kept-hook', { 'argocd.argoproj.io/hook': 'PostDelete' }),
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('Replace=true: created, then replaced with a PUT (never a server-side apply), as the ServiceAccount', async () => {
  const manifest = app('replace', 'replace');
  await sync(manifest);
  await waitForApp(cp, 'replace', 'created', finished(1));
  await fx.repo.commit({ 'replace/r.yaml': cm('r', { 'argocd.argoproj.io/sync-options': 'Replace=true' }, '2') });
  await sync(manifest);
  const a = await waitForApp(
    cp,
    'replace',
    'replaced',
    (x) =>
      operationPhase(x) === 'Succeeded' && state(x)?.syncResult?.resources?.[0]?.message === 'configmap/r replaced',
  );
  assert.equal(state(a)?.syncResult?.resources?.[0]?.message, 'configmap/r replaced');
  assert.equal((await get('replace', 'r'))?.data?.['a'], '2');
  const writes = (await cp.readAudit()).filter(
    (r) => r.namespace === 'replace' && r.name === 'r' && !r.dryRun && ['create', 'update', 'patch'].includes(r.verb),
  );
  assert.deepEqual(
    writes.map((r) => `${r.verb} ${r.impersonatedUser}`),
    ['create system:serviceaccount:replace:deployer', 'update system:serviceaccount:replace:deployer'],
  );
});

test('Delete=confirm: deleting the Application waits for deletion-approved; no delete is sent before it', async () => {
  await sync(app('dconfirm', 'dconfirm', { finalizers: ['resources-finalizer.argocd.argoproj.io'] }));
  await waitForApp(cp, 'dconfirm', 'synced', finished(1));
  await deleteApp(cp, 'dconfirm');
  await until('the confirmation log line', () =>
    fx.logs.some((l) => l.includes('Resource ConfigMap dconfirm/precious requires manual confirmation to delete')),
  );
  assert.ok(await get('dconfirm', 'precious'), 'still there');
  const deletes = () =>
    cp.readAudit().then((all) => all.filter((r) => r.verb === 'delete' && r.namespace === 'dconfirm' && !r.dryRun));
  assert.deepEqual(await deletes(), []);
  const deleting = await getApp(cp, 'dconfirm');
  const since = (deleting['metadata'] as { deletionTimestamp: string }).deletionTimestamp;
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/dconfirm`,
    body: { metadata: { annotations: { 'argocd.argoproj.io/deletion-approved': since } } },
    contentType: 'application/merge-patch+json',
  });
  await until('the Application gone', async () => (await get('dconfirm', 'precious')) === undefined, 60_000);
  assert.equal((await deletes()).length, 1);
});

test('PrunePropagationPolicy=orphan: a pruned object leaves its dependents, their ownerReferences removed', async () => {
  const manifest = app('orphan', 'orphan', {
    spec: { syncPolicy: { syncOptions: ['PrunePropagationPolicy=orphan'] } },
  });
  await sync(manifest);
  await waitForApp(cp, 'orphan', 'synced', finished(2));
  const owner = await get('orphan', 'owner');
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'dependent',
      namespace: 'orphan',
      ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner?.metadata.uid ?? '' }],
    },
  });
  await fx.repo.commit({ 'orphan/owner.yaml': null });
  await sync(manifest, { syncOptions: ['PrunePropagationPolicy=orphan'] });
  await waitForApp(cp, 'orphan', 'pruned', finished(1), 60_000);
  // The garbage collector orphans the dependent (drops its ownerReference) instead of deleting it.
  await until('the dependent orphaned', async () => {
    const d = await get('orphan', 'dependent');
    return d !== undefined && (d.metadata.ownerReferences ?? []).length === 0;
  });
  assert.equal(await get('orphan', 'owner'), undefined);
});

test('syncStrategy: apply runs no hooks; hook (the default) runs them', async () => {
  const manifest = app('strategy', 'strategy');
  await sync(manifest, { syncStrategy: { apply: {} } });
  const applied = await waitForApp(cp, 'strategy', 'applied', (x) => operationPhase(x) === 'Succeeded');
  assert.deepEqual(
    (state(applied)?.syncResult?.resources ?? []).map((r) => r.name),
    ['plain'],
  );
  assert.equal(await get('strategy', 'pre'), undefined);
  await sync(manifest, { syncStrategy: { hook: {} } });
  await until('the PreSync hook run', async () => (await get('strategy', 'pre')) !== undefined);
});

test('revisionHistoryLimit: status.history keeps that many entries', async () => {
  const manifest = app('history', 'history', { spec: { revisionHistoryLimit: 1 } });
  for (let id = 0; id <= 2; id++) {
    await sync(manifest);
    await waitForApp(cp, 'history', `history entry ${id}`, (x) =>
      ((x.status?.['history'] ?? []) as Array<{ id: number }>).some((h) => h.id === id),
    );
  }
  const a = await getApp(cp, 'history');
  const history = (a.status?.['history'] ?? []) as Array<{ id: number }>;
  assert.equal(history.length, 1);
  assert.equal(history[0]?.id, 2, 'the newest kept');
});

test('IgnoreExtraneous: an object to prune is OutOfSync and the Application stays Synced', async () => {
  const manifest = app('extraneous', 'extraneous');
  await sync(manifest);
  await waitForApp(cp, 'extraneous', 'synced', finished(2));
  await fx.repo.commit({ 'extraneous/b.yaml': null });
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/extraneous`,
    body: { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'normal' } } },
    contentType: 'application/merge-patch+json',
  });
  const a = await waitForApp(cp, 'extraneous', 'b to prune', (x) =>
    resources(x).some((r) => r.name === 'b' && r.requiresPruning === true),
  );
  assert.equal((a.status?.['sync'] as { status: string }).status, 'Synced');
  assert.equal(resources(a).find((r) => r.name === 'b')?.status, 'OutOfSync');
});

test('PostDelete hooks: their finalizers follow Git; run once the resources are gone, then cleaned up by policy', async () => {
  await sync(app('postdel', 'postdel', { finalizers: ['resources-finalizer.argocd.argoproj.io'] }));
  const a = await waitForApp(
    cp,
    'postdel',
    'synced, post-delete finalizers set',
    (x) =>
      operationPhase(x) === 'Succeeded' &&
      ((x['metadata'] as { finalizers?: string[] }).finalizers ?? []).includes(
        'post-delete-finalizer.argocd.argoproj.io/cleanup',
      ),
  );
  assert.deepEqual((a['metadata'] as { finalizers: string[] }).finalizers, [
    'resources-finalizer.argocd.argoproj.io',
    'post-delete-finalizer.argocd.argoproj.io',
    'post-delete-finalizer.argocd.argoproj.io/cleanup',
  ]);
  assert.equal(await get('postdel', 'done-hook'), undefined, 'a PostDelete hook is not applied by a sync');
  assert.equal(await get('postdel', 'kept-hook'), undefined);
  await deleteApp(cp, 'postdel');
  await untilAppGone(cp, 'postdel');
  assert.equal(await get('postdel', 'app-cm'), undefined);
  assert.equal(await get('postdel', 'done-hook'), undefined, 'HookSucceeded: deleted once healthy');
  const kept = (await get('postdel', 'kept-hook')) as
    { metadata: { annotations?: Record<string, string> } } | undefined;
  assert.equal(kept?.metadata.annotations?.['argocd.argoproj.io/tracking-id'], 'postdel:/ConfigMap:postdel/kept-hook');
  const writes = (await cp.readAudit())
    .filter((r) => r.namespace === 'postdel' && !r.dryRun && ['create', 'delete'].includes(r.verb) && r.code !== 404)
    .filter((r) => r.user === cp.controllerUserName)
    .map((r) => `${r.verb} ${r.name ?? ''} ${r.impersonatedUser ?? ''}`);
  const sa = 'system:serviceaccount:postdel:deployer';
  // The resources first; then the hooks created; then the one whose policy says so deleted.
  const at = (w: string) => writes.indexOf(w);
  assert.ok(at(`delete app-cm ${sa}`) >= 0, writes.join('\n'));
  assert.ok(at(`create done-hook ${sa}`) > at(`delete app-cm ${sa}`), writes.join('\n'));
  assert.ok(at(`create kept-hook ${sa}`) > at(`delete app-cm ${sa}`), writes.join('\n'));
  assert.ok(at(`delete done-hook ${sa}`) > at(`create done-hook ${sa}`), writes.join('\n'));
  assert.equal(at(`delete kept-hook ${sa}`), -1);
});
