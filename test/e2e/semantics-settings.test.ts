// argocd-cm's comparison and tracking settings end to end, with Argo CD's YAML and messages
// (util/settings/settings.go, util/argo/resource_tracking.go, controller/state.go):
// application.resourceTrackingMethod annotation+label with application.instanceLabelKey,
// resource.inclusions, and spec.ignoreDifferences managedFieldsManagers with self-heal.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, getRaw, requestOk } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import {
  application,
  condition,
  NS,
  operationPhase,
  startFixture,
  waitForApp,
  startDeployersPlane,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

const SETTINGS = {
  'application.sync.impersonation.enabled': 'true',
  'application.resourceTrackingMethod': 'annotation+label',
  'application.instanceLabelKey': 'example.com/app',
  // Only core kinds: a Deployment is excluded (Argo CD's inclusions).
  'resource.inclusions': '- apiGroups: [""]\n  kinds: ["*"]\n  clusters: ["*"]\n',
};

const cm = (name: string, data: Record<string, string>) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n${Object.entries(data)
    .map(([k, v]) => `  ${k}: "${v}"`)
    .join('\n')}\n`;

const synced = (a: { status?: Record<string, unknown> }) =>
  (a.status?.['sync'] as { status?: string } | undefined)?.status;

function app(name: string, spec: Record<string, unknown> = {}) {
  const base = application(name, fx.repo.url, {
    project: 'sem',
    path: name,
    destination: { server: 'https://kubernetes.default.svc', namespace: name },
  });
  return { ...base, spec: { ...(base['spec'] as Record<string, unknown>), ...spec } };
}

const get = (ns: string, name: string) =>
  getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name, namespace: ns }) as Promise<
    | {
        data?: Record<string, string>;
        metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
      }
    | undefined
  >;

before(async () => {
  cp = await startDeployersPlane({
    settings: SETTINGS,
    project: 'sem',
    namespaces: ['tracked', 'included', 'managers'],
  });
  fx = await startFixture(cp, {
    'tracked/cm.yaml': cm('both', { a: '1' }),
    'included/cm.yaml': cm('core', { a: '1' }),
    'included/deploy.yaml':
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n' +
      '  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx\n',
    'managers/cm.yaml': cm('scaled', { replicas: '1', kept: 'git' }),
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('annotation+label with application.instanceLabelKey: both written, the label under that key', async () => {
  await applyRaw(cp.admin, app('tracked'));
  await waitForApp(cp, 'tracked', 'Synced', (x) => synced(x) === 'Synced' && operationPhase(x) === 'Succeeded');
  const live = await get('tracked', 'both');
  assert.equal(live?.metadata.labels?.['example.com/app'], 'tracked');
  assert.equal(live?.metadata.labels?.['app.kubernetes.io/instance'], undefined);
  assert.equal(live?.metadata.annotations?.['argocd.argoproj.io/tracking-id'], 'tracked:/ConfigMap:tracked/both');
});

test('resource.inclusions: a kind outside them is neither applied nor compared, and said', async () => {
  await applyRaw(cp.admin, app('included'));
  const a = await waitForApp(
    cp,
    'included',
    'ExcludedResourceWarning, synced',
    (x) =>
      condition(x, 'ExcludedResourceWarning') !== undefined &&
      operationPhase(x) === 'Succeeded' &&
      synced(x) === 'Synced',
  );
  assert.equal(condition(a, 'ExcludedResourceWarning'), 'Resource apps/Deployment web is excluded in the settings');
  assert.ok(await get('included', 'core'));
  const deployments = (await cp.readAudit()).filter(
    (r) => r.namespace === 'included' && r.resource === 'deployments' && r.user === cp.controllerUserName,
  );
  assert.deepEqual(
    deployments.map((r) => `${r.verb} ${r.requestURI}`),
    [],
  );
});

test('managedFieldsManagers: what another manager owns stays Synced and self-heal leaves it; the rest is healed', async () => {
  await applyRaw(
    cp.admin,
    app('managers', {
      ignoreDifferences: [{ group: '', kind: 'ConfigMap', managedFieldsManagers: ['autoscaler'] }],
      syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ['RespectIgnoreDifferences=true'] },
    }),
  );
  await waitForApp(cp, 'managers', 'Synced', (x) => synced(x) === 'Synced' && operationPhase(x) === 'Succeeded');
  // Another controller takes over one key with its own server-side apply.
  await applyRaw(
    cp.admin,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'scaled', namespace: 'managers' },
      data: { replicas: '5' },
    },
    { fieldManager: 'autoscaler' },
  );
  // A drift in a key nobody else owns is healed; the autoscaler's key keeps its value through that sync.
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: '/api/v1/namespaces/managers/configmaps/scaled',
    body: { data: { kept: 'drift' } },
    contentType: 'application/merge-patch+json',
  });
  await until('kept healed', async () => (await get('managers', 'scaled'))?.data?.['kept'] === 'git', 60_000);
  assert.equal((await get('managers', 'scaled'))?.data?.['replicas'], '5');
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/managers`,
    body: { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'normal' } } },
    contentType: 'application/merge-patch+json',
  });
  const a = await waitForApp(
    cp,
    'managers',
    'refreshed, Synced',
    (x) => !(x['metadata'] as { annotations?: Record<string, string> }).annotations?.['argocd.argoproj.io/refresh'],
  );
  assert.equal(synced(a), 'Synced');
  assert.equal((await get('managers', 'scaled'))?.data?.['replicas'], '5');
});
