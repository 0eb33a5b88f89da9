// The destination client against a real kube-apiserver: raw server-side apply as an impersonated
// ServiceAccount (and the audit log's record of it), errors as the server's own words, discovery
// that sees a CRD created a moment ago, field validation, the factory's caching and refusals, and
// a remote cluster reached through a cluster Secret's credential.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import type { Cluster } from '../../src/api/index.ts';
import { IN_CLUSTER } from '../../src/api/index.ts';
import { DestinationClientFactory } from '../../src/kube/factory.ts';
import type { DestinationClient } from '../../src/kube/types.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  applyRaw,
  createNamespace,
  createServiceAccount,
  getRaw,
  grantImpersonation,
  grantRole,
  startControlPlane,
  userNameOf,
  madeForTest,
} from '../support/index.ts';

const ns = 'client-tenant';
const sa = { serviceAccount: 'deployer', namespace: ns };
const saUser = userNameOf(sa);

let cp: TestControlPlane;
let factory: DestinationClientFactory;
let asSA: DestinationClient;

const cm = (name: string, data: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: ns },
  data,
  ...extra,
});

before(async () => {
  cp = await startControlPlane();
  await createNamespace(cp.admin, ns);
  await createServiceAccount(cp.admin, ns, 'deployer');
  await grantRole(cp.admin, {
    name: 'deployer',
    namespace: ns,
    to: sa,
    rules: [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'patch', 'update', 'delete'] },
    ],
  });
  await grantImpersonation(cp.admin, {
    name: 'impersync-impersonate',
    serviceAccounts: [{ namespace: ns, name: 'deployer' }],
  });
  factory = await DestinationClientFactory.fromKubeConfig({ kubeconfig: cp.controllerKubeconfigPath });
  asSA = factory.forIdentity(IN_CLUSTER, { impersonate: saUser }, madeForTest('sync-client'));
});

after(async () => {
  await factory?.close();
  await cp?.stop();
});

test('apply as the ServiceAccount: the object lands with the impersync field manager, and the audit log names both identities', async () => {
  const res = await asSA.apply(cm('settings', { mode: 'a' }));
  assert.ok(res.ok, res.ok ? '' : res.error.message);
  assert.deepEqual(res.value['data'], { mode: 'a' });
  const managers = (res.value.metadata['managedFields'] as Array<{ manager: string; operation: string }>).map(
    (m) => `${m.manager}/${m.operation}`,
  );
  assert.deepEqual(managers, ['impersync/Apply']);
  const [rec] = await cp.waitForAudit(
    (r) => r.verb === 'patch' && r.resource === 'configmaps' && r.name === 'settings' && !r.dryRun,
  );
  assert.equal(rec?.user, cp.controllerUserName);
  assert.equal(rec?.impersonatedUser, saUser);
  assert.equal(rec?.fieldManager, 'impersync');
  // User only (spec §5): the groups are the ones the API server derives for a ServiceAccount, no
  // uid; the only extras are impersync's, naming what the request was made for (docs/impersonation.md §11).
  const raw = (await readFile(cp.auditLogPath, 'utf8'))
    .split('\n')
    .filter((l) => l.includes(`"auditID":"${rec?.auditID}"`) && l.includes('ResponseComplete'));
  const event = JSON.parse(raw[0] ?? '{}') as {
    impersonatedUser?: { username?: string; groups?: string[]; uid?: string; extra?: unknown };
  };
  assert.deepEqual(event.impersonatedUser, {
    username: saUser,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
    extra: {
      'impersync.io/application': ['argocd/sync-client'],
      'impersync.io/project': ['default'],
      'impersync.io/revision': ['test-revision'],
    },
  });
});

test('a dry-run apply writes nothing', async () => {
  const res = await asSA.apply(cm('dry', { x: '1' }), { dryRun: true });
  assert.ok(res.ok);
  assert.equal(await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'dry' }), undefined);
  const [rec] = await cp.waitForAudit((r) => r.name === 'dry' && r.verb === 'patch');
  assert.equal(rec?.dryRun, true);
  assert.equal(rec?.impersonatedUser, saUser);
});

test("a kind outside the ServiceAccount's Role is a 403 value carrying the server's message, which names the ServiceAccount", async () => {
  const res = await asSA.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: ns },
    stringData: { a: 'b' },
  });
  assert.ok(!res.ok);
  assert.equal(res.error.code, 403);
  assert.equal(res.error.reason, 'Forbidden');
  assert.match(
    res.error.message,
    /User "system:serviceaccount:client-tenant:deployer" cannot patch resource "secrets"/,
  );
});

test('the controller identity (no rights of its own) is refused as itself', async () => {
  const own = factory.forIdentity(IN_CLUSTER, { controller: true });
  const res = await own.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'settings' });
  assert.ok(!res.ok);
  assert.equal(res.error.code, 403);
  assert.match(res.error.message, new RegExp(`User "${cp.controllerUserName}" cannot get resource "configmaps"`));
});

