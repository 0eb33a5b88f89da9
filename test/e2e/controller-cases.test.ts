// The design document's special cases and remote-cluster examples, end to end through the
// controller: `namespace:name` ServiceAccounts, first match among several, manifests that hard-code
// other namespaces, no destination namespace, and examples 3 and 4 against a second instance.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, createServiceAccount, grantRole, requestOk, startControlPlane } from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import {
  application,
  condition,
  deployer,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  NS,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let remote: TestControlPlane;
let fx: Fixture;

const writes = (records: AuditRecord[], namespace: string, user: string) =>
  records.filter(
    (r) => r.namespace === namespace && r.user === user && ['create', 'patch', 'update'].includes(r.verb) && !r.dryRun,
  );

before(async () => {
  [cp, remote] = await Promise.all([
    startControlPlane(),
    // The seed's example 4 credential may impersonate users, groups and ServiceAccounts, not
    // impersync's user extras: its requests go without them (checked in that test).
    startControlPlane({ attributionExempt: (r) => r.user === 'system:serviceaccount:default:argocd-admin' }),
  ]);
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  fx = await startFixture(
    cp,
    guestbookFiles({
      'other/configmap.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: here\ndata: {a: "1"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hard-coded\n  namespace: team-b\ndata: {b: "2"}\n',
      'nodest/configmap.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nodest\n  namespace: argocd\ndata: {c: "3"}\n',
    }),
  );
});

after(async () => {
  await fx?.stop();
  await Promise.all([cp?.stop(), remote?.stop()]);
});

