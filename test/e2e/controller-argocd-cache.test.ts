// Argo CD's cache written by the running controller (issue 27) to a real redis-server, on the test
// control plane with a kwok node so that a Deployment's Pods exist: after a sync, Redis holds the
// resource tree argocd-server reads (the Deployment, its ReplicaSet and its Pod, each pointing at
// its owner), the managed resources with their live and target states, and the destination's
// cluster info, with the Redis named by argocd-cmd-params-cm's redis.server. The tree is read as
// the Application's ServiceAccount: one that may not list Pods gets a tree without them, though
// the Pods exist and the controller could list them.
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import { applyRaw, createNamespace, grantRole, request, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { startRedis } from '../support/redis.ts';
import type { TestRedis } from '../support/redis.ts';
import type { ApplicationTree, ClusterInfo, ResourceDiff, ResourceNode } from '../../src/argocd-cache/types.ts';
import {
  IN_CLUSTER,
  application,
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
let redis: TestRedis;

const deployment = (name: string) =>
  [
    'apiVersion: apps/v1',
    'kind: Deployment',
    `metadata: {name: ${name}}`,
    'spec:',
    '  replicas: 1',
    `  selector: {matchLabels: {app: ${name}}}`,
    '  template:',
    `    metadata: {labels: {app: ${name}}}`,
    `    spec: {automountServiceAccountToken: false, containers: [{name: ${name}, image: nginx:1.27}]}`,
  ].join('\n');

const files: Record<string, string> = {
  'web/web.yaml': deployment('web'),
  'narrow/api.yaml': deployment('api'),
};

before(async () => {
  redis = await startRedis();
  cp = await startControlPlane({ nodes: 1 });
  await grantControllerRights(cp);
  await deployer(cp, 'tenant', 'deployer');
  // A ServiceAccount that manages Deployments (and may see their ReplicaSets) but may not list Pods.
  await createNamespace(cp.admin, 'narrow');
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'apps-only', namespace: 'narrow' },
  });
  await grantRole(cp.admin, {
    name: 'apps-only',
    namespace: 'narrow',
    to: { serviceAccount: 'apps-only', namespace: 'narrow' },
    rules: [{ apiGroups: ['apps'], resources: ['*'], verbs: ['*'] }],
  });
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await applyRaw(
    cp.admin,
    project('tenant', {
      destinationServiceAccounts: [
        { server: IN_CLUSTER, namespace: 'tenant', defaultServiceAccount: 'deployer' },
        { server: IN_CLUSTER, namespace: 'narrow', defaultServiceAccount: 'apps-only' },
      ],
    }),
  );
  // Named as Argo CD's installs name it: argocd-cmd-params-cm's redis.server (the flag is the other way).
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-cmd-params-cm', namespace: 'argocd' },
    data: { 'redis.server': redis.address },
  });
  fx = await startFixture(cp, files, { waitTimeoutMs: 60_000 });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
  await redis?.stop();
});

async function read<T>(key: string): Promise<T | undefined> {
  const raw = await redis.client().getBuffer(`${key}|1.8.3.gz`);
  return raw ? (JSON.parse(gunzipSync(raw).toString()) as T) : undefined;
}

async function treeWith(app: string, what: string, pred: (nodes: ResourceNode[]) => boolean): Promise<ResourceNode[]> {
  const end = Date.now() + 60_000;
  let last: ResourceNode[] = [];
  while (Date.now() < end) {
    last = (await read<ApplicationTree>(`app|resources-tree|${app}`))?.nodes ?? [];
    if (pred(last)) return last;
    // A refresh writes the tree: ask for one, as argocd-server's refresh does.
    await request(cp.admin, {
      method: 'PATCH',
      path: `/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/${app}`,
      body: { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'normal' } } },
      contentType: 'application/merge-patch+json',
    });
    await new Promise((r) => setTimeout(r, 1000));
  }
  assert.fail(`the tree of ${app} never had ${what}: ${JSON.stringify(last.map((n) => `${n.kind}/${n.name}`))}`);
}

