// Argo CD's diff semantics end to end, through the controller and Argo CD's own YAML:
// ignoreDifferences (the Application's jqPathExpressions, argocd-cm's jsonPointers) with self-heal
// and RespectIgnoreDifferences, resource.exclusions, SharedResourceWarning and
// FailOnSharedResource, skip-reconcile, orphanedResources, and the UnsupportedFieldWarning of issue
// 14's rule. Messages are Argo CD's (controller/state.go, controller/sync.go,
// controller/appcontroller.go).
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
  project,
  startFixture,
  waitForApp,
  startDeployersPlane,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;
const SETTINGS = {
  'application.sync.impersonation.enabled': 'true',
  'resource.customizations.ignoreDifferences.ConfigMap': 'jsonPointers:\n- /data/byCm\n',
};

const cm = (name: string, data: Record<string, string>, annotations?: Record<string, string>) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${
    annotations
      ? `  annotations:\n${Object.entries(annotations)
          .map(([k, v]) => `    ${k}: "${v}"`)
          .join('\n')}\n`
      : ''
  }data:\n${Object.entries(data)
    .map(([k, v]) => `  ${k}: "${v}"`)
    .join('\n')}\n`;

const synced = (a: { status?: Record<string, unknown> }) =>
  (a.status?.['sync'] as { status?: string } | undefined)?.status;

function app(name: string, path: string, ns: string, spec: Record<string, unknown> = {}) {
  const base = application(name, fx.repo.url, {
    project: 'sem',
    path,
    destination: { server: 'https://kubernetes.default.svc', namespace: ns },
  });
  return { ...base, spec: { ...(base['spec'] as Record<string, unknown>), ...spec } };
}

async function liveCm(ns: string, name: string) {
  return (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name, namespace: ns })) as
    { data?: Record<string, string> } | undefined;
}

before(async () => {
  cp = await startDeployersPlane({
    settings: SETTINGS,
    project: 'sem',
    namespaces: ['ignore', 'excl', 'shared', 'skip', 'said', 'orph'],
  });
  fx = await startFixture(cp, {
    'ignore/cm.yaml': cm('settings', { byJq: 'git', byCm: 'git', kept: 'git' }),
    'excl/cm.yaml': cm('plain', { a: '1' }),
    'excl/endpoints.yaml': 'apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: manual\nsubsets: []\n',
    'shared/cm.yaml': cm('shared', { a: '1' }),
    'skip/cm.yaml': cm('skipped', { a: '1' }),
    'said/cm.yaml': cm('said', { a: '1' }),
    'orph/cm.yaml': cm('mine', { a: '1' }),
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('ignoreDifferences: ignored fields changed live stay Synced and self-heal leaves them; others are healed', async () => {
  await applyRaw(
    cp.admin,
    app('ignore', 'ignore', 'ignore', {
      ignoreDifferences: [{ group: '', kind: 'ConfigMap', jqPathExpressions: ['.data.byJq'] }],
      syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ['RespectIgnoreDifferences=true'] },
    }),
  );
  await waitForApp(cp, 'ignore', 'Synced', (a) => synced(a) === 'Synced' && operationPhase(a) === 'Succeeded');
  // Another controller edits the two ignored keys: nothing to sync.
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: '/api/v1/namespaces/ignore/configmaps/settings',
    body: { data: { byJq: 'hpa', byCm: 'hpa' } },
    contentType: 'application/merge-patch+json',
  });
  await new Promise((r) => setTimeout(r, 3000));
  const still = await waitForApp(cp, 'ignore', 'still Synced', (a) => synced(a) === 'Synced');
  assert.equal(synced(still), 'Synced');
  assert.deepEqual((await liveCm('ignore', 'settings'))?.data, { byJq: 'hpa', byCm: 'hpa', kept: 'git' });
  // A key that is not ignored is OutOfSync and self-heal puts it back; with RespectIgnoreDifferences
  // the ignored keys keep their live values through that sync.
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: '/api/v1/namespaces/ignore/configmaps/settings',
    body: { data: { kept: 'drift' } },
    contentType: 'application/merge-patch+json',
  });
  const end = Date.now() + 60_000;
  let data: Record<string, string> | undefined;
  while (Date.now() < end) {
    data = (await liveCm('ignore', 'settings'))?.data;
    if (data?.['kept'] === 'git') break;
    await new Promise((r) => setTimeout(r, 300));
  }
  assert.deepEqual(data, { byJq: 'hpa', byCm: 'hpa', kept: 'git' });
});

test("resource.exclusions (Argo CD's install defaults): an Endpoints object is neither applied nor compared, and said", async () => {
  await applyRaw(cp.admin, app('excl', 'excl', 'excl'));
  const a = await waitForApp(
    cp,
    'excl',
    'ExcludedResourceWarning, synced',
    // The refresh after the sync says Synced: the excluded Endpoints is not compared (else it stays OutOfSync).
    (x) =>
      condition(x, 'ExcludedResourceWarning') !== undefined &&
      operationPhase(x) === 'Succeeded' &&
      synced(x) === 'Synced',
  );
  assert.equal(condition(a, 'ExcludedResourceWarning'), 'Resource /Endpoints manual is excluded in the settings');
  assert.equal(synced(a), 'Synced');
  const endpoints = (await cp.readAudit()).filter(
    (r) => r.namespace === 'excl' && r.resource === 'endpoints' && r.user === cp.controllerUserName,
  );
  assert.deepEqual(
    endpoints.map((r) => `${r.verb} ${r.requestURI}`),
    [],
  );
});

test("SharedResourceWarning, and FailOnSharedResource=true fails the sync with Argo CD's message", async () => {
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'shared',
      namespace: 'shared',
      annotations: { 'argocd.argoproj.io/tracking-id': 'other:/ConfigMap:shared/shared' },
    },
    data: { a: '1' },
  });
  const manifest = app('shared', 'shared', 'shared', { syncPolicy: { syncOptions: ['FailOnSharedResource=true'] } });
  await applyRaw(cp.admin, manifest);
  const warned = await waitForApp(
    cp,
    'shared',
    'SharedResourceWarning',
    (x) => condition(x, 'SharedResourceWarning') !== undefined,
  );
  assert.equal(
    condition(warned, 'SharedResourceWarning'),
    'ConfigMap/shared is part of applications argocd/shared and other',
  );
  await until('the SharedResourceWarning event', () =>
    fx.events.events.some((e) => e.reason === 'SharedResourceWarning' && e.object.name === 'shared'),
  );
  await applyRaw(cp.admin, {
    ...manifest,
    operation: {
      sync: { revision: 'HEAD', syncOptions: ['FailOnSharedResource=true'] },
      initiatedBy: { username: 'alice' },
    },
  });
  const failed = await waitForApp(cp, 'shared', 'sync Failed', (x) => operationPhase(x) === 'Failed');
  assert.equal(
    (failed.status?.['operationState'] as { message: string }).message,
    'Shared resource found: ConfigMap/shared is part of applications argocd/shared and other',
  );
  const live = (await getRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: 'shared',
    namespace: 'shared',
  })) as unknown as {
    metadata: { annotations: Record<string, string> };
  };
  assert.equal(
    live.metadata.annotations['argocd.argoproj.io/tracking-id'],
    'other:/ConfigMap:shared/shared',
    'not taken over',
  );
});

test('argocd.argoproj.io/skip-reconcile: the Application is left alone entirely', async () => {
  const manifest = app('skip', 'skip', 'skip');
  (manifest['metadata'] as Record<string, unknown>)['annotations'] = { 'argocd.argoproj.io/skip-reconcile': 'true' };
  await applyRaw(cp.admin, manifest);
  await new Promise((r) => setTimeout(r, 4000));
  const got = (await getRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    name: 'skip',
    namespace: NS,
  })) as {
    status?: unknown;
  };
  assert.equal(got.status, undefined);
  assert.equal(await liveCm('skip', 'skipped'), undefined);
  assert.deepEqual(
    (await cp.readAudit()).filter((r) => r.namespace === 'skip' && r.user === cp.controllerUserName).map((r) => r.verb),
    [],
  );
});

test('what Argo CD defines and impersync does not act on is named in UnsupportedFieldWarning and an event', async () => {
  // A ref on a single source: Argo CD gives it meaning only among spec.sources. The hydrator's
  // annotations, which Argo CD's server sets on every refresh, are no warning (Argo CD's controller
  // ignores them too without spec.sourceHydrator).
  const said = app('said', 'said', 'said') as ReturnType<typeof app> & { spec: { source: Record<string, unknown> } };
  said.spec.source['ref'] = 'values';
  await applyRaw(cp.admin, {
    ...said,
    metadata: {
      ...said.metadata,
      annotations: { 'argocd.argoproj.io/hydrate': 'normal', 'argocd.argoproj.io/hydrate-timestamp': 'x' },
    },
  });
  const a = await waitForApp(
    cp,
    'said',
    'UnsupportedFieldWarning',
    (x) => condition(x, 'UnsupportedFieldWarning') !== undefined,
  );
  assert.equal(
    condition(a, 'UnsupportedFieldWarning'),
    'impersync does not act on: Application spec.source.ref (a ref has meaning only among spec.sources)',
  );
  // The event is recorded just after the status is written: wait for it rather than race it.
  await until('the UnsupportedFieldWarning event', () =>
    fx.events.events.some((e) => e.reason === 'UnsupportedFieldWarning' && e.object.name === 'said'),
  );
});

test("orphanedResources: the namespace's objects no existing Application tracks, with their children, in Argo CD's words", async () => {
  await applyRaw(
    cp.admin,
    project('orph', {
      destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }],
      // The deployer's own ServiceAccount, Role and RoleBinding are orphans too; the ignore list says not these.
      orphanedResources: { warn: true, ignore: [{ kind: 'ServiceAccount' }, { group: 'rbac.authorization.k8s.io' }] },
    }),
  );
  const stray = (await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'stray', namespace: 'orph' },
  })) as unknown as { metadata: { uid: string } };
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'stray-child',
      namespace: 'orph',
      ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'stray', uid: stray.metadata.uid }],
    },
  });
  const tracked = (name: string, by: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace: 'orph',
      annotations: { 'argocd.argoproj.io/tracking-id': `${by}:/ConfigMap:orph/${name}` },
    },
  });
  // Tracked by an Application that does not exist: an orphan. Tracked by one that does: not.
  await applyRaw(cp.admin, tracked('ghosted', 'ghost'));
  await applyRaw(cp.admin, tracked('claimed', 'orph'));
  await applyRaw(cp.admin, app('orph', 'orph', 'orph', { project: 'orph' }));
  const a = await waitForApp(
    cp,
    'orph',
    'OrphanedResourceWarning',
    (x) => condition(x, 'OrphanedResourceWarning') !== undefined && synced(x) === 'Synced',
  );
  // stray, stray-child, ghosted; not mine (the Application's), claimed, kube-root-ca.crt, default.
  assert.equal(condition(a, 'OrphanedResourceWarning'), 'Application has 3 orphaned resources');
  const lists = (await cp.readAudit()).filter(
    (r) => r.namespace === 'orph' && r.verb === 'list' && r.user === cp.controllerUserName,
  );
  assert.ok(lists.length > 0);
  assert.deepEqual(
    lists.filter((r) => r.impersonatedUser !== 'system:serviceaccount:orph:deployer').map((r) => r.requestURI),
    [],
    "looked for as the Application's ServiceAccount",
  );
  // warn: false: looked for, not warned about (Argo CD's IsWarn).
  await applyRaw(
    cp.admin,
    project('orph', {
      destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }],
      orphanedResources: { warn: false },
    }),
  );
  await waitForApp(
    cp,
    'orph',
    'no OrphanedResourceWarning',
    (x) => condition(x, 'OrphanedResourceWarning') === undefined,
  );
});
