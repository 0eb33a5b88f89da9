// impersync in place of Argo CD's application controller, on either Application CRD: Argo CD's
// shape (no status subresource; test/e2e/argocd-crd/, a faithful minimal schema) and impersync's
// own (deploy/crds/, no status subresource either), and a CRD with a status subresource put in
// place while the controller runs. Status is written as the CRD has it (discovery, asked again when
// a write says the CRD changed), a stray status Argo CD's server leaves is replaced, and an
// operation is terminated the way Argo CD's server does it (TerminateOperation: phase Terminating
// in an ordinary update of the whole Application) with Argo CD's outcome, on both shapes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { loadCrds } from '../../src/controlplane/crds.ts';
import { applyRaw, request } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  application,
  getApp,
  NS,
  operationPhase,
  startDeployersPlane,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

const ARGOCD_CRD_DIR = fileURLToPath(new URL('./argocd-crd/', import.meta.url));
const APPS = `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications`;

const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  a: "1"\n`;
/** A PreSync hook Job whose pod selects a node label nothing has: it runs until the operation is terminated. */
const stuckHook = `apiVersion: batch/v1
kind: Job
metadata:
  name: stuck
  annotations:
    argocd.argoproj.io/hook: PreSync
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      nodeSelector:
        never: open
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "exit 0"]
`;

function app(name: string, automated: boolean) {
  return application(name, fx.repo.url, {
    project: 'dropin',
    path: name,
    automated,
    destination: { server: 'https://kubernetes.default.svc', namespace: name },
  });
}

type App = Awaited<ReturnType<typeof getApp>>;
const syncStatus = (a: App) => (a.status?.['sync'] as { status?: string } | undefined)?.status;
const healthStatus = (a: App) => (a.status?.['health'] as { status?: string } | undefined)?.status;
const opState = (a: App) =>
  a.status?.['operationState'] as { phase?: string; message?: string; syncResult?: unknown } | undefined;

/** The controller's writes of an Application, as `verb subresource` ('' for the Application itself). */
async function controllerWrites(name: string, since = 0): Promise<string[]> {
  return (await cp.readAudit())
    .slice(since)
    .filter(
      (r) =>
        r.user === cp.controllerUserName &&
        r.resource === 'applications' &&
        r.name === name &&
        ['update', 'patch'].includes(r.verb) &&
        (r.code ?? 0) < 400,
    )
    .map((r) => `${r.verb} ${r.subresource ?? ''}`.trim());
}

/**
 * Puts an Application CRD in place (server-side apply, as the control plane installs deploy/crds/):
 * Argo CD's shape (`dir`), impersync's, or impersync's with a status subresource added (the shape of
 * impersync's earlier releases).
 */
async function useCrd(dir: string | undefined, subresource = false): Promise<void> {
  const crd = (await loadCrds(dir)).find((c) => c.metadata.name === 'applications.argoproj.io') as unknown as {
    spec: { versions: Array<Record<string, unknown>> };
  };
  if (subresource) crd.spec.versions = crd.spec.versions.map((v) => ({ ...v, subresources: { status: {} } }));
  const res = await request(cp.admin, {
    method: 'PATCH',
    path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/applications.argoproj.io?fieldManager=impersync&force=true',
    contentType: 'application/apply-patch+yaml',
    body: crd,
  });
  assert.ok(res.status < 300, res.text);
}

/** Until discovery serves the Application kind with (or without) applications/status. */
async function untilDiscovery(subresource: boolean): Promise<void> {
  const end = Date.now() + 30_000;
  for (;;) {
    const res = await request(cp.admin, { path: '/apis/argoproj.io/v1alpha1' });
    const names = ((res.body as { resources?: Array<{ name: string }> }).resources ?? []).map((r) => r.name);
    if (names.includes('applications') && names.includes('applications/status') === subresource) return;
    assert.ok(Date.now() < end, `discovery still lists ${names.join(', ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** What Argo CD's server's TerminateOperation does: phase Terminating, an ordinary update of the whole object. */
async function terminateAsArgoCDServer(name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const a = await getApp(cp, name);
    const res = await request(cp.admin, {
      method: 'PUT',
      path: `${APPS}/${name}`,
      body: { ...a, status: { ...a.status, operationState: { ...opState(a), phase: 'Terminating' } } },
    });
    if (res.status === 200) return;
    // The controller wrote meanwhile (409): read again, as Argo CD's server retries on conflict.
    assert.ok(res.status === 409 && attempt < 10, res.text);
  }
}

async function terminatedLikeArgoCD(name: string): Promise<void> {
  await applyRaw(cp.admin, {
    ...app(name, false),
    operation: { sync: { revision: 'HEAD' }, initiatedBy: { username: 'alice' } },
  });
  await waitForApp(cp, name, 'the hook running', (a) =>
    JSON.stringify(opState(a)?.syncResult ?? {}).includes('"name":"stuck"'),
  );
  await terminateAsArgoCDServer(name);
  const done = await waitForApp(cp, name, 'terminated', (a) => operationPhase(a) === 'Failed');
  // gitops-engine's sync context: Terminate() ends the operation with exactly this message.
  assert.equal(opState(done)?.message, 'Operation terminated');
  assert.equal(done['operation'], undefined, 'the operation is cleared');
}

before(async () => {
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'dropin',
    namespaces: ['argo-shape', 'argo-term', 'imp-term', 'switch', 'both', 'pruned', 'waits'],
  });
  await useCrd(ARGOCD_CRD_DIR);
  await untilDiscovery(false);
  fx = await startFixture(cp, {
    'argo-shape/cm.yaml': cm('shape'),
    'argo-term/hook.yaml': stuckHook,
    'argo-term/cm.yaml': cm('never'),
    'imp-term/hook.yaml': stuckHook,
    'imp-term/cm.yaml': cm('never'),
    'switch/cm.yaml': cm('switch'),
    'both/cm.yaml': cm('both'),
    'pruned/cm.yaml': cm('pruned'),
    // Wave 0 never becomes healthy (its pod selects a node label nothing has); wave 1 waits for it.
    'waits/job.yaml': stuckHook
      .replace('    argocd.argoproj.io/hook: PreSync', '    argocd.argoproj.io/sync-wave: "0"')
      .replace('name: stuck', 'name: slow'),
    'waits/cm.yaml': cm('after').replace(
      'name: after',
      'name: after\n  annotations:\n    argocd.argoproj.io/sync-wave: "1"',
    ),
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test("Argo CD's CRD: an automated Application syncs, its status written with the Application, never through /status", async () => {
  await applyRaw(cp.admin, app('argo-shape', true));
  const done = await waitForApp(
    cp,
    'argo-shape',
    'Synced, Healthy, operation done',
    (a) =>
      syncStatus(a) === 'Synced' &&
      healthStatus(a) === 'Healthy' &&
      operationPhase(a) === 'Succeeded' &&
      a['operation'] === undefined,
  );
  assert.ok((done.status?.['health'] as { lastTransitionTime?: string }).lastTransitionTime);
  const writes = await controllerWrites('argo-shape');
  assert.ok(writes.length > 0);
  assert.deepEqual(
    writes.filter((w) => w.endsWith('status')),
    [],
    `no write went to the subresource the CRD lacks: ${writes.join(', ')}`,
  );
});

test('Argo CD\'s CRD: the status Argo CD\'s server leaves (sync.status "") is replaced, not a reason to stop', async () => {
  const before = await waitForApp(cp, 'argo-shape', 'Synced', (a) => syncStatus(a) === 'Synced');
  const res = await request(cp.admin, {
    method: 'PUT',
    path: `${APPS}/argo-shape`,
    body: {
      ...before,
      metadata: {
        ...(before['metadata'] as object),
        annotations: { 'argocd.argoproj.io/refresh': 'normal' },
      },
      status: { ...before.status, sync: { ...(before.status?.['sync'] as object), status: '' } },
    },
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(syncStatus(res.body as App), '', 'the API server keeps what was written');
  await waitForApp(
    cp,
    'argo-shape',
    'the stray status replaced',
    (a) =>
      syncStatus(a) === 'Synced' &&
      !(a['metadata'] as { annotations?: Record<string, string> }).annotations?.['argocd.argoproj.io/refresh'],
  );
});

test("Argo CD's CRD: terminated as Argo CD's server does it, the operation ends Failed: Operation terminated", async () => {
  await terminatedLikeArgoCD('argo-term');
});

test("impersync's CRD: terminated as Argo CD's server does it, the operation ends the same way", async () => {
  await useCrd(undefined);
  await untilDiscovery(false);
  await terminatedLikeArgoCD('imp-term');
});

test('the CRD replaced while the controller runs: /status while it has the subresource, the Application once it has not', async () => {
  await useCrd(undefined, true);
  await untilDiscovery(true);
  let since = (await cp.readAudit()).length;
  await applyRaw(cp.admin, app('switch', true));
  await waitForApp(cp, 'switch', 'Synced', (a) => syncStatus(a) === 'Synced' && operationPhase(a) === 'Succeeded');
  let writes = await controllerWrites('switch', since);
  assert.ok(writes.includes('update status'), `the status went through /status: ${writes.join(', ')}`);

  // Argo CD's shape again: the next write to /status answers 404, discovery is asked again, and the
  // status is written with the Application.
  await useCrd(ARGOCD_CRD_DIR);
  await untilDiscovery(false);
  since = (await cp.readAudit()).length;
  await applyRaw(cp.admin, {
    ...app('switch', true),
    operation: { sync: { revision: 'HEAD' }, initiatedBy: { username: 'bob' } },
  });
  const done = await waitForApp(
    cp,
    'switch',
    'synced again',
    (a) =>
      a['operation'] === undefined &&
      operationPhase(a) === 'Succeeded' &&
      ((a.status?.['history'] ?? []) as unknown[]).length === 2,
  );
  assert.equal(syncStatus(done), 'Synced');
  writes = await controllerWrites('switch', since);
  assert.ok(writes.includes('patch'), `the status went with the Application: ${writes.join(', ')}`);
  assert.ok(!writes.includes('update status'), writes.join(', '));
});

test("Argo CD's application controller running in the control namespace: one condition, nothing synced, until it stops", async () => {
  // What Argo CD's StatefulSet runs, as the detection reads it: a Pod labelled
  // app.kubernetes.io/name=argocd-application-controller in the control namespace, Ready.
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'argocd-application-controller-0',
      namespace: NS,
      labels: { 'app.kubernetes.io/name': 'argocd-application-controller' },
    },
    spec: { containers: [{ name: 'application-controller', image: 'quay.io/argoproj/argocd:v3.6.1' }] },
  };
  await applyRaw(cp.admin, pod);
  const podPath = `/api/v1/namespaces/${NS}/pods/argocd-application-controller-0`;
  const ready = await request(cp.admin, {
    method: 'PATCH',
    path: `${podPath}/status`,
    contentType: 'application/merge-patch+json',
    body: {
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date().toISOString() }],
      },
    },
  });
  assert.equal(ready.status, 200, ready.text);
  const refusal = (a: App) =>
    ((a.status?.['conditions'] ?? []) as Array<{ type: string; message: string }>).find(
      (c) => c.type === 'ControllerConflictError',
    )?.message;
  await applyRaw(cp.admin, app('both', true));
  const held = await waitForApp(cp, 'both', 'the conflict condition', (a) => refusal(a) !== undefined);
  assert.match(
    refusal(held) ?? '',
    /^Argo CD's application controller is running in namespace argocd \(Ready Pod argocd-application-controller-0 labelled app\.kubernetes\.io\/name=argocd-application-controller\)/,
  );
  assert.equal(operationPhase(held), undefined, 'no sync started');
  await new Promise((r) => setTimeout(r, 2000));
  const cmInDest = await request(cp.admin, { path: '/api/v1/namespaces/both/configmaps/both' });
  assert.equal(cmInDest.status, 404, 'nothing applied while Argo CD runs');
  assert.equal(
    fx.logs.filter((l) => l.includes("Argo CD's application controller is running in namespace argocd")).length,
    1,
    'one log line',
  );

  // Scaled to 0: its Pod goes; impersync reconciles and syncs.
  const gone = await request(cp.admin, { method: 'DELETE', path: `${podPath}?gracePeriodSeconds=0` });
  assert.ok(gone.status < 300, gone.text);
  const done = await waitForApp(
    cp,
    'both',
    'synced once Argo CD stopped',
    (a) => refusal(a) === undefined && syncStatus(a) === 'Synced' && operationPhase(a) === 'Succeeded',
  );
  assert.equal(done.status?.['controllerNamespace'], NS);
});

