// The Helm chart's renders on a real control plane: the default release applies (CRDs first, strict
// field validation) into a namespace enforcing the restricted Pod Security Standard, its Pods (the
// controller's and the renderer's) are admitted, its admission policy works, and its controller may
// impersonate no ServiceAccount until one is listed (kube-system's controllers only with the
// clusterWide opt-in); a release with every option (fallback RBAC, whole-namespace and
// resourceNames-limited impersonation, the renderer egress policy, a ServiceMonitor) applies once
// the ServiceMonitor CRD exists, and its RBAC lets the controller impersonate only what it lists; a
// release with plugin sidecars (renderer.plugins) is valid and its renderer Pod is admitted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startControlPlane,
  applyRaw,
  createNamespace,
  createServiceAccount,
  getRaw,
  listRaw,
  request,
} from '../support/index.ts';
import type { TestControlPlane, KubeObject } from '../support/index.ts';
import {
  admissionDenial,
  applyAll,
  chartDir,
  dryRunPodOf,
  find,
  helmTemplate,
  runTool,
  until,
} from '../deploy/render.ts';

let cp: TestControlPlane;
const garbageCollector = 'system:serviceaccount:kube-system:generic-garbage-collector';

before(async () => {
  cp = await startControlPlane();
  await createNamespace(cp.admin, 'argocd', { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } });
  for (const ns of ['ops', 'team-a', 'team-b', 'team-c']) await createNamespace(cp.admin, ns);
  for (const [ns, name] of [
    ['team-a', 'x'],
    ['team-a', 'w'],
    ['team-b', 'z'],
    ['team-c', 'anyone'],
  ] as const)
    await createServiceAccount(cp.admin, ns, name);
});

/**
 * How the API server answers `kc` impersonating `user` to list configmaps in the user's namespace:
 * `impersonated` when the impersonation passed (the user itself may list nothing, so 403 naming the
 * user), `refused` when the impersonation itself was refused.
 */
async function impersonation(kc: Parameters<typeof request>[0], user: string): Promise<string> {
  const ns = user.split(':')[2] ?? '';
  const res = await request(kc, { path: `/api/v1/namespaces/${ns}/configmaps`, asUser: user });
  if (/cannot impersonate resource \\"serviceaccounts\\"/.test(res.text)) return 'refused';
  if (res.status === 200 || new RegExp(`User \\\\"${user}\\\\" cannot list`).test(res.text)) return 'impersonated';
  return `HTTP ${res.status}: ${res.text}`;
}

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
  // Both Deployments' Pods are admitted by the restricted standard (never scheduled: no nodes).
  const component = (p: KubeObject) => (p.metadata['labels'] as Record<string, string>)['app.kubernetes.io/component'];
  const pods = await until('two controller Pods and two renderer Pods', async () => {
    const list = await listRaw(cp.admin, { apiVersion: 'v1', kind: 'Pod', namespace: 'argocd' });
    const n = (c: string) => list.filter((p) => component(p) === c).length;
    return n('controller') === 2 && n('renderer') === 2 ? list : undefined;
  }).catch(async (err: Error) => {
    const events = await listRaw(cp.admin, { apiVersion: 'v1', kind: 'Event', namespace: 'argocd' });
    throw new Error(`${err.message}; events: ${events.map((e) => String(e['message'])).join(' | ')}`);
  });
  for (const pod of pods.filter((p) => component(p) === 'renderer')) {
    const volumes = (pod['spec'] as { volumes: { projected?: { sources: object[] } }[] }).volumes;
    assert.ok(
      !volumes.some((v) => (v.projected?.sources ?? []).some((x) => 'serviceAccountToken' in x)),
      `renderer Pod ${pod.metadata.name} has no ServiceAccount token`,
    );
  }
});