test('get, list and delete: null for a missing object, absent for a second delete', async () => {
  const missing = await asSA.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'nope' });
  assert.deepEqual(missing.ok && missing.value, null);
  await asSA.apply(cm('to-delete', {}));
  const listed = await asSA.list('v1', 'ConfigMap', { namespace: ns });
  assert.ok(listed.ok);
  assert.ok(
    listed.value.some((o) => o.metadata.name === 'to-delete' && o.kind === 'ConfigMap' && o.apiVersion === 'v1'),
  );
  const first = await asSA.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'to-delete' });
  assert.deepEqual(first.ok && first.value, 'deleted');
  const second = await asSA.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'to-delete' });
  assert.deepEqual(second.ok && second.value, 'absent');
  const [rec] = await cp.waitForAudit((r) => r.verb === 'delete' && r.name === 'to-delete' && r.code === 200);
  assert.equal(rec?.impersonatedUser, saUser);
});

test('unknown fields reach the server, which refuses them by name; strict validation is asked for only when wanted', async () => {
  const res = await asSA.apply(cm('unknown-fields', { a: '1' }, { bogusField: 'x' }));
  assert.ok(!res.ok);
  // Server-side apply refuses fields its schema lacks, whatever the validation level: proof the
  // field was sent (a typed client would have dropped it and "succeeded").
  assert.match(res.error.message, /\.bogusField: field not declared in schema/);
  const strict = await asSA.apply(cm('strict-fields', { a: '1' }), { fieldValidation: 'Strict' });
  assert.ok(strict.ok);
  const [plain] = await cp.waitForAudit((r) => r.verb === 'patch' && r.name === 'unknown-fields');
  assert.doesNotMatch(plain?.requestURI ?? '', /fieldValidation/);
  const [asked] = await cp.waitForAudit((r) => r.verb === 'patch' && r.name === 'strict-fields');
  assert.match(asked?.requestURI ?? '', /fieldValidation=Strict/);
});

test('a namespaced kind without a namespace is refused before anything is sent', async () => {
  const res = await asSA.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'where' } });
  assert.ok(!res.ok);
  assert.match(res.error.message, /ConfigMap where: metadata.namespace is required/);
});

test('discovery sees a CRD created after the first lookup of its group', async () => {
  const before = await asSA.resolve('example.com/v1', 'Gadget');
  assert.ok(!before.ok);
  assert.match(before.error.message, /no matches for kind "Gadget" in version "example.com\/v1"/);
  await applyRaw(cp.admin, {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'gadgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  });
  const deadline = Date.now() + 30_000;
  let found = await asSA.resolve('example.com/v1', 'Gadget');
  while (!found.ok && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    found = await asSA.resolve('example.com/v1', 'Gadget');
  }
  assert.ok(found.ok, found.ok ? '' : found.error.message);
  assert.deepEqual(
    { resource: found.value.resource, namespaced: found.value.namespaced },
    { resource: 'gadgets', namespaced: true },
  );
  const byGroup = await asSA.resolveGroupKind('example.com', 'Gadget');
  assert.equal(byGroup.ok && byGroup.value.apiVersion, 'example.com/v1');
});

test('the factory hands out one client per (cluster, identity)', () => {
  // Which identity a decision asks for (and that deny and error build none) is the admission
  // gate's (test/controller/admission.test.ts): the factory only builds what it is asked for.
  const base = factory.forIdentity(IN_CLUSTER, { impersonate: saUser });
  assert.equal(factory.forIdentity(IN_CLUSTER, { impersonate: saUser }), base);
  assert.notEqual(base, asSA, "a client made for an Application is a view of the identity's client");
  assert.deepEqual(asSA.identity, base.identity);
  const own = factory.forIdentity(IN_CLUSTER, { controller: true });
  assert.deepEqual(own.identity, { controller: true });
  assert.equal(factory.forIdentity(IN_CLUSTER, { controller: true }), own);
  assert.notEqual(own, asSA);
});

test("a remote cluster is reached with its Secret's credential plus the impersonation header", async () => {
  const remote = await startControlPlane();
  try {
    await createNamespace(remote.admin, 'far');
    await createServiceAccount(remote.admin, 'far', 'deployer');
    await grantRole(remote.admin, {
      name: 'deployer',
      namespace: 'far',
      to: { serviceAccount: 'deployer', namespace: 'far' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'patch', 'create'] }],
    });
    await grantImpersonation(remote.admin, {
      name: 'impersync-impersonate',
      serviceAccounts: [{ namespace: 'far', name: 'deployer' }],
    });
    const cluster: Cluster = {
      name: 'remote',
      server: remote.server,
      secret: 'argocd/remote',
      config: {
        bearerToken: await remote.tokenFor('controller'),
        tlsClientConfig: { caData: Buffer.from(remote.caPem).toString('base64') },
      },
    };
    const client = factory.forIdentity(
      cluster,
      { impersonate: 'system:serviceaccount:far:deployer' },
      madeForTest('sync-client'),
    );
    const res = await client.apply({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'over-there', namespace: 'far' },
      data: { a: 'b' },
    });
    assert.ok(res.ok, res.ok ? '' : res.error.message);
    const [rec] = await remote.waitForAudit((r) => r.verb === 'patch' && r.name === 'over-there');
    assert.equal(rec?.user, remote.controllerUserName);
    assert.equal(rec?.impersonatedUser, 'system:serviceaccount:far:deployer');
    // The local cluster never saw it.
    assert.equal(
      (await cp.readAudit()).some((r) => r.name === 'over-there'),
      false,
    );
  } finally {
    await remote.stop();
  }
});