test("a CRD whose status schema drops what it does not list (as Argo CD's does): a refresh that finds nothing new writes nothing", async () => {
  // Argo CD's shape with a typed status, as Argo CD's CRD has it, that lists neither impersync's own
  // `identity` in history nor `controllerNamespace` (as Argo CD's CRDs before it had that field):
  // the API server prunes both from every write, and a refresh computes controllerNamespace anew.
  const crd = (await loadCrds(ARGOCD_CRD_DIR)).find(
    (c) => c.metadata.name === 'applications.argoproj.io',
  ) as unknown as {
    spec: { versions: Array<{ schema: { openAPIV3Schema: { properties: Record<string, unknown> } } }> };
  };
  const open = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  const history = {
    type: 'array',
    items: {
      type: 'object',
      properties: Object.fromEntries(
        ['id', 'revision', 'deployedAt', 'deployStartedAt'].map((k) => [
          k,
          { type: k === 'id' ? 'integer' : 'string' },
        ]),
      ),
    },
  };
  for (const v of crd.spec.versions)
    v.schema.openAPIV3Schema.properties['status'] = {
      type: 'object',
      properties: {
        ...Object.fromEntries(['sync', 'health', 'summary'].map((k) => [k, open])),
        // As Argo CD's CRD types it: no `progress` (nor impersync's `generation`).
        operationState: {
          type: 'object',
          properties: {
            operation: open,
            phase: { type: 'string' },
            message: { type: 'string' },
            startedAt: { type: 'string' },
            finishedAt: { type: 'string' },
            retryCount: { type: 'integer' },
            syncResult: open,
          },
        },
        history,
        resources: { type: 'array', items: open },
        conditions: { type: 'array', items: open },
        reconciledAt: { type: 'string' },
        sourceType: { type: 'string' },
      },
    };
  const res = await request(cp.admin, {
    method: 'PATCH',
    path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/applications.argoproj.io?fieldManager=impersync&force=true',
    contentType: 'application/apply-patch+yaml',
    body: crd,
  });
  assert.ok(res.status < 300, res.text);
  await untilDiscovery(false);
  await applyRaw(cp.admin, app('pruned', true));
  const synced = await waitForApp(
    cp,
    'pruned',
    'synced, its history recorded',
    (a) => operationPhase(a) === 'Succeeded' && ((a.status?.['history'] ?? []) as unknown[]).length === 1,
  );
  assert.equal(
    ((synced.status?.['history'] ?? []) as Array<Record<string, unknown>>)[0]?.['identity'],
    undefined,
    'the schema pruned it',
  );
  assert.equal(synced.status?.['controllerNamespace'], undefined, 'the schema pruned it');
  // Settle, then ask for a refresh: Argo CD's controller writes reconciledAt at every refresh asked
  // for, so one status write, then the annotation's removal; and nothing after, though the schema
  // prunes what impersync sends.
  await new Promise((r) => setTimeout(r, 3000));
  const since = (await cp.readAudit()).length;
  await request(cp.admin, {
    method: 'PATCH',
    path: `${APPS}/pruned`,
    contentType: 'application/merge-patch+json',
    body: { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'normal' } } },
  });
  await waitForApp(
    cp,
    'pruned',
    'refreshed',
    (a) => !(a['metadata'] as { annotations?: Record<string, string> }).annotations?.['argocd.argoproj.io/refresh'],
  );
  await new Promise((r) => setTimeout(r, 1500));
  assert.deepEqual(await controllerWrites('pruned', since), ['patch', 'patch'], 'reconciledAt, then the annotation');
  const settled = (await cp.readAudit()).length;
  await new Promise((r) => setTimeout(r, 3000));
  assert.deepEqual(await controllerWrites('pruned', settled), [], 'no status rewritten after');
});