test('a namespace:name ServiceAccount is used verbatim (example 5)', async () => {
  await createServiceAccount(cp.admin, NS, 'deployers-sa');
  await deployer(cp, 'team-five', 'unused');
  await grantRole(cp.admin, {
    name: 'five',
    namespace: 'team-five',
    to: { serviceAccount: 'deployers-sa', namespace: NS },
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  await applyRaw(
    cp.admin,
    project('five', {
      destinationServiceAccounts: [
        { server: IN_CLUSTER, namespace: 'team-five', defaultServiceAccount: `${NS}:deployers-sa` },
      ],
    }),
  );
  await applyRaw(
    cp.admin,
    application('five', fx.repo.url, {
      project: 'five',
      destination: { server: IN_CLUSTER, namespace: 'team-five' },
    }),
  );
  await waitForApp(cp, 'five', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
  const w = writes(await cp.readAudit(), 'team-five', cp.controllerUserName);
  assert.ok(w.length >= 2);
  for (const r of w) assert.equal(r.impersonatedUser, `system:serviceaccount:${NS}:deployers-sa`);
});

test('first match among several wins, no ranking (example 6)', async () => {
  await deployer(cp, 'guestbook-dev', 'guestbook-generic-deployer');
  await applyRaw(
    cp.admin,
    project('six', {
      destinationServiceAccounts: [
        { server: IN_CLUSTER, namespace: 'guestbook-prod', defaultServiceAccount: 'guestbook-prod-deployer' },
        { server: IN_CLUSTER, namespace: 'guestbook-*', defaultServiceAccount: 'guestbook-generic-deployer' },
        { server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'generic-deployer' },
      ],
    }),
  );
  await applyRaw(
    cp.admin,
    application('six-dev', fx.repo.url, {
      project: 'six',
      destination: { server: IN_CLUSTER, namespace: 'guestbook-dev' },
    }),
  );
  const app = await waitForApp(cp, 'six-dev', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
  assert.match(
    condition(app, 'ImpersonationInfo') ?? '',
    /system:serviceaccount:guestbook-dev:guestbook-generic-deployer \(destinationServiceAccounts\[1\]/,
  );
  for (const r of writes(await cp.readAudit(), 'guestbook-dev', cp.controllerUserName))
    assert.equal(r.impersonatedUser, 'system:serviceaccount:guestbook-dev:guestbook-generic-deployer');
});

test("manifests that hard-code another namespace are applied as the Application's ServiceAccount, which must be allowed there", async () => {
  await deployer(cp, 'team-a', 'deployer');
  await deployer(cp, 'team-b', 'nobody');
  await applyRaw(
    cp.admin,
    project('hard', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'team-a', defaultServiceAccount: 'deployer' }],
    }),
  );
  await applyRaw(
    cp.admin,
    application('hard', fx.repo.url, {
      project: 'hard',
      path: 'other',
      destination: { server: IN_CLUSTER, namespace: 'team-a' },
    }),
  );
  // team-a's deployer has no rights in team-b: the object there is refused, as that ServiceAccount.
  const failed = await waitForApp(
    cp,
    'hard',
    'Failed',
    (a) => operationPhase(a) === 'Failed' || (condition(a, 'ComparisonError') ?? '').includes('team-b'),
  );
  const text = JSON.stringify(failed.status);
  assert.match(text, /system:serviceaccount:team-a:deployer/);
  const inB = (await cp.readAudit()).filter((r) => r.namespace === 'team-b' && r.user === cp.controllerUserName);
  assert.ok(inB.length > 0);
  for (const r of inB) assert.equal(r.impersonatedUser, 'system:serviceaccount:team-a:deployer');

  // Allowed there too: a hard refresh (annotation, removed after) and the sync applies both, as team-a's deployer.
  await grantRole(cp.admin, {
    name: 'team-a-deployer',
    namespace: 'team-b',
    to: { serviceAccount: 'deployer', namespace: 'team-a' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
  });
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/hard`,
    body: { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'hard' } } },
    contentType: 'application/merge-patch+json',
  });
  const synced = await waitForApp(
    cp,
    'hard',
    'Succeeded, annotation gone',
    (a) =>
      operationPhase(a) === 'Succeeded' &&
      ((a['metadata'] as { annotations?: Record<string, string> }).annotations ?? {})['argocd.argoproj.io/refresh'] ===
        undefined,
  );
  assert.equal(
    ((synced['metadata'] as { annotations?: Record<string, string> }).annotations ?? {})['argocd.argoproj.io/refresh'],
    undefined,
    'refresh annotation removed',
  );
  const applied = writes(await cp.readAudit(), 'team-b', cp.controllerUserName);
  assert.ok(applied.some((r) => r.verb === 'patch' && r.name === 'hard-coded'));
  for (const r of applied) assert.equal(r.impersonatedUser, 'system:serviceaccount:team-a:deployer');
});

test("no destination namespace: the ServiceAccount is taken from the Application's own namespace", async () => {
  await createServiceAccount(cp.admin, NS, 'app-ns-deployer');
  await grantRole(cp.admin, {
    name: 'app-ns-deployer',
    namespace: NS,
    to: { serviceAccount: 'app-ns-deployer', namespace: NS },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
  });
  await applyRaw(
    cp.admin,
    project('nodest', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: '', defaultServiceAccount: 'app-ns-deployer' }],
    }),
  );
  await applyRaw(
    cp.admin,
    application('nodest', fx.repo.url, { project: 'nodest', path: 'nodest', destination: { server: IN_CLUSTER } }),
  );
  const app = await waitForApp(cp, 'nodest', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
  assert.match(condition(app, 'ImpersonationInfo') ?? '', /system:serviceaccount:argocd:app-ns-deployer/);
});

async function clusterSecret(server: string, config: Record<string, unknown>): Promise<void> {
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'remote-cluster', namespace: NS, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
    stringData: { name: 'remote-cluster', server, config: JSON.stringify(config) },
  });
}

test('example 3: a remote cluster by name, with an argocd-manager credential; writes impersonate the ServiceAccount there', async () => {
  await createServiceAccount(remote.admin, 'kube-system', 'argocd-manager');
  await grantRole(remote.admin, {
    name: 'argocd-manager',
    to: { serviceAccount: 'argocd-manager', namespace: 'kube-system' },
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  const token = await remote.tokenFor({ serviceAccount: 'argocd-manager', namespace: 'kube-system' });
  await clusterSecret(remote.server, {
    bearerToken: token,
    tlsClientConfig: { caData: Buffer.from(remote.caPem).toString('base64') },
  });
  await deployer(remote, 'guestbook', 'guestbook-deployer');
  await applyRaw(
    cp.admin,
    project('remote', {
      destinationServiceAccounts: [
        { server: remote.server, namespace: 'guestbook', defaultServiceAccount: 'guestbook-deployer' },
      ],
    }),
  );
  await applyRaw(
    cp.admin,
    application('remote3', fx.repo.url, {
      project: 'remote',
      destination: { name: 'remote-cluster', namespace: 'guestbook' },
    }),
  );
  await waitForApp(cp, 'remote3', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
  const w = writes(await remote.readAudit(), 'guestbook', 'system:serviceaccount:kube-system:argocd-manager');
  assert.ok(w.length >= 2, `writes on the remote: ${w.length}`);
  for (const r of w) assert.equal(r.impersonatedUser, 'system:serviceaccount:guestbook:guestbook-deployer');
});

test('example 4: a remote credential that may only impersonate and create selfsubjectaccessreviews', async () => {
  await createServiceAccount(remote.admin, 'default', 'argocd-admin');
  await grantRole(remote.admin, {
    name: 'argocd-admin-role',
    to: { serviceAccount: 'argocd-admin', namespace: 'default' },
    rules: [{ apiGroups: [''], resources: ['users', 'groups', 'serviceaccounts'], verbs: ['impersonate'] }],
  });
  await grantRole(remote.admin, {
    name: 'argocd-admin-access-review',
    to: { serviceAccount: 'argocd-admin', namespace: 'default' },
    rules: [{ apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews'], verbs: ['create'] }],
  });
  const token = await remote.tokenFor({ serviceAccount: 'argocd-admin', namespace: 'default' });
  await deployer(remote, 'guestbook-four', 'guestbook-deployer');
  await clusterSecret(remote.server, {
    bearerToken: token,
    tlsClientConfig: { caData: Buffer.from(remote.caPem).toString('base64') },
  });
  await applyRaw(
    cp.admin,
    project('remote4', {
      destinationServiceAccounts: [
        { server: remote.server, namespace: 'guestbook-four', defaultServiceAccount: 'guestbook-deployer' },
      ],
    }),
  );
  await applyRaw(
    cp.admin,
    application('remote4', fx.repo.url, {
      project: 'remote4',
      destination: { server: remote.server, namespace: 'guestbook-four' },
    }),
  );
  await waitForApp(
    cp,
    'remote4',
    'Succeeded and Synced',
    (a) => operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string }).status === 'Synced',
  );
  const all = (await remote.readAudit()).filter(
    (r) => r.user === 'system:serviceaccount:default:argocd-admin' && r.namespace === 'guestbook-four',
  );
  assert.ok(all.some((r) => r.verb === 'patch' && !r.dryRun));
  // Except the credential's own read of the ServiceAccount (the existence check before a sync):
  // this credential may only impersonate, so it is refused and the sync goes on unchecked.
  const check = (r: { verb: string; resource: string | undefined; impersonatedUser: string | undefined }) =>
    r.verb === 'get' && r.resource === 'serviceaccounts' && r.impersonatedUser === undefined;
  assert.ok(all.filter(check).every((r) => r.code === 403));
  // It may not impersonate impersync's user extras either: the first requests that carried them were
  // refused before anything was done; they were sent again without, and the controller said so once.
  const extrasRefused = (r: { code: number | undefined; impersonatedUser: string | undefined }) =>
    r.code === 403 && r.impersonatedUser === undefined;
  const refused = (await remote.readAudit()).filter(
    (r) => r.user === 'system:serviceaccount:default:argocd-admin' && !check(r) && extrasRefused(r),
  );
  assert.ok(refused.length >= 1, 'the extras were offered and refused');
  const told = fx.logs.filter((l) => l.includes("may not impersonate impersync's user extras"));
  assert.equal(told.length, 1, told.join('\n'));
  assert.match(told[0] ?? '', new RegExp(remote.server.replaceAll('.', '\\.')));
  for (const r of all.filter((x) => !check(x) && !extrasRefused(x))) {
    assert.equal(
      r.impersonatedUser,
      'system:serviceaccount:guestbook-four:guestbook-deployer',
      `${r.verb} ${r.requestURI}`,
    );
    assert.deepEqual(r.impersonatedExtra, {}, `${r.verb} ${r.requestURI}: sent without the extras`);
  }
});

test('a cluster Secret change requeues the Applications on that cluster at once (a revoked token shows, a good one heals)', async () => {
  const good = await remote.tokenFor({ serviceAccount: 'argocd-admin', namespace: 'default' });
  await clusterSecret(remote.server, {
    bearerToken: 'not-a-valid-token',
    tlsClientConfig: { caData: Buffer.from(remote.caPem).toString('base64') },
  });
  // The default refresh interval is 120 s: seeing this well before means the Secret change requeued it.
  // (Matching the message: on a loaded machine another, transient ComparisonError may come first.)
  const broken = await waitForApp(
    cp,
    'remote4',
    'ComparisonError after the token change',
    (a) => /Unauthorized|401|credentials/i.test(condition(a, 'ComparisonError') ?? ''),
    45_000,
  );
  assert.ok(condition(broken, 'ComparisonError'));
  await clusterSecret(remote.server, {
    bearerToken: good,
    tlsClientConfig: { caData: Buffer.from(remote.caPem).toString('base64') },
  });
  await waitForApp(
    cp,
    'remote4',
    'Synced again',
    (a) =>
      condition(a, 'ComparisonError') === undefined && (a.status?.['sync'] as { status?: string }).status === 'Synced',
    45_000,
  );
});

test('a dry-run sync of selected resources writes nothing and records no history', async () => {
  await deployer(cp, 'dry', 'deployer');
  await applyRaw(
    cp.admin,
    project('dry', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'dry', defaultServiceAccount: 'deployer' }],
    }),
  );
  const app = application('dry', fx.repo.url, {
    project: 'dry',
    destination: { server: IN_CLUSTER, namespace: 'dry' },
    automated: false,
  });
  await applyRaw(cp.admin, {
    ...app,
    operation: {
      sync: { dryRun: true, resources: [{ kind: 'ConfigMap', name: 'guestbook-config' }] },
      initiatedBy: { username: 'alice' },
    },
  });
  const done = await waitForApp(
    cp,
    'dry',
    'Succeeded',
    (a) => operationPhase(a) === 'Succeeded' && a['operation'] === undefined,
  );
  assert.equal(done.status?.['history'], undefined);
  const results = (
    done.status?.['operationState'] as { syncResult: { resources: Array<{ kind: string }> } }
  ).syncResult.resources.map((r) => r.kind);
  assert.deepEqual(results, ['ConfigMap'], 'only the selected resource');
  assert.deepEqual(
    writes(await cp.readAudit(), 'dry', cp.controllerUserName).map((r) => r.requestURI),
    [],
    'no non-dry-run write',
  );
});

test('a sync that changes nothing is still followed by a comparison written after it, as `argocd app sync` waits for', async () => {
  await deployer(cp, 'again', 'deployer');
  await applyRaw(
    cp.admin,
    project('again', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'again', defaultServiceAccount: 'deployer' }],
    }),
  );
  const app = application('again', fx.repo.url, {
    project: 'again',
    destination: { server: IN_CLUSTER, namespace: 'again' },
    automated: false,
  });
  const sync = async (username: string) => {
    await requestOk(cp.admin, {
      method: 'PATCH',
      path: '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/again',
      body: { operation: { sync: {}, initiatedBy: { username } } },
      contentType: 'application/merge-patch+json',
    });
    return waitForApp(cp, 'again', `${username}'s sync Succeeded`, (a) => {
      const state = a.status?.['operationState'] as { operation?: { initiatedBy?: { username?: string } } } | undefined;
      const by = state?.operation?.initiatedBy?.username;
      return operationPhase(a) === 'Succeeded' && a['operation'] === undefined && by === username;
    });
  };
  await applyRaw(cp.admin, app);
  await sync('alice');
  await waitForApp(cp, 'again', 'Synced', (a) => (a.status?.['sync'] as { status?: string })?.status === 'Synced');
  await sync('bob');
  // The refresh interval here is Argo CD's default, 120 s: only the comparison owed after the
  // operation moves reconciledAt past finishedAt within the wait.
  const compared = await waitForApp(
    cp,
    'again',
    'reconciledAt not before finishedAt',
    (a) => {
      const finished = (a.status?.['operationState'] as { finishedAt?: string } | undefined)?.finishedAt ?? '';
      return Date.parse((a.status?.['reconciledAt'] as string | undefined) ?? '') >= Date.parse(finished);
    },
    20_000,
  );
  assert.equal((compared.status?.['sync'] as { status?: string }).status, 'Synced');
  assert.equal(((compared.status?.['history'] ?? []) as unknown[]).length, 2, 'both syncs recorded');
});

