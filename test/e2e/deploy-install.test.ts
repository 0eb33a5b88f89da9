// The install manifests on a real control plane: deploy/install.yaml and `kustomize build
// deploy/install` apply (strict field validation), the controller's and the renderer's Pods pass
// the restricted Pod Security Standard (and the renderer's gets no token), and the strict RBAC is
// exactly enough: the controller's ServiceAccount does its own work in argocd, only reads
// AppProjects, reaches tenants only by impersonation and only in the namespaces an admin bound,
// cannot impersonate kube-system's controllers (unless the cluster-wide opt-in is applied, which
// the test shows is the difference), and leads with its Lease. With the cmp-sidecar component the
// renderer's Pod, its plugin sidecar included, still passes the restricted standard with no token.
// The fallback shape then gives it rights of its own. (Syncing the examples with strict RBAC needs
// the controller itself: that is the controller's end-to-end test.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  startControlPlane,
  createNamespace,
  createServiceAccount,
  grantRole,
  applyRaw,
  listRaw,
  request,
  parseYamlDocuments,
  readYamlFile,
} from '../support/index.ts';
import type { TestControlPlane, KubeObject } from '../support/index.ts';
import {
  admissionDenial,
  applyAll,
  applyStrict,
  dryRunPodOf,
  find,
  kustomizeBuild,
  kustomizeOverlay,
  repoRoot,
  tenantImpersonationBinding,
  until,
} from '../deploy/render.ts';
import type { PodSpec } from '../deploy/pod-checks.ts';
import { startLeaderElection } from '../../src/controller/leader.ts';

let cp: TestControlPlane;
let sa: KubeConfig;
const controllerUser = 'system:serviceaccount:argocd:impersync-controller';
const deployer = 'system:serviceaccount:guestbook:guestbook-deployer';
// A kube-system controller: it needs no ServiceAccount object to be impersonated, and its bootstrap
// ClusterRole may get, list, watch, patch, update and delete everything (every Secret included).
const garbageCollector = 'system:serviceaccount:kube-system:generic-garbage-collector';

/** HTTP status of a request made as `kc`. */
async function statusOf(
  kc: KubeConfig,
  method: string,
  path: string,
  body?: unknown,
  asUser?: string,
): Promise<number> {
  return (
    await request(kc, {
      method,
      path,
      body,
      asUser,
      contentType: method === 'PATCH' ? 'application/merge-patch+json' : undefined,
    })
  ).status;
}

before(async () => {
  cp = await startControlPlane();
  // The restricted Pod Security Standard, enforced: Pods that break it are refused.
  await createNamespace(cp.admin, 'argocd', { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } });
  await createNamespace(cp.admin, 'guestbook');
  await createServiceAccount(cp.admin, 'guestbook', 'guestbook-deployer');
  // A tenant the admin did not list.
  await createNamespace(cp.admin, 'unlisted');
  await createServiceAccount(cp.admin, 'unlisted', 'deployer');
  await grantRole(cp.admin, {
    name: 'deployer',
    namespace: 'guestbook',
    to: { serviceAccount: 'guestbook-deployer', namespace: 'guestbook' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'patch', 'delete'] }],
  });
});

after(async () => {
  await cp?.stop();
});