test("the tree holds the Deployment, its ReplicaSet and its Pod, each pointing at its owner, with the managed resources and the cluster's info", async () => {
  await applyRaw(
    cp.admin,
    application('web', fx.repo.url, {
      project: 'tenant',
      path: 'web',
      destination: { server: IN_CLUSTER, namespace: 'tenant' },
    }),
  );
  await waitForApp(
    cp,
    'web',
    'synced and healthy',
    (a) =>
      operationPhase(a) === 'Succeeded' &&
      (a.status?.['health'] as { status?: string } | undefined)?.status === 'Healthy',
    90_000,
  );
  // The tree is written after the refresh that found the Application Healthy, not with it: wait for it.
  const nodes = await treeWith(
    'web',
    'a Pod and a Healthy Deployment',
    (n) => n.some((x) => x.kind === 'Pod') && n.some((x) => x.kind === 'Deployment' && x.health?.status === 'Healthy'),
  );
  const dep = nodes.find((n) => n.kind === 'Deployment');
  const rs = nodes.find((n) => n.kind === 'ReplicaSet');
  const pod = nodes.find((n) => n.kind === 'Pod');
  assert.ok(dep && rs && pod, JSON.stringify(nodes));
  assert.deepEqual([dep.group, dep.version, dep.namespace, dep.name], ['apps', 'v1', 'tenant', 'web']);
  assert.equal(dep.health?.status, 'Healthy');
  assert.ok(dep.uid && dep.resourceVersion && dep.createdAt);
  assert.deepEqual(
    rs.parentRefs?.map((p) => [p.kind, p.name, p.uid, p.namespace]),
    [['Deployment', 'web', dep.uid, 'tenant']],
  );
  assert.deepEqual(
    pod.parentRefs?.map((p) => [p.kind, p.uid]),
    [['ReplicaSet', rs.uid]],
  );
  assert.deepEqual(pod.images, ['nginx:1.27']);
  assert.ok(
    pod.info?.some((i) => i.name === 'Containers'),
    JSON.stringify(pod.info),
  );
  assert.ok(pod.health?.status, 'the Pod has its health');
  assert.ok(
    rs.info?.some((i) => i.name === 'Revision' && i.value === 'Rev:1'),
    JSON.stringify(rs.info),
  );

  const managed = await read<ResourceDiff[]>('app|managed-resources|web');
  assert.equal(managed?.length, 1);
  const m = managed?.[0] as ResourceDiff;
  assert.deepEqual([m.group, m.kind, m.namespace, m.name], ['apps', 'Deployment', 'tenant', 'web']);
  assert.equal(JSON.parse(m.liveState ?? '').metadata.uid, dep.uid);
  assert.equal(JSON.parse(m.targetState ?? '').spec.replicas, 1);
  assert.ok(m.normalizedLiveState && m.predictedLiveState);
  assert.equal(m.modified, undefined, 'in sync: not modified');

  const info = await read<ClusterInfo>(`cluster|info|${IN_CLUSTER}`);
  assert.equal(info?.connectionState.status, 'Successful');
  assert.match(info?.serverVersion ?? '', /^v1\.\d+/);
  assert.ok((info?.apiVersions ?? []).includes('apps/v1/Deployment'));
});

test('a ServiceAccount that may not list Pods gets a tree without them: the tree is what the tenant may see', async () => {
  await applyRaw(
    cp.admin,
    application('narrow', fx.repo.url, {
      project: 'tenant',
      path: 'narrow',
      destination: { server: IN_CLUSTER, namespace: 'narrow' },
    }),
  );
  await waitForApp(cp, 'narrow', 'synced', (a) => operationPhase(a) === 'Succeeded', 90_000);
  // The Pod exists (the controller's admin view says so)...
  const end = Date.now() + 60_000;
  let pods: unknown[] = [];
  while (pods.length === 0 && Date.now() < end) {
    const res = await request(cp.admin, { method: 'GET', path: '/api/v1/namespaces/narrow/pods' });
    pods = (JSON.parse(res.text) as { items?: unknown[] }).items ?? [];
    if (pods.length === 0) await new Promise((r) => setTimeout(r, 500));
  }
  assert.ok(pods.length > 0, 'the Deployment has a Pod');
  // ...but the tree, read as apps-only, stops at the ReplicaSet.
  const nodes = await treeWith('narrow', 'the ReplicaSet', (n) => n.some((x) => x.kind === 'ReplicaSet'));
  assert.deepEqual(nodes.map((n) => n.kind).sort(), ['Deployment', 'ReplicaSet']);
});

test("an Application refused is an empty tree without managed resources; a deleted one leaves Argo CD's cache", async () => {
  // A project that does not exist: the Application is refused before anything is compared.
  await applyRaw(
    cp.admin,
    application('refused', fx.repo.url, {
      project: 'no-such-project',
      path: 'web',
      destination: { server: IN_CLUSTER, namespace: 'tenant' },
    }),
  );
  const end = Date.now() + 30_000;
  while (!(await redis.client().exists('app|resources-tree|refused|1.8.3.gz')) && Date.now() < end)
    await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(await read<ApplicationTree>('app|resources-tree|refused'), {});
  assert.equal(await read('app|managed-resources|refused'), undefined);

  await request(cp.admin, {
    method: 'DELETE',
    path: '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/narrow',
  });
  const until = Date.now() + 30_000;
  while ((await redis.client().exists('app|resources-tree|narrow|1.8.3.gz')) && Date.now() < until)
    await new Promise((r) => setTimeout(r, 200));
  assert.equal(
    await redis.client().exists('app|resources-tree|narrow|1.8.3.gz', 'app|managed-resources|narrow|1.8.3.gz'),
    0,
  );
});