// Beyond Argo CD (docs/impersonation.md §10). The harness lets the controller impersonate any
// ServiceAccount (a ClusterRole), so the API server would allow this one: the refusal is the
// controller's own, decided before any request is made as the ServiceAccount.
test('a project that maps to a kube-system ServiceAccount is refused with nothing written, and allowed by argocd-cm', async () => {
  const sa = 'system:serviceaccount:kube-system:impersync-e2e-deployer';
  await createServiceAccount(cp.admin, 'kube-system', 'impersync-e2e-deployer');
  await deployer(cp, 'sys-target', 'unused');
  await grantRole(cp.admin, {
    name: 'kube-system-deployer',
    namespace: 'sys-target',
    to: { serviceAccount: 'impersync-e2e-deployer', namespace: 'kube-system' },
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  await applyRaw(
    cp.admin,
    project('sys', {
      destinationServiceAccounts: [
        { server: IN_CLUSTER, namespace: 'sys-target', defaultServiceAccount: 'kube-system:impersync-e2e-deployer' },
      ],
    }),
  );
  const app = application('sys', fx.repo.url, {
    project: 'sys',
    destination: { server: IN_CLUSTER, namespace: 'sys-target' },
    automated: false,
  });
  await applyRaw(cp.admin, app);
  await applyRaw(cp.admin, { ...app, operation: { sync: { revision: 'HEAD' }, initiatedBy: { username: 'alice' } } });
  // The operation's Error and the refresh's ComparisonError are written by two queues, in either
  // order: wait for both.
  const refused = await waitForApp(
    cp,
    'sys',
    'operation Error and ComparisonError',
    (a) => operationPhase(a) === 'Error' && condition(a, 'ComparisonError') !== undefined,
  );
  const expected = `refusing to impersonate ${sa}: ServiceAccounts in kube-system, kube-public and kube-node-lease are not impersonated unless argocd-cm sets impersync.impersonation.allowSystemNamespaces: "true"`;
  assert.equal((refused.status?.['operationState'] as { message: string }).message, expected);
  assert.equal(condition(refused, 'ComparisonError'), expected);
  const asSystem = (await cp.readAudit()).filter((r) => r.impersonatedUser === sa || r.namespace === 'sys-target');
  assert.deepEqual(
    asSystem.filter((r) => r.user === cp.controllerUserName).map((r) => `${r.verb} ${r.requestURI}`),
    [],
    'no request at all as the ServiceAccount, nor to its destination',
  );

  // Allowed: the next sync runs as that ServiceAccount (the settings change takes effect without restart).
  await setSettings(cp, {
    'application.sync.impersonation.enabled': 'true',
    'impersync.impersonation.allowSystemNamespaces': 'true',
  });
  try {
    await waitForApp(cp, 'sys', 'no ComparisonError', (a) => condition(a, 'ComparisonError') === undefined);
    await applyRaw(cp.admin, { ...app, operation: { sync: { revision: 'HEAD' }, initiatedBy: { username: 'bob' } } });
    await waitForApp(cp, 'sys', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
    const w = writes(await cp.readAudit(), 'sys-target', cp.controllerUserName);
    assert.ok(w.length >= 2, `writes in sys-target: ${w.length}`);
    for (const r of w) assert.equal(r.impersonatedUser, sa);
  } finally {
    await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  }
});
