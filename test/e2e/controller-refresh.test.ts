// Periodic refresh and self-heal, retries, apps in any namespace, and global projects: the parts of
// the controller that react to time and to objects other than the Application.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ApiError,
  applyRaw,
  createNamespace,
  deleteRaw,
  getRaw,
  grantRole,
  requestOk,
  startControlPlane,
} from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  application,
  condition,
  deployer,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  // Apps in any namespace: the controller lists Applications cluster-wide.
  await grantRole(cp.admin, {
    name: 'impersync-apps-anywhere',
    to: 'controller',
    rules: [
      { apiGroups: ['argoproj.io'], resources: ['applications'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
      { apiGroups: ['argoproj.io'], resources: ['applications/status'], verbs: ['get', 'update', 'patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ],
  });
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true', 'timeout.reconciliation': '2s' });
  // A wave waits longer than any test here takes to act on it: the terminating test's operation must
  // end terminated, never timed out first because the machine was slow to get to its termination.
  fx = await startFixture(cp, guestbookFiles(), { applicationNamespaces: ['team-*'], waitTimeoutMs: 120_000 });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('periodic refresh (timeout.reconciliation) finds drift no event announced, and self-heal repairs it', async () => {
  await deployer(cp, 'heal', 'deployer');
  await applyRaw(
    cp.admin,
    project('heal', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'heal', defaultServiceAccount: 'deployer' }],
    }),
  );
  const app = application('heal', fx.repo.url, {
    project: 'heal',
    destination: { server: IN_CLUSTER, namespace: 'heal' },
  });
  (app['spec'] as { syncPolicy: { automated: Record<string, boolean> } }).syncPolicy.automated['selfHeal'] = true;
  await applyRaw(cp.admin, app);
  await waitForApp(cp, 'heal', 'first sync', (a) => operationPhase(a) === 'Succeeded');
  const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'guestbook-config', namespace: 'heal' };
  await deleteRaw(cp.admin, ref);
  const healed = await waitForApp(
    cp,
    'heal',
    'second sync',
    (a) => ((a.status?.['history'] ?? []) as unknown[]).length >= 2 && operationPhase(a) === 'Succeeded',
    30_000,
  );
  assert.ok(await getRaw(cp.admin, ref), 'the deleted ConfigMap is back');
  assert.equal(((healed.status?.['history'] ?? []) as unknown[]).length, 2, 'exactly one self-heal sync');
});

test("a refresh Argo CD's API server asks for (refresh and refresh-timestamp) is done, then both annotations removed", async () => {
  await deployer(cp, 'refreshts', 'deployer');
  await applyRaw(
    cp.admin,
    project('refreshts', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'refreshts', defaultServiceAccount: 'deployer' }],
    }),
  );
  await applyRaw(
    cp.admin,
    application('refreshts', fx.repo.url, {
      project: 'refreshts',
      destination: { server: IN_CLUSTER, namespace: 'refreshts' },
    }),
  );
  const first = await waitForApp(cp, 'refreshts', 'first sync', (a) => operationPhase(a) === 'Succeeded');
  const before = (first.status?.['reconciledAt'] as string | undefined) ?? '';
  // What Argo CD's RefreshApp (argocd app get --refresh) patches: both, the timestamp unique per request.
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/refreshts',
    body: {
      metadata: {
        annotations: {
          'argocd.argoproj.io/refresh': 'normal',
          'argocd.argoproj.io/refresh-timestamp': '2026-12-01T23:00:00.123456789Z',
        },
      },
    },
    contentType: 'application/merge-patch+json',
  });
  const done = await waitForApp(
    cp,
    'refreshts',
    'refreshed, both annotations gone',
    (a) => {
      const annotations = (a.metadata as { annotations?: Record<string, string> }).annotations ?? {};
      return (
        annotations['argocd.argoproj.io/refresh'] === undefined &&
        annotations['argocd.argoproj.io/refresh-timestamp'] === undefined
      );
    },
    30_000,
  );
  assert.ok(((done.status?.['reconciledAt'] as string | undefined) ?? '') >= before, 'a refresh ran');
});