test('deploy/install.yaml and kustomize build deploy/install apply; the Pods pass the restricted standard', async () => {
  const flat = parseYamlDocuments(await readFile(join(repoRoot, 'deploy/install.yaml'), 'utf8'), 'deploy/install.yaml');
  assert.equal(flat.filter((o) => o.kind === 'CustomResourceDefinition').length, 2);
  await applyAll(cp.admin, flat);
  await applyAll(cp.admin, kustomizeBuild('deploy/install'));
  // kube-controller-manager turns each Deployment into a ReplicaSet and two Pods (never scheduled:
  // the control plane has no nodes). A Pod the restricted standard refuses would never appear.
  const component = (p: KubeObject) => (p.metadata['labels'] as Record<string, string>)['app.kubernetes.io/component'];
  const pods = await until('two controller Pods and two renderer Pods', async () => {
    const list = await listRaw(cp.admin, { apiVersion: 'v1', kind: 'Pod', namespace: 'argocd' });
    const n = (c: string) => list.filter((p) => component(p) === c).length;
    return n('controller') === 2 && n('renderer') === 2 ? list : undefined;
  }).catch(async (err: Error) => {
    const events = await listRaw(cp.admin, { apiVersion: 'v1', kind: 'Event', namespace: 'argocd' });
    throw new Error(`${err.message}; events: ${events.map((e) => String(e['message'])).join(' | ')}`);
  });
  // The Pods as stored, after the ServiceAccount admission plugin (which adds a token volume to a Pod
  // that does not refuse one).
  const tokenVolumes = (spec: PodSpec) =>
    spec.volumes.filter((v) => (v.projected?.sources ?? []).some((x) => 'serviceAccountToken' in x));
  const mountsOf = (spec: PodSpec, volume: string) =>
    spec.containers.flatMap((c) =>
      c.volumeMounts.filter((m) => m.name === volume).map((m) => `${c.name}:${m.mountPath}`),
    );
  for (const pod of pods) {
    const spec = pod['spec'] as PodSpec;
    assert.ok(spec.containers.every((c) => c.securityContext['readOnlyRootFilesystem'] === true));
    if (component(pod) === 'renderer') {
      assert.equal(spec.serviceAccountName, 'impersync-renderer');
      assert.deepEqual(tokenVolumes(spec), [], `renderer Pod ${pod.metadata.name}: no ServiceAccount token volume`);
      assert.ok(!spec.volumes.some((v) => v.secret && v.secret.secretName !== 'impersync-renderer-token'));
      assert.equal(spec.securityContext['runAsUser'], 65533);
    } else {
      assert.equal(spec.serviceAccountName, 'impersync-controller');
      // Only the install's own token volume (nothing injected), mounted in the controller container.
      assert.deepEqual(
        tokenVolumes(spec).map((v) => v.name),
        ['serviceaccount-token'],
      );
      assert.deepEqual(mountsOf(spec, 'serviceaccount-token'), [
        'controller:/var/run/secrets/kubernetes.io/serviceaccount',
      ]);
    }
  }
  sa = await cp.kubeconfigFor({ serviceAccount: 'impersync-controller', namespace: 'argocd' });
});

test('the cmp-sidecar component applies, and the renderer Pod with its plugin sidecar passes the restricted standard, with no token', async () => {
  const objects = kustomizeOverlay(['deploy/install'], ['deploy/install/components/cmp-sidecar']);
  await applyStrict(cp.admin, find(objects, 'ServiceAccount', 'impersync-renderer'));
  await applyStrict(cp.admin, find(objects, 'ConfigMap', 'impersync-cmp-my-plugin'));
  const deployment = find(objects, 'Deployment', 'impersync-renderer');
  await applyRaw(cp.admin, deployment, { dryRun: true, fieldValidation: 'Strict' });
  // As stored after admission: Pod Security (restricted, enforced) let it in, and the ServiceAccount
  // admission plugin added no token to any container.
  const spec = (await dryRunPodOf(cp.admin, deployment, 'impersync-renderer-cmp'))['spec'] as PodSpec;
  assert.deepEqual(spec.containers.map((c) => c.name).sort(), ['my-plugin', 'renderer']);
  assert.deepEqual(
    spec.volumes.filter((v) => (v.projected?.sources ?? []).some((x) => 'serviceAccountToken' in x)),
    [],
  );
  for (const c of [...spec.containers, ...(spec.initContainers ?? [])])
    assert.ok(!c.volumeMounts.some((m) => m.mountPath.startsWith('/var/run/secrets')), `${c.name}: no token mounted`);
});

