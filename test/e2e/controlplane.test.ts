// What impersync relies on, shown against a real kube-apiserver (issue 3, "Proof"): impersonated
// server-side apply, RBAC's answers to it, the impersonate verb and its resourceNames, dry-run,
// and the audit log that records who acted as whom (spec §5).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { TestControlPlane } from '../support/index.ts';
import {
  ApiError,
  applyRaw,
  createNamespace,
  createServiceAccount,
  deleteRaw,
  getRaw,
  grantImpersonation,
  grantRole,
  listRaw,
  request,
  startControlPlane,
  userNameOf,
} from '../support/index.ts';
import { eventually } from '../support/procfs.ts';

const ns = 'guestbook';
const sa = { serviceAccount: 'guestbook-deployer', namespace: ns };
const saUser = userNameOf(sa); // system:serviceaccount:guestbook:guestbook-deployer
const notListed = userNameOf({ serviceAccount: 'not-listed', namespace: ns });
const sameNameElsewhere = userNameOf({ serviceAccount: 'guestbook-deployer', namespace: 'other' });
const unprivileged = 'controller-without-impersonate';

let cp: TestControlPlane;

const tenantRules = [
  {
    apiGroups: [''],
    resources: ['configmaps', 'services'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  {
    apiGroups: ['apps'],
    resources: ['deployments'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
];

const configMap = (name: string, namespace: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});

before(async () => {
  cp = await startControlPlane({ users: [{ name: unprivileged }] });
  process.stderr.write(`control plane up in ${cp.startupMs} ms at ${cp.server}\n`);
  for (const n of [ns, 'other']) await createNamespace(cp.admin, n);
  await createServiceAccount(cp.admin, ns, 'guestbook-deployer');
  await createServiceAccount(cp.admin, ns, 'not-listed');
  await createServiceAccount(cp.admin, 'other', 'guestbook-deployer');
  // The tenant's rights: its own namespace only.
  await grantRole(cp.admin, { name: 'guestbook-deployer-role', namespace: ns, rules: tenantRules, to: sa });
  // Two more ServiceAccounts with rights of their own, so a 403 as them can only come from impersonation limits.
  await grantRole(cp.admin, {
    name: 'not-listed-role',
    namespace: ns,
    rules: tenantRules,
    to: { serviceAccount: 'not-listed', namespace: ns },
  });
  await grantRole(cp.admin, {
    name: 'elsewhere-role',
    namespace: 'other',
    rules: tenantRules,
    to: { serviceAccount: 'guestbook-deployer', namespace: 'other' },
  });
  // The controller may impersonate exactly one ServiceAccount (RBAC resourceNames).
  await grantImpersonation(cp.admin, {
    name: 'impersync-impersonate',
    to: 'controller',
    serviceAccounts: [{ namespace: ns, name: 'guestbook-deployer' }],
  });
});

after(() => cp?.stop());

test('a server-side apply as an impersonated ServiceAccount that its Role allows succeeds, and the audit log shows both identities', async () => {
  const applied = await applyRaw(cp.controller, configMap('app-config', ns, { mode: 'live' }), {
    asUser: saUser,
    fieldManager: 'impersync',
  });
  assert.equal(applied.metadata.name, 'app-config');
  const managers = (applied.metadata['managedFields'] as { manager: string; operation: string }[]).map((m) => [
    m.manager,
    m.operation,
  ]);
  assert.deepEqual(managers, [['impersync', 'Apply']]);
  assert.deepEqual(
    (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'app-config' }))?.['data'],
    { mode: 'live' },
  );

  const [record] = await cp.waitForAudit(
    (r) => r.verb === 'patch' && r.resource === 'configmaps' && r.name === 'app-config' && r.namespace === ns,
  );
  assert.ok(record);
  assert.equal(record.user, 'impersync-controller');
  assert.equal(record.impersonatedUser, saUser);
  assert.equal(record.code, 201);
  assert.equal(record.dryRun, false);
  assert.equal(record.fieldManager, 'impersync');
});

test('the API server authorises an impersonated ServiceAccount user with the ServiceAccount groups it adds', async () => {
  const res = await request(cp.controller, {
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    asUser: saUser,
  });
  assert.equal(res.status, 201, res.text);
  const userInfo = (res.body as { status: { userInfo: { username: string; groups: string[] } } }).status.userInfo;
  assert.equal(userInfo.username, saUser);
  assert.deepEqual([...userInfo.groups].sort(), [
    'system:authenticated',
    'system:serviceaccounts',
    `system:serviceaccounts:${ns}`,
  ]);
});

test("the same ServiceAccount applying outside its Role gets 403 with the API server's message naming it", async () => {
  await assert.rejects(
    applyRaw(cp.controller, configMap('stray', 'other', { a: 'b' }), { asUser: saUser }),
    (err: ApiError) => {
      assert.equal(err.status, 403);
      assert.equal(err.reason, 'Forbidden');
      assert.equal(
        err.message,
        `configmaps "stray" is forbidden: User "${saUser}" cannot patch resource "configmaps" in API group "" in the namespace "other"`,
      );
      return true;
    },
  );
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'token', namespace: ns },
    stringData: { a: 'b' },
  };
  await assert.rejects(applyRaw(cp.controller, secret, { asUser: saUser }), (err: ApiError) => {
    assert.equal(err.status, 403);
    assert.match(
      err.message,
      new RegExp(`User "${saUser}" cannot patch resource "secrets" in API group "" in the namespace "${ns}"`),
    );
    return true;
  });
  assert.equal(
    await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'other', name: 'stray' }),
    undefined,
  );
  assert.equal(await getRaw(cp.admin, { apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 'token' }), undefined);

  const [record] = await cp.waitForAudit((r) => r.resource === 'configmaps' && r.name === 'stray');
  assert.deepEqual(
    [record?.user, record?.impersonatedUser, record?.code, record?.decision],
    ['impersync-controller', saUser, 403, 'forbid'],
  );
});

