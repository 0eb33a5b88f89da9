// Argo CD's hook and sync semantics end to end, with Argo CD's YAML and messages, on a control plane
// with a kwok node that runs Job pods: PreDelete hooks (controller/hook.go, finalizeApplicationDeletion)
// that succeed and that fail, the hook finalizer on a running hook and on a terminated operation's
// (gitops-engine pkg/sync/hook, Terminate), SkipDryRunOnMissingResource=true for a kind whose CRD
// arrives during the sync, retry.refresh
// (appcontroller.go: a retry syncs the latest revision), and ServerSideApply=false refused.
// A Job whose pod selects a node label only the test adds runs exactly when the test says.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, getRaw, labelNode, request } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import {
  application,
  condition,
  deleteApp,
  getApp,
  operationPhase,
  startDeployersPlane,
  startFixture,
  untilAppGone,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

const cm = (name: string, extra = '') =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}data:\n  a: "1"\n`;
/** A Job (Argo CD's hook YAML when annotated) whose pod runs once the node has `gate: open`. */
const job = (name: string, annotations: Record<string, string>, opts: { gate?: string; exit?: number } = {}) =>
  `apiVersion: batch/v1
kind: Job
metadata:
  name: ${name}
  annotations:
${Object.entries(annotations)
  .map(([k, v]) => `    ${k}: "${v}"`)
  .join('\n')}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