test('strict RBAC: Applications and their status, AppProjects read-only, argocd-cm, cluster Secrets, Events', async () => {
  await applyRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'guestbook', namespace: 'argocd' },
    spec: {
      project: 'default',
      source: { repoURL: 'https://git.example/guestbook.git', path: '.' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'guestbook' },
    },
  });
  await applyRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name: 'default', namespace: 'argocd' },
    spec: { sourceRepos: ['*'] },
  });
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'unrelated', namespace: 'argocd' },
    data: { a: '1' },
  });
  const apps = '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications';
  const allowed: [string, string, unknown?][] = [
    ['GET', apps],
    ['GET', `${apps}?watch=1&timeoutSeconds=1`],
    ['PATCH', `${apps}/guestbook`, { status: { sync: { status: 'OutOfSync' } } }],
    ['PATCH', `${apps}/guestbook`, { metadata: { finalizers: ['resources-finalizer.argocd.argoproj.io'] } }],
    ['GET', '/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects/default'],
    ['GET', '/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects?watch=1&timeoutSeconds=1'],
    // The renderer's token Secret, which the controller creates when it is missing.
    [
      'POST',
      '/api/v1/namespaces/argocd/secrets',
      { metadata: { name: 'impersync-renderer-token' }, stringData: { token: 'test' } },
    ],
    ['GET', '/api/v1/namespaces/argocd/configmaps/argocd-cm'],
    ['GET', '/api/v1/namespaces/argocd/configmaps?fieldSelector=metadata.name%3Dargocd-cm'],
    ['GET', '/api/v1/namespaces/argocd/secrets?labelSelector=argocd.argoproj.io%2Fsecret-type%3Dcluster'],
    [
      'POST',
      '/api/v1/namespaces/argocd/events',
      {
        metadata: { generateName: 'guestbook.' },
        involvedObject: {
          apiVersion: 'argoproj.io/v1alpha1',
          kind: 'Application',
          name: 'guestbook',
          namespace: 'argocd',
        },
        reason: 'OperationStarted',
        message: 'test',
        type: 'Normal',
      },
    ],
  ];
  for (const [method, path, body] of allowed)
    assert.equal((await statusOf(sa, method, path, body)) < 300, true, `${method} ${path} is allowed`);
  const projects = '/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects';
  const denied: [string, string, unknown?][] = [
    // AppProjects choose the identity: the controller may not change one, nor create or delete one.
    ['PATCH', `${projects}/default`, { spec: { destinationServiceAccounts: [] } }],
    [
      'PUT',
      `${projects}/default`,
      { apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'default' } },
    ],
    ['PATCH', `${projects}/default/status`, { status: {} }],
    ['POST', projects, { apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'mine' } }],
    ['DELETE', `${projects}/default`],
    // Secrets: created, never changed or deleted, and only in argocd.
    ['PATCH', '/api/v1/namespaces/argocd/secrets/impersync-renderer-token', { stringData: { token: 'x' } }],
    ['DELETE', '/api/v1/namespaces/argocd/secrets/impersync-renderer-token'],
    ['POST', '/api/v1/namespaces/guestbook/secrets', { metadata: { name: 's' } }],
    ['GET', '/api/v1/namespaces/argocd/configmaps'],
    ['GET', '/api/v1/namespaces/argocd/configmaps/unrelated'],
    ['GET', '/api/v1/secrets'],
    ['GET', '/apis/argoproj.io/v1alpha1/applications'],
    ['DELETE', `${apps}/guestbook`],
    ['GET', '/api/v1/namespaces/guestbook/configmaps'],
    ['POST', '/api/v1/namespaces/guestbook/configmaps', { metadata: { name: 'as-controller' } }],
    ['POST', '/apis/apps/v1/namespaces/guestbook/deployments', { metadata: { name: 'x' } }],
    ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles'],
  ];
  for (const [method, path, body] of denied)
    assert.equal(await statusOf(sa, method, path, body), 403, `${method} ${path} is forbidden`);
});

