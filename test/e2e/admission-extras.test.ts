// The example admission policy of deploy/admission/examples on a real kube-apiserver: in a
// namespace annotated with its owning Application, a write impersync makes for another Application
// is refused, though both act as the same ServiceAccount (which RBAC alone cannot tell apart);
// the owner's writes, and writes that are not impersync's, go through.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { IN_CLUSTER as IN_CLUSTER_CLUSTER } from '../../src/api/index.ts';
import { DestinationClientFactory } from '../../src/kube/factory.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  applyRaw,
  createNamespace,
  createServiceAccount,
  getRaw,
  grantRole,
  readYamlFile,
  startControlPlane,
} from '../support/index.ts';
import {
  IN_CLUSTER,
  application,
  condition,
  grantControllerRights,
  guestbookFiles,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

const policyFile = new URL('../../deploy/admission/examples/application-owns-namespace.yaml', import.meta.url).pathname;
const SA = 'system:serviceaccount:tenants:shared';
const OWNED = 'owned';

let cp: TestControlPlane;
let fx: Fixture;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, {
    'application.sync.impersonation.enabled': 'true',
    'impersync.impersonation.requireExtras': 'true',
  });
  for (const doc of await readYamlFile(policyFile)) await applyRaw(cp.admin, doc);
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: OWNED, annotations: { 'impersync.io/application': 'argocd/owner' } },
  });
  await createNamespace(cp.admin, 'tenants');
  await createServiceAccount(cp.admin, 'tenants', 'shared');
  // One ServiceAccount for both Applications, with every right in the owned namespace.
  await grantRole(cp.admin, {
    name: 'shared',
    namespace: OWNED,
    to: { serviceAccount: 'shared', namespace: 'tenants' },
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  await applyRaw(
    cp.admin,
    project('shared', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'tenants:shared' }],
    }),
  );
  fx = await startFixture(
    cp,
    guestbookFiles({
      'intruder/configmap.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: intruder-config\ndata:\n  greeting: mine now\n',
    }),
  );
  // The policy holds once the API server has loaded it: wait until a request made for another
  // Application is refused.
  const factory = await DestinationClientFactory.fromKubeConfig({ kubeconfig: cp.controllerKubeconfigPath });
  try {
    const probe = factory.forIdentity(
      IN_CLUSTER_CLUSTER,
      { impersonate: SA },
      { application: 'argocd/probe', project: 'shared', revision: 'probe' },
    );
    const end = Date.now() + 30_000;
    for (;;) {
      const res = await probe.apply(
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe', namespace: OWNED } },
        { dryRun: true },
      );
      if (!res.ok && res.error.code === 403) break;
      if (Date.now() > end) throw new Error(`the policy is not enforced: ${JSON.stringify(res)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await factory.close();
  }
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test("a write made for another Application than the namespace's owner is refused, though both act as the same ServiceAccount", async () => {
  await applyRaw(
    cp.admin,
    application('owner', fx.repo.url, { project: 'shared', destination: { server: IN_CLUSTER, namespace: OWNED } }),
  );
  await waitForApp(
    cp,
    'owner',
    'Succeeded and Synced',
    (a) => operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string }).status === 'Synced',
  );

  await applyRaw(
    cp.admin,
    application('intruder', fx.repo.url, {
      project: 'shared',
      path: 'intruder',
      destination: { server: IN_CLUSTER, namespace: OWNED },
    }),
  );
  const message = 'namespace owned belongs to Application argocd/owner; this request was made for argocd/intruder';
  const refused = await waitForApp(cp, 'intruder', 'the sync refused by the policy', (a) =>
    (condition(a, 'SyncError') ?? '').includes(message),
  );
  assert.equal(operationPhase(refused), 'Failed');
  assert.equal(
    await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'intruder-config', namespace: OWNED }),
    undefined,
  );
  // In the audit log: the intruder's dry-runs and its apply refused, as the same ServiceAccount as the owner's writes.
  const audit = (await cp.readAudit()).filter((r) => r.namespace === OWNED && r.impersonatedUser === SA);
  const forIntruder = audit.filter((r) => r.impersonatedExtra['impersync.io/application']?.[0] === 'argocd/intruder');
  const writes = forIntruder.filter((r) => r.verb === 'patch');
  assert.ok(
    writes.some((r) => r.dryRun) && writes.some((r) => !r.dryRun),
    JSON.stringify(writes.map((r) => r.requestURI)),
  );
  for (const r of writes) assert.equal(r.code, 403, r.requestURI);
  const forOwner = audit.filter(
    (r) => r.impersonatedExtra['impersync.io/application']?.[0] === 'argocd/owner' && r.verb === 'patch' && !r.dryRun,
  );
  assert.ok(forOwner.length >= 2 && forOwner.every((r) => (r.code ?? 0) < 300));
});

test('writes that are not made for an Application are left alone', async () => {
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'by-hand', namespace: OWNED },
    data: { a: '1' },
  });
  assert.ok(await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'by-hand', namespace: OWNED }));
});