test('a failing sync is retried per syncPolicy.retry, then ends Failed with the retry count', async () => {
  await createNamespace(cp.admin, 'retry');
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'cm-only', namespace: 'retry' },
  });
  await grantRole(cp.admin, {
    name: 'cm-only',
    namespace: 'retry',
    to: { serviceAccount: 'cm-only', namespace: 'retry' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
  });
  await applyRaw(
    cp.admin,
    project('retry', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'retry', defaultServiceAccount: 'cm-only' }],
    }),
  );
  const app = application('retry', fx.repo.url, {
    project: 'retry',
    destination: { server: IN_CLUSTER, namespace: 'retry' },
    automated: false,
  });
  await applyRaw(cp.admin, {
    ...app,
    operation: {
      sync: {},
      initiatedBy: { username: 'alice' },
      retry: { limit: 2, backoff: { duration: '1s', factor: 1 } },
    },
  });
  const failed = await waitForApp(
    cp,
    'retry',
    'Failed after retries, operation cleared',
    (a) => operationPhase(a) === 'Failed' && a['operation'] === undefined,
    60_000,
  );
  const state = failed.status?.['operationState'] as { retryCount: number; message: string };
  assert.equal(state.retryCount, 2);
  assert.match(state.message, /services .* is forbidden: User "system:serviceaccount:retry:cm-only"/);
  assert.match(condition(failed, 'SyncError') ?? '', /forbidden/);
  assert.equal(failed['operation'], undefined);
});

test("apps in any namespace: reconciled when the project's sourceNamespaces allow the namespace, refused otherwise", async () => {
  await createNamespace(cp.admin, 'team-x');
  await createNamespace(cp.admin, 'team-y');
  await deployer(cp, 'x-target', 'deployer');
  await applyRaw(
    cp.admin,
    project('teams', {
      sourceNamespaces: ['team-x'],
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'x-target', defaultServiceAccount: 'deployer' }],
    }),
  );
  for (const ns of ['team-x', 'team-y']) {
    const app = application('app', fx.repo.url, {
      project: 'teams',
      destination: { server: IN_CLUSTER, namespace: 'x-target' },
    });
    app.metadata.namespace = ns;
    await applyRaw(cp.admin, app);
  }
  const get = async (ns: string) =>
    (await getRaw(cp.admin, {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      name: 'app',
      namespace: ns,
    })) as { status?: Record<string, unknown> } | undefined;
  const end = Date.now() + 60_000;
  let x = await get('team-x');
  let y = await get('team-y');
  while (!(operationPhase(x ?? {}) === 'Succeeded' && condition(y ?? {}, 'InvalidSpecError'))) {
    if (Date.now() > end) assert.fail(`team-x: ${JSON.stringify(x?.status)}\nteam-y: ${JSON.stringify(y?.status)}`);
    await new Promise((r) => setTimeout(r, 250));
    [x, y] = [await get('team-x'), await get('team-y')];
  }
  assert.match(
    condition(y ?? {}, 'InvalidSpecError') ?? '',
    /namespace 'team-y' is not permitted to use project 'teams'/,
  );
  // The tracking id of an app outside the control namespace is <namespace>_<name>, as Argo CD's.
  const cm = await getRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: 'guestbook-config',
    namespace: 'x-target',
  });
  const annotations = (cm?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations ?? {};
  assert.match(String(annotations['argocd.argoproj.io/tracking-id']), /^team-x_app:/);
});

test('a global project change requeues the Applications of the projects inheriting from it', async () => {
  await deployer(cp, 'inherit', 'global-deployer');
  await deployer(cp, 'inherit', 'other-deployer');
  await setSettings(cp, {
    'application.sync.impersonation.enabled': 'true',
    'timeout.reconciliation': '0s',
    globalProjects: '- projectName: platform\n  labelSelector:\n    matchLabels:\n      tier: tenant\n',
  });
  await applyRaw(
    cp.admin,
    project('platform', {
      destinationServiceAccounts: [
        { server: IN_CLUSTER, namespace: 'inherit', defaultServiceAccount: 'global-deployer' },
      ],
    }),
  );
  await applyRaw(cp.admin, project('tenant', {}, { tier: 'tenant' }));
  await applyRaw(
    cp.admin,
    application('inherit', fx.repo.url, {
      project: 'tenant',
      destination: { server: IN_CLUSTER, namespace: 'inherit' },
      automated: false,
    }),
  );
  await waitForApp(cp, 'inherit', 'identity from the global project', (a) =>
    (condition(a, 'ImpersonationInfo') ?? '').includes(
      "system:serviceaccount:inherit:global-deployer (destinationServiceAccounts[0] of AppProject 'platform'",
    ),
  );
  await applyRaw(
    cp.admin,
    project('platform', {
      destinationServiceAccounts: [
        { server: IN_CLUSTER, namespace: 'inherit', defaultServiceAccount: 'other-deployer' },
      ],
    }),
  );
  // No periodic refresh runs (timeout.reconciliation 0s): only the requeue can bring the change, so
  // the default wait, as long as a loaded machine needs, still proves it.
  await waitForApp(cp, 'inherit', 'identity follows the global project', (a) =>
    (condition(a, 'ImpersonationInfo') ?? '').includes('system:serviceaccount:inherit:other-deployer'),
  );
});