/** The API server's answer to `kc` impersonating `user` for a list of configmaps in `namespace`. */
async function impersonating(kc: KubeConfig, user: string, namespace = 'guestbook') {
  const res = await request(kc, { path: `/api/v1/namespaces/${namespace}/configmaps`, asUser: user });
  return { status: res.status, text: res.text };
}
/** The API server's refusal of the impersonation itself (the body is JSON: quotes come escaped). */
const refusedImpersonation = (user: string) => {
  const [, , ns, name] = user.split(':');
  const q = (t: string) => `\\\\"${t}\\\\"`;
  return new RegExp(
    `serviceaccounts ${q(name ?? '')} is forbidden: User ${q(controllerUser)} cannot impersonate resource ${q('serviceaccounts')} in API group ${q('')} in the namespace ${q(ns ?? '')}`,
  );
};

test('strict RBAC as shipped: the controller may impersonate no ServiceAccount', async () => {
  for (const user of [deployer, 'system:serviceaccount:unlisted:deployer', garbageCollector]) {
    const res = await impersonating(sa, user);
    assert.equal(res.status, 403, user);
    assert.match(res.text, refusedImpersonation(user));
  }
});

test('strict RBAC: tenant resources only as the impersonated ServiceAccount of a listed namespace, and the audit log says so', async () => {
  // The admin lists guestbook (deploy/install/tenants/impersonate.yaml).
  await applyAll(cp.admin, [tenantImpersonationBinding('guestbook')]);
  await until('impersonation in guestbook', async () =>
    (await impersonating(sa, deployer)).status === 200 ? true : undefined,
  );
  // The binding's ClusterRole includes get: the existence check before a sync may read it.
  assert.equal(await statusOf(sa, 'GET', '/api/v1/namespaces/guestbook/serviceaccounts/guestbook-deployer'), 200);
  assert.equal(await statusOf(sa, 'GET', '/api/v1/namespaces/unlisted/serviceaccounts/deployer'), 403);
  // Not listed: refused, though the ServiceAccount exists.
  const unlisted = await impersonating(sa, 'system:serviceaccount:unlisted:deployer', 'unlisted');
  assert.equal(unlisted.status, 403);
  assert.match(unlisted.text, refusedImpersonation('system:serviceaccount:unlisted:deployer'));
  const path = '/api/v1/namespaces/guestbook/configmaps';
  assert.equal(await statusOf(sa, 'POST', path, { metadata: { name: 'by-deployer' } }, deployer), 201);
  // The ServiceAccount's own limits hold: it may not touch Secrets, so neither may the controller through it.
  assert.equal(
    await statusOf(sa, 'POST', '/api/v1/namespaces/guestbook/secrets', { metadata: { name: 's' } }, deployer),
    403,
  );
  const mine = (r: { verb: string; resource?: string; namespace?: string; name?: string; code?: number }) =>
    r.verb === 'create' &&
    r.resource === 'configmaps' &&
    r.namespace === 'guestbook' &&
    r.name === 'by-deployer' &&
    r.code === 201;
  const rec = (await cp.waitForAudit(mine)).find(mine);
  assert.equal(rec?.user, controllerUser);
  assert.equal(rec?.impersonatedUser, deployer);
});