test('a controller identity without the impersonate verb gets 403 on any impersonated request', async () => {
  const kc = await cp.kubeconfigFor({ user: unprivileged });
  const attempts = [
    {
      what: 'apply as the ServiceAccount',
      run: () => applyRaw(kc, configMap('via-unprivileged', ns, { a: 'b' }), { asUser: saUser }),
      resource: 'serviceaccounts',
    },
    {
      what: 'list as the ServiceAccount',
      run: () => request(kc, { path: `/api/v1/namespaces/${ns}/configmaps`, asUser: saUser }).then(throwUnlessOk),
      resource: 'serviceaccounts',
    },
    {
      what: 'read as a plain user',
      run: () => request(kc, { path: `/api/v1/namespaces/${ns}/configmaps`, asUser: 'alice' }).then(throwUnlessOk),
      resource: 'users',
    },
  ];
  for (const attempt of attempts) {
    await assert.rejects(attempt.run(), (err: ApiError) => {
      assert.equal(err.status, 403, attempt.what);
      assert.match(
        err.message,
        new RegExp(`User "${unprivileged}" cannot impersonate resource "${attempt.resource}" in API group ""`),
        attempt.what,
      );
      return true;
    });
  }
  assert.equal(
    await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'via-unprivileged' }),
    undefined,
  );
  // Refused before impersonation took place: the audit log has the real user and no impersonated one.
  const records = await cp.waitForAudit((r) => r.user === unprivileged && r.code === 403);
  assert.ok(records.every((r) => r.impersonatedUser === undefined));
});

test('with impersonate limited by resourceNames, only the named ServiceAccount can be impersonated', async () => {
  const list = (asUser: string) =>
    request(cp.controller, { path: `/api/v1/namespaces/${asUser.split(':')[2]}/configmaps`, asUser });
  assert.equal((await list(saUser)).status, 200);
  for (const other of [notListed, sameNameElsewhere]) {
    const res = await list(other);
    assert.equal(res.status, 403, `${other} must not be impersonable`);
    const [, , otherNs, otherName] = other.split(':');
    assert.equal(
      (res.body as { message: string }).message,
      `serviceaccounts "${otherName}" is forbidden: User "impersync-controller" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "${otherNs}"`,
    );
  }
  const asPlainUser = await request(cp.controller, { path: `/api/v1/namespaces/${ns}/configmaps`, asUser: 'alice' });
  assert.equal(asPlainUser.status, 403);
  // Without the header the controller is itself, and has no rights of its own.
  const asItself = await request(cp.controller, { path: `/api/v1/namespaces/${ns}/configmaps` });
  assert.equal(asItself.status, 403);
  assert.match(
    (asItself.body as { message: string }).message,
    /User "impersync-controller" cannot list resource "configmaps"/,
  );
});

