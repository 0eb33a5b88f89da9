// Cluster tenancy on the real control plane, with Argo CD's YAML and its messages: argocd-cm
// `cluster.inClusterEnabled: "false"`, a project-scoped cluster (a cluster Secret's `project`) with
// `permitOnlyProjectScopedClusters`, and a namespace-scoped cluster (`namespaces`,
// `clusterResources`). The "remote" clusters are this control plane under other URLs, reached with
// an argocd-manager ServiceAccount's token; writes still impersonate the tenant's deployer.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { applyRaw, createNamespace, createServiceAccount, grantRole, startControlPlane } from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import {
  IN_CLUSTER,
  NS,
  application,
  condition,
  deployer,
  grantControllerRights,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;
let managerToken = '';
const MANAGER = 'system:serviceaccount:kube-system:argocd-manager';
const EVERY_DESTINATION = [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }];

/** A cluster Secret as Argo CD's declarative setup writes it. */
async function clusterSecret(name: string, server: string, extra: Record<string, string> = {}): Promise<void> {
  const tlsClientConfig = { caData: Buffer.from(cp.caPem).toString('base64'), serverName: 'kubernetes' };
  const config = { bearerToken: managerToken, tlsClientConfig };
  await applyRaw(
    cp.admin,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: NS, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
      type: 'Opaque',
      stringData: { name, server, config: JSON.stringify(config), ...extra },
    },
    { force: true },
  );
}