test("the installed token cannot impersonate kube-system's controllers; with the cluster-wide opt-in it can, and reads every Secret", async () => {
  // The defence: no grant reaches kube-system. (guestbook is bound by now; that does not help.)
  const refused = await impersonating(sa, garbageCollector, 'kube-system');
  assert.equal(refused.status, 403);
  assert.match(refused.text, refusedImpersonation(garbageCollector));
  assert.equal(await statusOf(sa, 'GET', '/api/v1/secrets', undefined, garbageCollector), 403);
  // What the test guards against: the old default, a cluster-wide binding, is the opt-in component.
  const wide = kustomizeOverlay(['deploy/install'], ['deploy/install/components/impersonate-cluster-wide']);
  const binding = find(wide, 'ClusterRoleBinding', 'impersync-impersonate');
  await applyAll(cp.admin, wide);
  try {
    // The same request now passes impersonation, and the stolen token reads every Secret of the cluster.
    await until('cluster-wide impersonation', async () =>
      (await statusOf(sa, 'GET', '/api/v1/secrets', undefined, garbageCollector)) === 200 ? true : undefined,
    );
    assert.equal((await impersonating(sa, garbageCollector, 'kube-system')).status, 200);
  } finally {
    await request(cp.admin, {
      method: 'DELETE',
      path: `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${binding.metadata.name}`,
    });
  }
  await until('the narrow shape again', async () =>
    (await impersonating(sa, garbageCollector, 'kube-system')).status === 403 ? true : undefined,
  );
});

test('strict RBAC: the ServiceAccount creates and holds its Lease in its own namespace, and may touch none in another', async () => {
  let led = false;
  const election = startLeaderElection({
    kc: sa,
    namespace: 'argocd',
    name: 'impersync-controller',
    identity: 'pod-a',
    // Long enough that a stalled test process or a slow answer does not lose the Lease before the
    // test checks it is held, as a 1.5 s renew deadline could on a loaded machine.
    leaseDurationMs: 10_000,
    renewDeadlineMs: 8000,
    retryPeriodMs: 500,
    onStartedLeading: () => {
      led = true;
    },
  });
  try {
    await until('leadership', async () => (led ? true : undefined), 10_000);
    assert.equal(election.isLeader(), true);
  } finally {
    await election.stop();
  }
  assert.equal(
    await statusOf(sa, 'GET', '/apis/coordination.k8s.io/v1/namespaces/argocd/leases/impersync-controller'),
    200,
  );
  // With shards each replica has a member Lease named after its Pod, not known in advance, so the
  // Leases of the control namespace are the controller's (role.yaml); another namespace's are not.
  assert.equal(await statusOf(sa, 'GET', '/apis/coordination.k8s.io/v1/namespaces/argocd/leases/someone-else'), 404);
  assert.equal(
    await statusOf(sa, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager'),
    403,
  );
  assert.equal(await statusOf(sa, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases'), 403);
});

test('the admission policy of the install rejects a bad AppProject', async () => {
  const bad = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name: 'bad', namespace: 'argocd' },
    spec: { destinationServiceAccounts: [{ server: '*', namespace: 'x', defaultServiceAccount: 'a/b' }] },
  };
  const message = await admissionDenial(cp.admin, bad);
  assert.match(message, /denied request: defaultServiceAccount has an invalid format, 'a\/b'$/);
});

test('fallback RBAC: the controller gets rights of its own on tenant resources', async () => {
  const fallback = kustomizeBuild('deploy/install/fallback');
  await applyAll(
    cp.admin,
    fallback.filter((o: KubeObject) => o.kind !== 'Namespace'),
  );
  assert.equal(
    await statusOf(sa, 'POST', '/api/v1/namespaces/guestbook/configmaps', { metadata: { name: 'as-controller' } }),
    201,
  );
  // Exactly the two extra objects: removing them brings back the strict shape.
  const extra = await readYamlFile(join(repoRoot, 'deploy/install/fallback/clusterrole.yaml'));
  for (const o of extra)
    await request(cp.admin, {
      method: 'DELETE',
      path: `/apis/rbac.authorization.k8s.io/v1/${o.kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings'}/${o.metadata.name}`,
    });
  await until('the strict shape again', async () =>
    (await statusOf(sa, 'GET', '/api/v1/namespaces/guestbook/configmaps')) === 403 ? true : undefined,
  );
});
