// The Helm chart's renders on a real control plane: the default release applies (CRDs first) and its
// admission policy works; a release with every option (fallback RBAC, resourceNames-limited
// impersonation, a ServiceMonitor) applies once the ServiceMonitor CRD exists, and its RBAC lets the
// controller impersonate only the listed ServiceAccounts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startControlPlane,
  createNamespace,
  createServiceAccount,
  getRaw,
  listRaw,
  request,
} from '../support/index.ts';
import type { TestControlPlane, KubeObject } from '../support/index.ts';
import { admissionDenial, applyAll, chartDir, find, helmTemplate, runTool, until } from '../deploy/render.ts';

let cp: TestControlPlane;

before(async () => {
  cp = await startControlPlane();
  for (const ns of ['argocd', 'ops', 'team-a', 'team-b']) await createNamespace(cp.admin, ns);
  for (const [ns, name] of [
    ['team-a', 'x'],
    ['team-a', 'w'],
    ['team-b', 'z'],
  ] as const)
    await createServiceAccount(cp.admin, ns, name);
});

after(async () => {
  await cp?.stop();
});

test('the default release applies, and its admission policy rejects a bad AppProject', async () => {
  const objects = helmTemplate({ release: 'impersync', namespace: 'argocd' });
  await applyAll(cp.admin, objects);
  for (const o of objects.filter((x) => x.kind !== 'CustomResourceDefinition')) {
    assert.ok(
      await getRaw(cp.admin, {
        apiVersion: o.apiVersion,
        kind: o.kind,
        name: o.metadata.name,
        namespace: o.metadata.namespace,
      }),
      `${o.kind} ${o.metadata.name} stored`,
    );
  }
  const bad = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name: 'bad', namespace: 'argocd' },
    spec: { destinationServiceAccounts: [{ server: '[z-a]', defaultServiceAccount: 'sa' }] },
  };
  const message = await admissionDenial(cp.admin, bad);
  assert.match(message, /denied request: server has an invalid format, '\[z-a\]'$/);
  const rs = await until(
    'a ReplicaSet',
    async () => (await listRaw(cp.admin, { apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: 'argocd' }))[0],
  );
  assert.equal((rs['spec'] as { replicas: number }).replicas, 2);
});

const opsValues = [
  'rbac.shape=fallback',
  'argocdCm.impersonation.enforced=false',
  'serviceMonitor.enabled=true',
  'admission.enabled=false',
  'rbac.impersonate.serviceAccounts[0].namespace=team-a',
  'rbac.impersonate.serviceAccounts[0].name=x',
  'rbac.impersonate.serviceAccounts[1].namespace=team-b',
  'rbac.impersonate.serviceAccounts[1].name=z',
];

test('a ServiceMonitor needs its CRD: off by default, and applies once the CRD exists', async () => {
  const objects = helmTemplate({ release: 'ops', namespace: 'ops', set: opsValues });
  const monitor = find(objects, 'ServiceMonitor');
  // The API server has no such kind (discovery answers 404 for the group, or lists no such kind).
  await assert.rejects(
    applyAll(cp.admin, [monitor]),
    /applying ServiceMonitor ops\/ops-impersync: .*(serves no kind ServiceMonitor|monitoring\.coreos\.com\/v1: HTTP 404)/,
  );
  // A minimal stand-in for prometheus-operator's CRD: same group, version and kind.
  const crd: KubeObject = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'servicemonitors.monitoring.coreos.com' },
    spec: {
      group: 'monitoring.coreos.com',
      scope: 'Namespaced',
      names: {
        kind: 'ServiceMonitor',
        listKind: 'ServiceMonitorList',
        plural: 'servicemonitors',
        singular: 'servicemonitor',
      },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
  await applyAll(cp.admin, [crd, ...objects]);
  assert.ok(
    await getRaw(cp.admin, {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      namespace: 'ops',
      name: 'ops-impersync',
    }),
  );
});

test('resourceNames-limited impersonation: only the listed ServiceAccounts; fallback gives rights of its own', async () => {
  const sa = await cp.kubeconfigFor({ serviceAccount: 'ops-impersync', namespace: 'ops' });
  const read = async (ns: string, asUser?: string) =>
    (await request(sa, { path: `/api/v1/namespaces/${ns}/serviceaccounts`, asUser })).status;
  // Impersonation is checked before the request itself; x and z have no rights, so a permitted
  // impersonation ends in 403 from the impersonated user, a refused one in 403 naming impersonate.
  const attempt = async (user: string) =>
    (await request(sa, { path: '/api/v1/namespaces/team-a/configmaps', asUser: user })).text;
  assert.match(
    await attempt('system:serviceaccount:team-a:x'),
    /User \\"system:serviceaccount:team-a:x\\" cannot list resource \\"configmaps\\"/,
  );
  assert.match(
    await attempt('system:serviceaccount:team-b:z'),
    /User \\"system:serviceaccount:team-b:z\\" cannot list resource \\"configmaps\\"/,
  );
  assert.match(await attempt('system:serviceaccount:team-a:w'), /cannot impersonate resource \\"serviceaccounts\\"/);
  // fallback: the controller's own credential reads tenant namespaces.
  assert.equal(await read('team-a'), 200);
});

test('helm itself installs, upgrades and uninstalls a release on the control plane', async () => {
  await createNamespace(cp.admin, 'helm-real');
  const kubeconfig = ['--kubeconfig', cp.adminKubeconfigPath, '--namespace', 'helm-real'];
  // The admission policy is cluster-wide and already owned by the first release's apply.
  const install = runTool('helm', [
    'install',
    'real',
    chartDir,
    ...kubeconfig,
    '--set',
    'admission.enabled=false',
    '--wait=false',
  ]);
  assert.equal(install.status, 0, install.stderr);
  assert.match(install.stdout, /STATUS: deployed/);
  assert.match(install.stdout, /RBAC shape: strict/);
  const dep = await getRaw(cp.admin, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    namespace: 'helm-real',
    name: 'real-impersync',
  });
  assert.equal(
    (dep?.metadata['labels'] as Record<string, string> | undefined)?.['app.kubernetes.io/managed-by'],
    'Helm',
  );
  const upgrade = runTool('helm', [
    'upgrade',
    'real',
    chartDir,
    ...kubeconfig,
    '--reuse-values',
    '--set',
    'rbac.shape=fallback',
    '--set',
    'argocdCm.impersonation.enforced=false',
  ]);
  assert.equal(upgrade.status, 0, upgrade.stderr);
  assert.ok(
    await getRaw(cp.admin, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      name: 'real-impersync-fallback',
    }),
  );
  const cm = await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'helm-real', name: 'argocd-cm' });
  assert.equal((cm?.['data'] as Record<string, string>)['application.sync.impersonation.enforced'], 'false');
  const uninstall = runTool('helm', ['uninstall', 'real', ...kubeconfig]);
  assert.equal(uninstall.status, 0, uninstall.stderr);
  assert.equal(
    await getRaw(cp.admin, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      name: 'real-impersync-fallback',
    }),
    undefined,
  );
  // The CRDs stay: they hold the Applications.
  assert.ok(
    await getRaw(cp.admin, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      name: 'applications.argoproj.io',
    }),
  );
});