test('a dry-run apply as the ServiceAccount writes nothing', async () => {
  const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns };
  const created = await applyRaw(cp.controller, configMap('dry-run-only', ns, { a: 'b' }), {
    asUser: saUser,
    dryRun: true,
    fieldManager: 'impersync',
  });
  assert.deepEqual(created['data'], { a: 'b' }, 'the server answers with what it would have stored');
  assert.equal(await getRaw(cp.admin, { ...ref, name: 'dry-run-only' }), undefined);

  await applyRaw(cp.controller, configMap('kept', ns, { mode: 'before' }), {
    asUser: saUser,
    fieldManager: 'impersync',
  });
  const before = await getRaw(cp.admin, { ...ref, name: 'kept' });
  const changed = await applyRaw(cp.controller, configMap('kept', ns, { mode: 'after' }), {
    asUser: saUser,
    dryRun: true,
    fieldManager: 'impersync',
  });
  assert.deepEqual(changed['data'], { mode: 'after' });
  const live = await getRaw(cp.admin, { ...ref, name: 'kept' });
  assert.deepEqual(live?.['data'], { mode: 'before' });
  assert.equal(live?.metadata['resourceVersion'], before?.metadata['resourceVersion']);

  // Dry-run is authorised like the real request.
  await assert.rejects(
    applyRaw(cp.controller, configMap('dry-stray', 'other', { a: 'b' }), { asUser: saUser, dryRun: true }),
    { status: 403 },
  );

  const records = await cp.waitForAudit((r) => r.name === 'dry-run-only' && r.verb === 'patch');
  assert.deepEqual(
    records.map((r) => [r.user, r.impersonatedUser, r.dryRun, r.code]),
    [['impersync-controller', saUser, true, 201]],
  );
});

function throwUnlessOk(res: { status: number; text: string }): void {
  if (res.status < 200 || res.status > 299)
    throw new ApiError('GET', '', { status: res.status, headers: {}, text: res.text });
}

test('the harness names a kind the server does not serve, for an unknown group and for a known one', async () => {
  const monitor = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: 'm', namespace: ns },
  };
  await assert.rejects(
    applyRaw(cp.admin, monitor),
    new RegExp(`^Error: the API server at ${cp.server} serves no kind ServiceMonitor in monitoring\\.coreos\\.com/v1$`),
  );
  const bogus = { apiVersion: 'v1', kind: 'NoSuchKind', metadata: { name: 'x', namespace: ns } };
  await assert.rejects(applyRaw(cp.admin, bogus), /serves no kind NoSuchKind in v1$/);
});

test('kube-controller-manager runs: a Deployment gets a ReplicaSet, deleting it cascades, a deleted namespace goes away', async () => {
  const where = 'kcm-check';
  await createNamespace(cp.admin, where);
  const labels = { app: 'web' };
  await applyRaw(cp.admin, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: where },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } },
    },
  });
  const replicaSets = () => listRaw(cp.admin, { apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: where });
  await eventually(
    'a ReplicaSet owned by the Deployment',
    async () =>
      (await replicaSets()).some(
        (rs) =>
          (rs.metadata['ownerReferences'] as { kind: string; name: string }[] | undefined)?.some(
            (o) => o.kind === 'Deployment' && o.name === 'web',
          ) === true,
      ),
    60_000,
  );
  assert.ok(await deleteRaw(cp.admin, { apiVersion: 'apps/v1', kind: 'Deployment', namespace: where, name: 'web' }));
  await eventually('the ReplicaSet to be collected', async () => (await replicaSets()).length === 0, 60_000);
  assert.ok(await deleteRaw(cp.admin, { apiVersion: 'v1', kind: 'Namespace', name: where }));
  await eventually(
    'the namespace to finish deleting',
    async () => (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'Namespace', name: where })) === undefined,
    60_000,
  );
});
