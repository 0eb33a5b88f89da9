// argocd-cm resource.respectRBAC end to end, with Argo CD's values (util/settings/settings.go
// RespectRBAC, gitops-engine pkg/cache/cluster.go): an AppProject with orphanedResources, its
// Application synced as a ServiceAccount that may manage ConfigMaps and nothing else in the
// namespace. impersync reads as that identity where Argo CD's cache reads as its controller:
// unset, a kind it may not list fails the live state as Argo CD's cluster cache fails (the
// Application Unknown, nothing synced); `normal` leaves such kinds out and counts the orphans of
// the others; a value Argo CD does not know fails every Application, as it fails Argo CD's cache.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, createNamespace, grantRole } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  application,
  condition,
  project,
  setSettings,
  startFixture,
  waitForApp,
  startDeployersPlane,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

const BASE = { 'application.sync.impersonation.enabled': 'true' };
const synced = (a: { status?: Record<string, unknown> }) =>
  (a.status?.['sync'] as { status?: string } | undefined)?.status;

before(async () => {
  cp = await startDeployersPlane({ settings: BASE, project: 'unused', namespaces: [] });
  await createNamespace(cp.admin, 'rbac');
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'limited', namespace: 'rbac' },
  });
  await grantRole(cp.admin, {
    name: 'limited-configmaps',
    namespace: 'rbac',
    to: { serviceAccount: 'limited', namespace: 'rbac' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
  });
  await applyRaw(
    cp.admin,
    project('rb', {
      destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: 'limited' }],
      orphanedResources: { warn: true },
    }),
  );
  await applyRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'stray', namespace: 'rbac' } });
  fx = await startFixture(cp, {
    'rbac/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mine\ndata:\n  a: b\n',
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('respectRBAC: unset, a kind the identity may not list is a ComparisonError; normal, it is left out; an unknown value fails', async () => {
  await applyRaw(
    cp.admin,
    application('rbac', fx.repo.url, {
      project: 'rb',
      path: 'rbac',
      destination: { server: 'https://kubernetes.default.svc', namespace: 'rbac' },
    }),
  );
  const unset = await waitForApp(cp, 'rbac', 'ComparisonError', (a) => condition(a, 'ComparisonError') !== undefined);
  assert.match(
    condition(unset, 'ComparisonError') ?? '',
    /^Failed to load live state: failed to get cluster info for "https:\/\/kubernetes\.default\.svc": error synchronizing cache state : failed to sync cluster https:\/\/kubernetes\.default\.svc: failed to load initial state of resource \S+: .* is forbidden: User "system:serviceaccount:rbac:limited" cannot list resource/,
  );
  assert.equal(synced(unset), 'Unknown');

  await setSettings(cp, { ...BASE, 'resource.respectRBAC': 'normal' });
  const normal = await waitForApp(
    cp,
    'rbac',
    'OrphanedResourceWarning, no ComparisonError',
    (a) => condition(a, 'ComparisonError') === undefined && condition(a, 'OrphanedResourceWarning') !== undefined,
  );
  // kube-root-ca.crt is a known default; `stray` is the one orphan among the ConfigMaps it may list.
  assert.equal(condition(normal, 'OrphanedResourceWarning'), 'Application has 1 orphaned resources');

  await setSettings(cp, { ...BASE, 'resource.respectRBAC': 'sometimes' });
  const invalid = await waitForApp(cp, 'rbac', 'invalid value', (a) => condition(a, 'ComparisonError') !== undefined);
  assert.equal(
    condition(invalid, 'ComparisonError'),
    'Failed to load live state: failed to get cluster info for "https://kubernetes.default.svc": error getting cluster: error getting value for resource.respectRBAC: invalid value for resource.respectRBAC: sometimes',
  );
});