test('terminating a running operation (phase Terminating) aborts the sync between waves: Failed, later waves not applied', async () => {
  await deployer(cp, 'slow', 'deployer');
  await fx.repo.commit(
    {
      'waves/deploy.yaml':
        'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: never-ready\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: never-ready}\n  template:\n    metadata:\n      labels: {app: never-ready}\n    spec:\n      containers:\n      - name: c\n        image: registry.invalid/none:1\n',
      'waves/later.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: later\n  annotations:\n    argocd.argoproj.io/sync-wave: "1"\ndata: {a: "1"}\n',
    },
    'waves',
  );
  await applyRaw(
    cp.admin,
    project('slow', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'slow', defaultServiceAccount: 'deployer' }],
    }),
  );
  const app = application('slow', fx.repo.url, {
    project: 'slow',
    path: 'waves',
    destination: { server: IN_CLUSTER, namespace: 'slow' },
    automated: false,
  });
  await applyRaw(cp.admin, { ...app, operation: { sync: {}, initiatedBy: { username: 'alice' } } });
  await waitForApp(cp, 'slow', 'Running', (a) => operationPhase(a) === 'Running');
  // What `argocd app terminate-op` writes. The controller may write status between our read and our
  // write (409 Conflict): read again and retry, as Argo CD's server does (an ordinary update of the whole Application).
  for (let attempt = 1; ; attempt++) {
    const running = await waitForApp(cp, 'slow', 'Running', (a) => operationPhase(a) === 'Running');
    const state = running.status?.['operationState'] as Record<string, unknown>;
    try {
      await requestOk(cp.admin, {
        method: 'PUT',
        path: `/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/slow`,
        body: { ...running, status: { ...running.status, operationState: { ...state, phase: 'Terminating' } } },
      });
      break;
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 409) || attempt >= 10) throw err;
    }
  }
  const done = await waitForApp(cp, 'slow', 'Failed: terminated', (a) => operationPhase(a) === 'Failed');
  assert.equal((done.status?.['operationState'] as { message: string }).message, 'Operation terminated');
  assert.equal(
    await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'later', namespace: 'slow' }),
    undefined,
  );
});

test('an invalid spec (missing project, unknown cluster) is an InvalidSpecError, an invalid destinationServiceAccounts entry what Argo CD makes of it, and nothing is synced', async () => {
  await applyRaw(
    cp.admin,
    application('no-project', fx.repo.url, {
      project: 'does-not-exist',
      destination: { server: IN_CLUSTER, namespace: 'nowhere' },
    }),
  );
  await applyRaw(
    cp.admin,
    application('no-cluster', fx.repo.url, {
      project: 'heal',
      destination: { name: 'mars', namespace: 'nowhere' },
    }),
  );
  await applyRaw(
    cp.admin,
    project('invalid', {
      destinationServiceAccounts: [
        { server: '!https://kubernetes.default.svc', namespace: 'nowhere', defaultServiceAccount: 'sa' },
      ],
    }),
  );
  await applyRaw(
    cp.admin,
    application('invalid-project', fx.repo.url, {
      project: 'invalid',
      destination: { server: IN_CLUSTER, namespace: 'nowhere' },
    }),
  );
  const a = await waitForApp(
    cp,
    'no-project',
    'InvalidSpecError',
    (x) => condition(x, 'InvalidSpecError') !== undefined,
  );
  assert.equal(condition(a, 'InvalidSpecError'), 'Application referencing project does-not-exist which does not exist');
  const b = await waitForApp(
    cp,
    'no-cluster',
    'InvalidSpecError',
    (x) => condition(x, 'InvalidSpecError') !== undefined,
  );
  assert.match(
    condition(b, 'InvalidSpecError') ?? '',
    /spec\.destination\.name: destination cluster name 'mars' not found/,
  );
  // Argo CD's controller never validates the project: `!https://...` is a glob that matches no
  // server, so no entry matches and enforcement denies; the invalid entry is named as a warning.
  const c = await waitForApp(
    cp,
    'invalid-project',
    'ComparisonError and ImpersonationWarning',
    (x) => condition(x, 'ComparisonError') !== undefined && condition(x, 'ImpersonationWarning') !== undefined,
  );
  assert.equal(
    condition(c, 'ComparisonError'),
    'no matching service account found for destination server https://kubernetes.default.svc and namespace nowhere',
  );
  assert.match(
    condition(c, 'ImpersonationWarning') ?? '',
    /AppProject invalid: spec\.destinationServiceAccounts\[0\]\.server: server has an invalid format, '!https:\/\/kubernetes\.default\.svc'/,
  );
  assert.equal(condition(c, 'InvalidSpecError'), undefined);
  for (const x of [a, b, c]) {
    assert.equal((x.status?.['sync'] as { status: string }).status, 'Unknown');
    assert.equal(x['operation'], undefined, 'no automated sync started');
  }
  assert.deepEqual(
    (await cp.readAudit()).filter((r) => r.namespace === 'nowhere').map((r) => r.requestURI),
    [],
  );
});