test('a release with two plugin sidecars: its renderer Deployment is valid and its Pod passes the restricted standard', async () => {
  const mount = (name: string) => ({
    name,
    mountPath: '/home/argocd/cmp-server/config/plugin.yaml',
    subPath: 'plugin.yaml',
  });
  const objects = helmTemplate({
    release: 'impersync',
    namespace: 'argocd',
    setJson: [
      `renderer.plugins.sidecars=${JSON.stringify([
        { name: 'avp', image: 'registry.example.com/avp:1', volumeMounts: [mount('avp-config')] },
        { name: 'kh', image: 'registry.example.com/kh:2', volumeMounts: [mount('kh-config')] },
      ])}`,
      `renderer.plugins.volumes=${JSON.stringify([
        { name: 'avp-config', configMap: { name: 'cmp-avp' } },
        { name: 'kh-config', configMap: { name: 'cmp-kh' } },
      ])}`,
    ],
  });
  const deployment = find(objects, 'Deployment', 'impersync-renderer');
  // Strict field validation: a field the chart misspelt, or a volume named twice, is an error.
  await applyRaw(cp.admin, find(objects, 'ServiceAccount', 'impersync-renderer'), { fieldValidation: 'Strict' });
  await applyRaw(cp.admin, deployment, { dryRun: true, fieldValidation: 'Strict' });
  // Its Pod, created in dry run: Pod Security (restricted, enforced) judges it.
  const created = await dryRunPodOf(cp.admin, deployment, 'impersync-renderer-plugins');
  const spec = created['spec'] as { containers: { name: string }[]; initContainers: { name: string }[] };
  assert.deepEqual(spec.containers.map((c) => c.name).sort(), ['avp', 'kh', 'renderer']);
  assert.deepEqual(
    spec.initContainers.map((c) => c.name),
    ['copyutil'],
  );
});

test('the default release may impersonate no ServiceAccount; clusterWide would let it act as a kube-system controller', async () => {
  const sa = await cp.kubeconfigFor({ serviceAccount: 'impersync', namespace: 'argocd' });
  for (const user of ['system:serviceaccount:team-a:x', garbageCollector])
    assert.equal(await impersonation(sa, user), 'refused', user);
  // The opt-in, applied as `helm upgrade --set rbac.impersonate.clusterWide=true` would: the
  // ClusterRoleBinding it adds is the whole difference.
  const wide = helmTemplate({ release: 'impersync', namespace: 'argocd', set: ['rbac.impersonate.clusterWide=true'] });
  const binding = find(wide, 'ClusterRoleBinding', 'impersync-impersonate');
  await applyAll(cp.admin, [binding]);
  try {
    await until('cluster-wide impersonation', async () =>
      (await impersonation(sa, garbageCollector)) === 'impersonated' ? true : undefined,
    );
    assert.equal((await request(sa, { path: '/api/v1/secrets', asUser: garbageCollector })).status, 200);
  } finally {
    await request(cp.admin, {
      method: 'DELETE',
      path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/impersync-impersonate',
    });
  }
  await until('refused again', async () =>
    (await impersonation(sa, garbageCollector)) === 'refused' ? true : undefined,
  );
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
  'rbac.impersonate.namespaces[0]=team-c',
  'networkPolicy.rendererEgress.enabled=true',
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

test('listed impersonation: the ServiceAccounts by name, every one of a listed namespace, nothing else; fallback gives rights of its own', async () => {
  const sa = await cp.kubeconfigFor({ serviceAccount: 'ops-impersync', namespace: 'ops' });
  const read = async (ns: string, asUser?: string) =>
    (await request(sa, { path: `/api/v1/namespaces/${ns}/serviceaccounts`, asUser })).status;
  // Impersonation is checked before the request itself; these users have no rights, so a permitted
  // impersonation ends in 403 from the impersonated user, a refused one in 403 naming impersonate.
  const outcomes = Object.fromEntries(
    await Promise.all(
      [
        'system:serviceaccount:team-a:x',
        'system:serviceaccount:team-b:z',
        'system:serviceaccount:team-c:anyone',
        'system:serviceaccount:team-c:no-such-account',
        'system:serviceaccount:team-a:w',
        garbageCollector,
      ].map(async (u) => [u, await impersonation(sa, u)] as const),
    ),
  );
  assert.deepEqual(outcomes, {
    'system:serviceaccount:team-a:x': 'impersonated',
    'system:serviceaccount:team-b:z': 'impersonated',
    'system:serviceaccount:team-c:anyone': 'impersonated',
    // A whole namespace means any name there, existing or not (why system namespaces are refused).
    'system:serviceaccount:team-c:no-such-account': 'impersonated',
    'system:serviceaccount:team-a:w': 'refused',
    [garbageCollector]: 'refused',
  });
  // fallback's broad rights do not include impersonation: kube-system stays out of reach.
  assert.equal((await request(sa, { path: '/api/v1/secrets', asUser: garbageCollector })).status, 403);
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
  assert.match(install.stdout, /The controller may impersonate NO ServiceAccount yet, so every sync is refused/);
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