${opts.gate ? `      nodeSelector:\n        ${opts.gate}: open\n` : ''}      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "exit ${opts.exit ?? 0}"]
`;
const GADGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.hooks.example.com' },
  spec: {
    group: 'hooks.example.com',
    scope: 'Namespaced',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

function app(name: string, spec: Record<string, unknown> = {}, finalizers?: string[]) {
  const base = application(name, fx.repo.url, {
    project: 'hooks',
    path: name,
    automated: false,
    destination: { server: 'https://kubernetes.default.svc', namespace: name },
  });
  return {
    ...base,
    metadata: { ...base.metadata, ...(finalizers ? { finalizers } : {}) },
    spec: { ...(base['spec'] as Record<string, unknown>), ...spec },
  };
}
const sync = (manifest: ReturnType<typeof app>, op: Record<string, unknown> = {}) =>
  applyRaw(cp.admin, {
    ...manifest,
    operation: { sync: { revision: 'HEAD', prune: true }, initiatedBy: { username: 'alice' }, ...op },
  });
const getObj = (apiVersion: string, kind: string, ns: string, name: string) =>
  getRaw(cp.admin, { apiVersion, kind, name, namespace: ns }) as Promise<
    { metadata: { finalizers?: string[]; deletionTimestamp?: string }; data?: Record<string, string> } | undefined
  >;
const finalizersOf = (a: Record<string, unknown>) => (a['metadata'] as { finalizers?: string[] }).finalizers ?? [];
const opState = (a: { status?: Record<string, unknown> }) =>
  a.status?.['operationState'] as
    { phase?: string; message?: string; retryCount?: number; syncResult?: { revision?: string } } | undefined;
/** Waits (60 s at most) until `get` finds the object; returns it. A timeout shows the Application's status. */
async function present<T>(get: () => Promise<T | undefined>, what: string, appName: string): Promise<T> {
  let found: T | undefined;
  let status = '';
  await until(
    what,
    async () => {
      found = await get();
      if (found === undefined) status = JSON.stringify((await getApp(cp, appName)).status ?? {}).slice(0, 3000);
      return found !== undefined;
    },
    60_000,
    () => status,
  );
  return found as T;
}
/** Writes to `ns` the controller made (as whoever), in the order the API server answered them. */
const writes = async (ns: string) =>
  (await cp.readAudit())
    .filter((r) => r.namespace === ns && !r.dryRun && r.user === cp.controllerUserName)
    .filter((r) => ['create', 'delete', 'patch', 'update'].includes(r.verb) && (r.code ?? 0) < 400)
    .map((r) => `${r.verb} ${r.resource ?? ''}/${r.name ?? ''} ${r.impersonatedUser ?? ''}`);

before(async () => {
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'hooks',
    namespaces: ['predel', 'predelfail', 'hookfin', 'hookterm', 'skipdry', 'retryref', 'csa'],
    nodes: 1,
  });
  fx = await startFixture(
    cp,
    {
      'predel/app.yaml': cm('app-cm'),
      'predel/pre.yaml': job(
        'pre-job',
        { 'argocd.argoproj.io/hook': 'PreDelete', 'argocd.argoproj.io/hook-delete-policy': 'HookSucceeded' },
        { gate: 'gate-predel' },
      ),
      'predelfail/app.yaml': cm('kept-cm'),
      'predelfail/pre.yaml': job('bad-pre', { 'argocd.argoproj.io/hook': 'PreDelete' }, { exit: 3 }),
      'hookfin/hook.yaml': job('pre-sync', { 'argocd.argoproj.io/hook': 'PreSync' }, { gate: 'gate-hookfin' }),
      'hookfin/app.yaml': cm('after-hook'),
      // Its gate never opens: the hook runs until the operation is terminated.
      'hookterm/hook.yaml': job('stuck', { 'argocd.argoproj.io/hook': 'PreSync' }, { gate: 'gate-hookterm' }),
      'hookterm/app.yaml': cm('never'),
      'skipdry/gate.yaml': job('install-crd', { 'argocd.argoproj.io/sync-wave': '0' }, { gate: 'gate-skipdry' }),
      'skipdry/gadget.yaml':
        'apiVersion: hooks.example.com/v1\nkind: Gadget\nmetadata:\n  name: g1\n  annotations:\n    argocd.argoproj.io/sync-wave: "1"\n    argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true\nspec:\n  size: 1\n',
      'csa/app.yaml': cm('client-side'),
    },
    // The gated waves wait as long as a test takes to open their gate.
    { waitTimeoutMs: 120_000 },
  );
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('a running hook carries argocd.argoproj.io/hook-finalizer; it is taken off once the hook completes', async () => {
  await sync(app('hookfin'));
  const running = await present(
    () => getObj('batch/v1', 'Job', 'hookfin', 'pre-sync'),
    'the PreSync Job created',
    'hookfin',
  );
  assert.ok(
    running.metadata.finalizers?.includes('argocd.argoproj.io/hook-finalizer'),
    JSON.stringify(running.metadata),
  );
  await labelNode(cp.admin, 0, { 'gate-hookfin': 'open' });
  await waitForApp(cp, 'hookfin', 'synced', (a) => operationPhase(a) === 'Succeeded', 90_000);
  const done = await getObj('batch/v1', 'Job', 'hookfin', 'pre-sync');
  assert.ok(done, 'no delete policy but the default: the completed hook stays');
  assert.deepEqual(done.metadata.finalizers ?? [], []);
});

test('a terminated operation takes the hook finalizer off its running hook and deletes it', async () => {
  await sync(app('hookterm'));
  await waitForApp(cp, 'hookterm', 'the hook running', (a) =>
    JSON.stringify(opState(a)?.syncResult ?? {}).includes('"name":"stuck"'),
  );
  const held = await getObj('batch/v1', 'Job', 'hookterm', 'stuck');
  assert.ok(held?.metadata.finalizers?.includes('argocd.argoproj.io/hook-finalizer'));
  // What `argocd app terminate-op` writes (Argo CD's server: an ordinary update of the whole Application); a status write of the controller's meanwhile is a 409: again.
  for (let attempt = 1; ; attempt++) {
    const a = await getApp(cp, 'hookterm');
    const res = await request(cp.admin, {
      method: 'PUT',
      path: '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/hookterm',
      body: { ...a, status: { ...a.status, operationState: { ...opState(a), phase: 'Terminating' } } },
    });
    if (res.status === 200) break;
    assert.ok(res.status === 409 && attempt < 10, res.text);
  }
  const done = await waitForApp(cp, 'hookterm', 'terminated', (a) => operationPhase(a) === 'Failed');
  assert.equal(opState(done)?.message, 'Operation terminated');
  await until(
    'the running hook deleted',
    async () => (await getObj('batch/v1', 'Job', 'hookterm', 'stuck')) === undefined,
  );
  assert.ok((await writes('hookterm')).includes('delete jobs/stuck system:serviceaccount:hookterm:deployer'));
});

test('a PreDelete hook Job runs before any resource is deleted; the deletion waits for it, then cleans it up', async () => {
  await sync(app('predel', {}, ['resources-finalizer.argocd.argoproj.io']));
  const synced = await waitForApp(
    cp,
    'predel',
    'synced, pre-delete finalizers set',
    (a) =>
      operationPhase(a) === 'Succeeded' && finalizersOf(a).includes('pre-delete-finalizer.argocd.argoproj.io/cleanup'),
  );
  assert.deepEqual(finalizersOf(synced), [
    'resources-finalizer.argocd.argoproj.io',
    'pre-delete-finalizer.argocd.argoproj.io',
    'pre-delete-finalizer.argocd.argoproj.io/cleanup',
  ]);
  assert.equal(
    await getObj('batch/v1', 'Job', 'predel', 'pre-job'),
    undefined,
    'a sync does not apply a PreDelete hook',
  );
  await deleteApp(cp, 'predel');
  await present(() => getObj('batch/v1', 'Job', 'predel', 'pre-job'), 'the PreDelete Job created', 'predel');
  await until('the wait logged', () => fx.logs.some((l) => l.includes('Waiting for 1 PreDelete hooks to complete')));
  assert.ok(await getObj('v1', 'ConfigMap', 'predel', 'app-cm'), 'nothing is deleted while the hook runs');
  assert.ok(await getApp(cp, 'predel'));
  await labelNode(cp.admin, 0, { 'gate-predel': 'open' });
  await untilAppGone(cp, 'predel');
  assert.equal(await getObj('v1', 'ConfigMap', 'predel', 'app-cm'), undefined);
  await until('HookSucceeded: the Job deleted', async () => {
    const j = await getObj('batch/v1', 'Job', 'predel', 'pre-job');
    return j === undefined || j.metadata.deletionTimestamp !== undefined;
  });
  const log = await writes('predel');
  const sa = 'system:serviceaccount:predel:deployer';
  const at = (w: string) => log.indexOf(w);
  assert.ok(at(`create jobs/pre-job ${sa}`) >= 0, log.join('\n'));
  assert.ok(at(`delete configmaps/app-cm ${sa}`) > at(`create jobs/pre-job ${sa}`), log.join('\n'));
  assert.ok(at(`delete jobs/pre-job ${sa}`) > at(`delete configmaps/app-cm ${sa}`), log.join('\n'));
});

test('SkipDryRunOnMissingResource=true: a custom resource whose CRD arrives in wave 0 is applied in wave 1', async () => {
  await sync(app('skipdry'));
  // Wave 0 runs (the Job stands for whatever installs the CRD): the unknown kind did not stop the sync.
  await present(() => getObj('batch/v1', 'Job', 'skipdry', 'install-crd'), 'the wave-0 Job created', 'skipdry');
  await applyRaw(cp.admin, GADGET_CRD);
  await until('the Gadget kind served', async () => {
    const res = await request(cp.admin, { path: '/apis/hooks.example.com/v1' });
    return res.status === 200 && res.text.includes('"gadgets"');
  });
  await labelNode(cp.admin, 0, { 'gate-skipdry': 'open' });
  await waitForApp(cp, 'skipdry', 'synced', (a) => operationPhase(a) === 'Succeeded', 90_000);
  assert.ok(await getObj('hooks.example.com/v1', 'Gadget', 'skipdry', 'g1'));
  assert.ok((await writes('skipdry')).includes('patch gadgets/g1 system:serviceaccount:skipdry:deployer'));
});

test('retry.refresh: a retry syncs the commit pushed after the failed attempt, not the one it first resolved', async () => {
  const bad = await fx.repo.commit({ 'retryref/app.yaml': cm('retried', '  labels:\n    bad: "not a label!"\n') });
  await sync(app('retryref'), {
    sync: { revision: bad, prune: true },
    retry: { limit: 10, backoff: { duration: '2s', factor: 1 }, refresh: true },
  });
  await waitForApp(cp, 'retryref', 'a failed attempt', (a) => (opState(a)?.retryCount ?? 0) >= 1);
  const good = await fx.repo.commit({ 'retryref/app.yaml': cm('retried') });
  const a = await waitForApp(cp, 'retryref', 'synced', (x) => operationPhase(x) === 'Succeeded', 90_000);
  assert.equal(opState(a)?.syncResult?.revision, good);
  assert.ok(fx.logs.some((l) => l.includes('Retrying operation with latest revisions. Attempt #')));
  assert.ok(await getObj('v1', 'ConfigMap', 'retryref', 'retried'));
});

test('ServerSideApply=false: the sync is refused naming it, and nothing is applied', async () => {
  await sync(app('csa', { syncPolicy: { syncOptions: ['ServerSideApply=false'] } }));
  const a = await waitForApp(cp, 'csa', 'failed', (x) => operationPhase(x) === 'Failed');
  const message =
    "ServerSideApply=false (the sync's options) is not supported: impersync applies every object server-side " +
    '(client-side apply with last-applied-configuration is not implemented); nothing was applied';
  assert.equal(opState(a)?.message, message);
  assert.equal(condition(a, 'SyncError'), message);
  assert.equal(await getObj('v1', 'ConfigMap', 'csa', 'client-side'), undefined);
  assert.deepEqual(await writes('csa'), []);
});

// Last: the failing hook is created again at each attempt of the deletion, as in Argo CD.
test("a failed PreDelete hook keeps the Application and its resources, with Argo CD's DeletionError", async () => {
  await sync(app('predelfail', {}, ['resources-finalizer.argocd.argoproj.io']));
  await waitForApp(
    cp,
    'predelfail',
    'synced, pre-delete finalizer set',
    (a) => operationPhase(a) === 'Succeeded' && finalizersOf(a).includes('pre-delete-finalizer.argocd.argoproj.io'),
  );
  await deleteApp(cp, 'predelfail');
  const a = await waitForApp(
    cp,
    'predelfail',
    'DeletionError',
    (x) => condition(x, 'DeletionError') !== undefined,
    90_000,
  );
  assert.equal(
    condition(a, 'DeletionError'),
    'error executing pre-delete hooks: PreDelete hook(s) failed: predelfail/bad-pre',
  );
  assert.ok(finalizersOf(a).includes('resources-finalizer.argocd.argoproj.io'));
  assert.ok(await getObj('v1', 'ConfigMap', 'predelfail', 'kept-cm'), 'its resources are not deleted');
  assert.ok(!(await writes('predelfail')).some((w) => w.startsWith('delete configmaps/')));
});