test("the same CRD drops operationState.progress: where a sync stands survives in an annotation, so a wave's wait still times out", async () => {
  await applyRaw(cp.admin, {
    ...app('waits', false),
    operation: { sync: { revision: 'HEAD' }, initiatedBy: { username: 'alice' } },
  });
  const waiting = await waitForApp(cp, 'waits', 'waiting for wave 0', (a) =>
    JSON.stringify(opState(a)?.syncResult ?? {}).includes('"name":"slow"'),
  );
  assert.equal((waiting.status?.['operationState'] as Record<string, unknown>)['progress'], undefined, 'pruned');
  const kept = (waiting['metadata'] as { annotations?: Record<string, string> }).annotations?.[
    'impersync.io/operation-progress'
  ];
  assert.ok(kept && JSON.parse(kept).progress.waitingSince, `the progress annotation: ${kept}`);
  // The fixture's wave wait timeout is 20 s: it counts from when wave 0 was applied, not from each step.
  const done = await waitForApp(cp, 'waits', 'failed: wave 0 timed out', (a) => operationPhase(a) === 'Failed', 60_000);
  assert.match(opState(done)?.message ?? '', /one or more synchronization tasks/);
  const after = await request(cp.admin, { path: '/api/v1/namespaces/waits/configmaps/after' });
  assert.equal(after.status, 404, 'wave 1 never applied');
  assert.equal(
    (done['metadata'] as { annotations?: Record<string, string> }).annotations?.['impersync.io/operation-progress'],
    undefined,
    'removed once the operation is over',
  );
  // Back to the fixture for any test that follows.
  await useCrd(ARGOCD_CRD_DIR);
});
