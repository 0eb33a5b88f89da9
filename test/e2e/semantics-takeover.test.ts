// Taking over from Argo CD and the sync options that change objects in place, end to end with
// Argo CD's YAML (gitops-engine pkg/sync/sync_context.go, controller/sync.go,
// controller/sync_namespace.go, controller/appcontroller.go): objects applied with kubectl's
// client-side apply or by Argo CD's own field manager lose the fields Git no longer has; Force=true
// deletes and re-creates what cannot change in place; managedNamespaceMetadata with
// CreateNamespace=true; an automated sync held by a deny window; syncStrategy's force; the
// /foreground finalizer.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, getRaw, grantRole, requestOk } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import {
  application,
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

const cm = (name: string, data: Record<string, string>, extra = '') =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}data:\n${Object.entries(data)
    .map(([k, v]) => `  ${k}: "${v}"`)
    .join('\n')}\n`;

function app(name: string, ns: string, spec: Record<string, unknown> = {}, automated = false) {
  const base = application(name, fx.repo.url, {
    project: 'sem',
    path: name,
    automated,
    destination: { server: 'https://kubernetes.default.svc', namespace: ns },
  });
  return { ...base, spec: { ...(base['spec'] as Record<string, unknown>), ...spec } };
}

async function sync(manifest: ReturnType<typeof app>, op: Record<string, unknown> = {}) {
  await applyRaw(cp.admin, {
    ...manifest,
    operation: { sync: { revision: 'HEAD', prune: true, ...op }, initiatedBy: { username: 'alice' } },
  });
}

const get = (ns: string, name: string) =>
  getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name, namespace: ns }) as Promise<
    { data?: Record<string, string> } | undefined
  >;

// A tenant's Deployment with a long env list, read through the server's own managedFields: Git
// keeps the first LONG_KEPT entries of what kubectl applied.
const LONG_KEPT = 3000;
const LONG_APPLIED = 4000;
const longDeployment = (entries: number) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'd', namespace: 'takeover-long' },
  spec: {
    selector: { matchLabels: { app: 'd' } },
    template: {
      metadata: { labels: { app: 'd' } },
      spec: {
        containers: [
          {
            name: 'c',
            image: 'registry.example/c:1',
            env: Array.from({ length: entries }, (_, i) => ({ name: `V${i}`, value: `${i}` })),
          },
        ],
      },
    },
  },
});

before(async () => {
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'sem',
    projectSpec: {
      destinationServiceAccounts: [
        { server: '*', namespace: 'mnm-new', defaultServiceAccount: 'mnm:deployer' },
        { server: '*', namespace: '*', defaultServiceAccount: 'deployer' },
      ],
      syncWindows: [{ kind: 'deny', schedule: '* * * * *', duration: '1h', applications: ['frozen'] }],
    },
    namespaces: ['takeover', 'takeover-long', 'force', 'strategy', 'fg', 'mnm', 'frozen'],
  });
  // The namespace CreateNamespace=true makes is created and labelled as the ServiceAccount too.
  await grantRole(cp.admin, {
    name: 'mnm-namespaces',
    to: { serviceAccount: 'deployer', namespace: 'mnm' },
    rules: [
      { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['*'] },
    ],
  });
  fx = await startFixture(cp, {
    'takeover/csa.yaml': cm('csa', { a: '1' }),
    'takeover/argo.yaml': cm('argo', { a: '1' }),
    'takeover/replaced.yaml': cm(
      'replaced',
      { a: '1' },
      '  annotations:\n    argocd.argoproj.io/sync-options: Replace=true\n',
    ),
    'takeover-long/d.yaml': JSON.stringify(longDeployment(LONG_KEPT)),
    'force/imm.yaml':
      cm('imm', { a: '1' }, '  annotations:\n    argocd.argoproj.io/sync-options: Force=true\n') + 'immutable: true\n',
    'strategy/imm.yaml': cm('imm', { a: '1' }, '') + 'immutable: true\n',
    'fg/one.yaml': cm('one', { a: '1' }),
    'mnm/cm.yaml': cm('in-new', { a: '1' }),
    'frozen/cm.yaml': cm('held', { a: '1' }),
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test("objects kubectl client-side applied, or Argo CD's field manager owns, lose the fields Git no longer has", async () => {
  // As kubectl apply (client-side) left them: its manager owns a and stale. The second is
  // Replace=true in Git: its update carries the version the takeover's patch left.
  for (const name of ['csa', 'replaced'])
    await requestOk(cp.admin, {
      method: 'POST',
      path: '/api/v1/namespaces/takeover/configmaps?fieldManager=kubectl-client-side-apply',
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'takeover' },
        data: { a: '1', stale: 'x' },
      },
    });
  // As Argo CD's server-side apply left it.
  await applyRaw(
    cp.admin,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argo', namespace: 'takeover' },
      data: { a: '1', stale: 'x' },
    },
    { fieldManager: 'argocd-controller' },
  );
  await sync(app('takeover', 'takeover'));
  await waitForApp(cp, 'takeover', 'synced', (x) => operationPhase(x) === 'Succeeded');
  assert.deepEqual((await get('takeover', 'csa'))?.data, { a: '1' });
  assert.deepEqual((await get('takeover', 'argo'))?.data, { a: '1' });
  assert.deepEqual((await get('takeover', 'replaced'))?.data, { a: '1' });
});

test('a Deployment kubectl client-side applied with 4,000 env entries keeps the 3,000 Git has, each by its name', async () => {
  await requestOk(cp.admin, {
    method: 'POST',
    path: '/apis/apps/v1/namespaces/takeover-long/deployments?fieldManager=kubectl-client-side-apply',
    body: longDeployment(LONG_APPLIED),
  });
  await sync(app('takeover-long', 'takeover-long'));
  // The Deployment's own controller writes its status meanwhile: the takeover's guarded patch is
  // made again from a fresh read rather than failing the sync.
  await waitForApp(cp, 'takeover-long', 'synced', (x) => operationPhase(x) === 'Succeeded');
  const live = (await getRaw(cp.admin, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name: 'd',
    namespace: 'takeover-long',
  })) as ReturnType<typeof longDeployment> & { metadata: { managedFields: Array<{ manager: string }> } };
  assert.deepEqual(
    live.spec.template.spec.containers[0]?.env,
    longDeployment(LONG_KEPT).spec.template.spec.containers[0]?.env,
  );
  assert.ok(!live.metadata.managedFields.some((e) => e.manager === 'kubectl-client-side-apply'));
  // The comparison after the sync predicts what the apply left: nothing more to do.
  await waitForApp(
    cp,
    'takeover-long',
    'Synced',
    (x) => (x.status?.['sync'] as { status?: string })?.status === 'Synced',
  );
});

test('Force=true: an immutable ConfigMap changed in Git is deleted and created again, as the ServiceAccount', async () => {
  const manifest = app('force', 'force');
  await sync(manifest);
  await waitForApp(cp, 'force', 'created', (x) => operationPhase(x) === 'Succeeded');
  await fx.repo.commit({
    'force/imm.yaml':
      cm('imm', { a: '2' }, '  annotations:\n    argocd.argoproj.io/sync-options: Force=true\n') + 'immutable: true\n',
  });
  await sync(manifest);
  await until('the new data live', async () => (await get('force', 'imm'))?.data?.['a'] === '2', 60_000);
  const deletes = (await cp.readAudit()).filter(
    (r) => r.verb === 'delete' && r.namespace === 'force' && r.name === 'imm' && !r.dryRun,
  );
  assert.deepEqual(
    deletes.map((r) => r.impersonatedUser),
    ['system:serviceaccount:force:deployer'],
  );
});

test('managedNamespaceMetadata with CreateNamespace=true: the namespace is created with its labels and annotations', async () => {
  const metadata = { labels: { team: 'a' }, annotations: { owner: 'b' } };
  await sync(
    app('mnm', 'mnm-new', {
      syncPolicy: { syncOptions: ['CreateNamespace=true'], managedNamespaceMetadata: metadata },
    }),
  );
  await waitForApp(cp, 'mnm', 'synced', (x) => operationPhase(x) === 'Succeeded');
  const ns = (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'Namespace', name: 'mnm-new' })) as {
    metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  };
  assert.equal(ns.metadata.labels?.['team'], 'a');
  assert.equal(ns.metadata.annotations?.['owner'], 'b');
  assert.ok(await get('mnm-new', 'in-new'));
  const creates = (await cp.readAudit()).filter(
    (r) => r.verb !== 'get' && r.resource === 'namespaces' && r.name === 'mnm-new' && !r.dryRun,
  );
  assert.ok(creates.length > 0);
  assert.deepEqual([...new Set(creates.map((r) => r.impersonatedUser))], ['system:serviceaccount:mnm:deployer']);
});

test('a deny window holds an automated sync: not started, "Sync prevented by sync window" logged, nothing written', async () => {
  await applyRaw(cp.admin, app('frozen', 'frozen', {}, true));
  await waitForApp(
    cp,
    'frozen',
    'OutOfSync',
    (x) => (x.status?.['sync'] as { status?: string } | undefined)?.status === 'OutOfSync',
  );
  await until('the log line', () => fx.logs.some((l) => l.includes('Sync prevented by sync window')));
  const a = await waitForApp(cp, 'frozen', 'no operation', (x) => x['operation'] === undefined);
  assert.equal(a.status?.['operationState'], undefined);
  assert.equal(await get('frozen', 'held'), undefined);
});

test('operation.sync.syncStrategy.apply.force: every object forced, as Force=true would', async () => {
  const manifest = app('strategy', 'strategy');
  await sync(manifest);
  await waitForApp(cp, 'strategy', 'created', (x) => operationPhase(x) === 'Succeeded');
  await fx.repo.commit({ 'strategy/imm.yaml': cm('imm', { a: '2' }, '') + 'immutable: true\n' });
  await sync(manifest, { syncStrategy: { apply: { force: true } } });
  await until('the new data live', async () => (await get('strategy', 'imm'))?.data?.['a'] === '2', 60_000);
});

test('resources-finalizer.argocd.argoproj.io/foreground: the resources go, then the Application', async () => {
  const manifest = app('fg', 'fg');
  (manifest.metadata as { finalizers?: string[] }).finalizers = ['resources-finalizer.argocd.argoproj.io/foreground'];
  await sync(manifest);
  // Deleted as soon as the sync is done, perhaps before a refresh has put it in status.resources:
  // what the sync applied is deleted all the same (Argo CD finds it by its tracking).
  await waitForApp(cp, 'fg', 'synced', (x) => operationPhase(x) === 'Succeeded');
  await requestOk(cp.admin, { method: 'DELETE', path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/fg` });
  await untilAppGone(cp, 'fg');
  assert.equal(await get('fg', 'one'), undefined);
  const deletes = (await cp.readAudit()).filter((r) => r.verb === 'delete' && r.namespace === 'fg' && !r.dryRun);
  assert.deepEqual(
    deletes.map((r) => `${r.name} ${r.impersonatedUser}`),
    ['one system:serviceaccount:fg:deployer'],
  );
});