test('a typo in the fifth destinationServiceAccounts entry refuses nothing the first entry decides: it syncs as that ServiceAccount, warned', async () => {
  await deployer(cp, 'typo', 'deployer');
  await applyRaw(
    cp.admin,
    project('typo', {
      destinationServiceAccounts: [
        { server: IN_CLUSTER, namespace: 'typo', defaultServiceAccount: 'deployer' },
        { server: IN_CLUSTER, namespace: 'a', defaultServiceAccount: 'a' },
        { server: IN_CLUSTER, namespace: 'b', defaultServiceAccount: 'b' },
        { server: IN_CLUSTER, namespace: 'c', defaultServiceAccount: 'c' },
        { server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'bad*sa' },
      ],
    }),
  );
  const before = (await cp.readAudit()).length;
  await applyRaw(
    cp.admin,
    application('typo-app', fx.repo.url, {
      project: 'typo',
      destination: { server: IN_CLUSTER, namespace: 'typo' },
      automated: true,
    }),
  );
  const app = await waitForApp(
    cp,
    'typo-app',
    'Synced after an automated sync',
    (x) =>
      (x.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced' &&
      (x.status?.['operationState'] as { phase?: string } | undefined)?.phase === 'Succeeded',
  );
  assert.match(
    condition(app, 'ImpersonationWarning') ?? '',
    /^AppProject typo: spec\.destinationServiceAccounts\[4\]\.defaultServiceAccount: defaultServiceAccount has an invalid format, 'bad\*sa'/,
  );
  // The controller's own requests in the namespace since the Application was created (the test's
  // setup and kube-controller-manager write there too).
  const writes = (await cp.readAudit())
    .slice(before)
    .filter((r) => r.user === 'impersync-controller' && r.namespace === 'typo')
    .filter((r) => !['get', 'list', 'watch'].includes(r.verb));
  assert.ok(writes.length > 0, 'the sync wrote to the destination');
  assert.deepEqual([...new Set(writes.map((r) => r.impersonatedUser))], ['system:serviceaccount:typo:deployer']);
});

test('a graceful stop during a sync leaves the operation Running (no waiting on waves); the next controller finishes it', async () => {
  await deployer(cp, 'handover', 'deployer');
  await fx.repo.commit(
    {
      'lbwaves/lb.yaml':
        'apiVersion: v1\nkind: Service\nmetadata:\n  name: lb\nspec:\n  type: LoadBalancer\n  ports:\n  - port: 80\n',
      'lbwaves/after.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n  annotations:\n    argocd.argoproj.io/sync-wave: "1"\ndata: {a: "1"}\n',
    },
    'lb waves',
  );
  await applyRaw(
    cp.admin,
    project('handover', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'handover', defaultServiceAccount: 'deployer' }],
    }),
  );
  const app = application('handover', fx.repo.url, {
    project: 'handover',
    path: 'lbwaves',
    destination: { server: IN_CLUSTER, namespace: 'handover' },
    automated: false,
  });
  await applyRaw(cp.admin, { ...app, operation: { sync: {}, initiatedBy: { username: 'alice' } } });
  const lbRef = { apiVersion: 'v1', kind: 'Service', name: 'lb', namespace: 'handover' };
  const end = Date.now() + 30_000;
  while (!(await getRaw(cp.admin, lbRef))) {
    if (Date.now() > end) assert.fail('wave 0 was never applied');
    await new Promise((r) => setTimeout(r, 100));
  }
  const startedAt = (
    (await waitForApp(cp, 'handover', 'Running', (a) => operationPhase(a) === 'Running')).status?.[
      'operationState'
    ] as { startedAt: string }
  ).startedAt;
  await fx.restart(async () => {
    // Stopping left the operation Running (no step holds a worker waiting on the wave, so there is
    // no wait for stop to cut short).
    const app = await waitForApp(cp, 'handover', 'still Running', (a) => operationPhase(a) === 'Running');
    assert.equal((app.status?.['operationState'] as { startedAt: string }).startedAt, startedAt);
    const lb = await getRaw(cp.admin, lbRef);
    await requestOk(cp.admin, {
      method: 'PUT',
      path: '/api/v1/namespaces/handover/services/lb/status',
      body: { ...lb, status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } },
    });
  });
  const done = await waitForApp(cp, 'handover', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
  assert.equal((done.status?.['operationState'] as { startedAt: string }).startedAt, startedAt);
  assert.ok(await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'after', namespace: 'handover' }));
});