const requestsIn = (records: AuditRecord[], namespace: string) =>
  records.filter((r) => r.namespace === namespace && r.user === MANAGER);

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true', 'cluster.inClusterEnabled': 'false' });
  await createServiceAccount(cp.admin, 'kube-system', 'argocd-manager');
  await grantRole(cp.admin, {
    name: 'argocd-manager',
    to: { serviceAccount: 'argocd-manager', namespace: 'kube-system' },
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  managerToken = await cp.tokenFor({ serviceAccount: 'argocd-manager', namespace: 'kube-system' });
  for (const ns of ['team-a', 'ns-a', 'ns-b']) await deployer(cp, ns, 'deployer');
  fx = await startFixture(cp, {
    'app/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tenancy\ndata:\n  a: "1"\n',
    'elsewhere/configmap.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: ns-b\ndata:\n  a: "1"\n',
    'cluster-scoped/role.yaml':
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: ns-reader\nrules: []\n',
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('cluster.inClusterEnabled "false": the in-cluster destination is refused in Argo CD\'s words, by server and by name', async () => {
  await applyRaw(cp.admin, project('open', { destinationServiceAccounts: EVERY_DESTINATION }));
  await createNamespace(cp.admin, 'local');
  await applyRaw(
    cp.admin,
    application('local', fx.repo.url, { project: 'open', destination: { server: IN_CLUSTER, namespace: 'local' } }),
  );
  await applyRaw(
    cp.admin,
    application('local-by-name', fx.repo.url, {
      project: 'open',
      destination: { name: 'in-cluster', namespace: 'local' },
    }),
  );
  const byServer = await waitForApp(cp, 'local', 'InvalidSpecError', (a) => !!condition(a, 'InvalidSpecError'));
  assert.equal(
    condition(byServer, 'InvalidSpecError'),
    `spec.destination.server: error getting cluster by server "${IN_CLUSTER}": rpc error: code = NotFound desc = cluster "${IN_CLUSTER}" is disabled`,
  );
  const byName = await waitForApp(cp, 'local-by-name', 'InvalidSpecError', (a) => !!condition(a, 'InvalidSpecError'));
  assert.equal(
    condition(byName, 'InvalidSpecError'),
    'spec.destination.name: there are no clusters with this name: in-cluster',
  );
  const touched = (await cp.readAudit()).filter((r) => r.namespace === 'local' && r.user === cp.controllerUserName);
  assert.deepEqual(touched, [], 'nothing was read or written in the refused destination');
});

test("a project-scoped cluster is its project's destination; permitOnlyProjectScopedClusters refuses another project's", async () => {
  await clusterSecret('team-cluster', cp.server, { project: 'team' });
  // No destinations of its own: the cluster Secret's `project` is what makes team-cluster one.
  await applyRaw(cp.admin, project('team', { destinations: [], destinationServiceAccounts: EVERY_DESTINATION }));
  await applyRaw(
    cp.admin,
    project('strict', { permitOnlyProjectScopedClusters: true, destinationServiceAccounts: EVERY_DESTINATION }),
  );
  await applyRaw(
    cp.admin,
    application('team-app', fx.repo.url, {
      project: 'team',
      destination: { name: 'team-cluster', namespace: 'team-a' },
    }),
  );
  await applyRaw(
    cp.admin,
    application('strict-app', fx.repo.url, {
      project: 'strict',
      destination: { name: 'team-cluster', namespace: 'team-a' },
    }),
  );
  await waitForApp(cp, 'team-app', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
  const writes = requestsIn(await cp.readAudit(), 'team-a').filter((r) => r.verb === 'patch' && !r.dryRun);
  assert.ok(writes.length > 0, 'the ConfigMap was applied through team-cluster');
  for (const r of writes) assert.equal(r.impersonatedUser, 'system:serviceaccount:team-a:deployer');
  const strict = await waitForApp(cp, 'strict-app', 'InvalidSpecError', (a) => !!condition(a, 'InvalidSpecError'));
  assert.ok(
    condition(strict, 'InvalidSpecError')?.startsWith(
      "application destination server 'team-cluster' and namespace 'team-a' do not match any of the allowed destinations in project 'strict'",
    ),
    condition(strict, 'InvalidSpecError'),
  );
});

test('a namespace-scoped cluster: another namespace and, without clusterResources, cluster-scoped objects are refused unread', async () => {
  // The same API server under another URL: a cluster of its own to the controller.
  const server = cp.server.replace('127.0.0.1', 'localhost');
  await clusterSecret('ns-cluster', server, { namespaces: 'ns-a' });
  await applyRaw(cp.admin, project('scoped', { destinationServiceAccounts: EVERY_DESTINATION }));
  const to = (name: string, path: string) =>
    applyRaw(
      cp.admin,
      application(name, fx.repo.url, { project: 'scoped', path, destination: { server, namespace: 'ns-a' } }),
    );
  await to('ns-ok', 'app');
  await to('ns-elsewhere', 'elsewhere');
  await to('ns-cluster-scoped', 'cluster-scoped');
  await waitForApp(cp, 'ns-ok', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
  const elsewhere = await waitForApp(cp, 'ns-elsewhere', 'ComparisonError', (a) => !!condition(a, 'ComparisonError'));
  assert.equal(
    condition(elsewhere, 'ComparisonError'),
    'Failed to load live state: namespace "ns-b" for ConfigMap "elsewhere" is not managed',
  );
  assert.equal((elsewhere.status?.['sync'] as { status?: string }).status, 'Unknown');
  const scoped = await waitForApp(cp, 'ns-cluster-scoped', 'ComparisonError', (a) => !!condition(a, 'ComparisonError'));
  assert.equal(
    condition(scoped, 'ComparisonError'),
    'Failed to load live state: cluster level ClusterRole "ns-reader" can not be managed when in namespaced mode',
  );
  const records = await cp.readAudit();
  assert.deepEqual(requestsIn(records, 'ns-b'), [], 'nothing was read or written in ns-b');
  assert.ok(
    !records.some((r) => r.user === MANAGER && r.resource === 'clusterroles' && r.name === 'ns-reader'),
    'the ClusterRole was neither read nor written',
  );
  // clusterResources: "true" lets the cluster manage it: the refusal goes (the deployer may not write one).
  await clusterSecret('ns-cluster', server, { namespaces: 'ns-a', clusterResources: 'true' });
  await waitForApp(
    cp,
    'ns-cluster-scoped',
    'no namespaced-mode refusal',
    (a) => !condition(a, 'ComparisonError')?.includes('namespaced mode'),
  );
});
