// The sync engine against a real kube-apiserver, every request as a ServiceAccount through one
// impersonating client: diff, apply, drift, prune, a forbidden kind, waves and hooks, sync options,
// CRDs with their custom resources, field validation, and the audit log's proof that every write
// to a tenant resource was made as that ServiceAccount. Pods run on a kwok node: hook Pods
// complete or fail as their command says; only the LoadBalancer address is written by the test,
// since nothing in the control plane assigns one.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { IN_CLUSTER } from '../../src/api/index.ts';
import { DestinationClientFactory } from '../../src/kube/factory.ts';
import type { DestinationClient } from '../../src/kube/types.ts';
import type { ComparisonResult, InventoryEntry } from '../../src/sync/index.ts';
import { compare } from '../../src/sync/index.ts';
import { sync, type SyncOptions } from './sync-driver.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  applyRaw,
  createNamespace,
  createServiceAccount,
  getRaw,
  grantImpersonation,
  grantRole,
  labelNode,
  request,
  startControlPlane,
  userNameOf,
  madeForTest,
} from '../support/index.ts';

const ns = 'shop';
const created = 'shop-created';
const saUser = userNameOf({ serviceAccount: 'deployer', namespace: ns });
const all = ['get', 'list', 'create', 'patch', 'update', 'delete'];

let cp: TestControlPlane;
let factory: DestinationClientFactory;
let client: DestinationClient;

const opts = (extra: Partial<SyncOptions> = {}): SyncOptions => ({
  appName: 'shop-app',
  namespace: ns,
  pollIntervalMs: 100,
  waitTimeoutMs: 60_000,
  ...extra,
});
const cm = (
  name: string,
  data: Record<string, string>,
  annotations?: Record<string, string>,
  namespace?: string,
): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, ...(namespace ? { namespace } : {}), ...(annotations ? { annotations } : {}) },
  data,
});
const inventoryOf = (c: ComparisonResult): InventoryEntry[] =>
  c.resources.map((r) => ({ group: r.group, version: r.version, kind: r.kind, namespace: r.namespace, name: r.name }));
const live = (kind: string, name: string, namespace = ns, apiVersion = 'v1') =>
  getRaw(cp.admin, { apiVersion, kind, name, namespace });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | null>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await fn();
    if (v !== undefined && v !== null) return v;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function patchStatus(kind: 'services', name: string, status: unknown): Promise<void> {
  const res = await request(cp.admin, {
    method: 'PATCH',
    path: `/api/v1/namespaces/${ns}/${kind}/${name}/status`,
    body: { status },
    contentType: 'application/merge-patch+json',
  });
  assert.equal(res.status, 200, res.text);
}

/** Non-dry-run writes, in the order the server received them. */
async function writes(): Promise<
  Array<{
    verb: string;
    resource: string;
    name: string;
    namespace: string;
    user: string;
    impersonatedUser: string | undefined;
  }>
> {
  return (await cp.readAudit())
    .filter(
      (r) =>
        ['create', 'patch', 'update', 'delete'].includes(r.verb) &&
        !r.dryRun &&
        (r.code ?? 0) < 300 &&
        r.user === cp.controllerUserName,
    )
    .map((r) => ({
      verb: r.verb,
      resource: r.resource ?? '',
      name: r.name ?? '',
      namespace: r.namespace ?? '',
      user: r.user,
      impersonatedUser: r.impersonatedUser,
    }));
}

before(async () => {
  cp = await startControlPlane({ nodes: 1 });
  await createNamespace(cp.admin, ns);
  await createServiceAccount(cp.admin, ns, 'deployer');
  const to = { serviceAccount: 'deployer', namespace: ns };
  // The tenant may manage configuration, services and pods in its namespace, not Deployments.
  await grantRole(cp.admin, {
    name: 'deployer',
    namespace: ns,
    to,
    rules: [{ apiGroups: [''], resources: ['secrets', 'services', 'pods'], verbs: all }],
  });
  // And, cluster-wide: namespaces (CreateNamespace), ConfigMaps, one CRD and its kind.
  await grantRole(cp.admin, {
    name: 'deployer-cluster',
    to,
    rules: [
      { apiGroups: [''], resources: ['namespaces', 'configmaps'], verbs: all },
      { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: all },
      { apiGroups: ['example.com'], resources: ['widgets'], verbs: all },
    ],
  });
  await grantImpersonation(cp.admin, {
    name: 'impersync-impersonate',
    serviceAccounts: [{ namespace: ns, name: 'deployer' }],
  });
  // Pods need the namespace's default ServiceAccount, which kube-controller-manager creates.
  await waitFor('the default ServiceAccount', () => live('ServiceAccount', 'default'));
  factory = await DestinationClientFactory.fromKubeConfig({ kubeconfig: cp.controllerKubeconfigPath });
  client = factory.forIdentity(IN_CLUSTER, { impersonate: saUser }, madeForTest('sync-engine'));
});

after(async () => {
  await factory?.close();
  await cp?.stop();
});

const webDesired = (): KubeObject[] => [
  cm('web-config', { color: 'blue' }),
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web' },
    spec: { ports: [{ port: 80 }], selector: { app: 'web' } },
  },
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'web-secret' }, stringData: { password: 'hunter2' } },
];

test('compare shows what a sync would create; sync applies it as the ServiceAccount in kind order; then all is Synced', async () => {
  const initial = await compare(client, webDesired(), [], { ...opts(), diffs: true });
  assert.equal(initial.identity, saUser);
  assert.equal(initial.syncStatus, 'OutOfSync');
  assert.deepEqual(
    initial.resources.map((r) => [r.kind, r.status, r.health?.status]),
    [
      ['ConfigMap', 'OutOfSync', 'Missing'],
      ['Service', 'OutOfSync', 'Missing'],
      ['Secret', 'OutOfSync', 'Missing'],
    ],
  );
  const cmDiff = initial.resources[0]?.diff ?? '';
  assert.match(cmDiff, /^\+ {2}color: blue$/m);
  assert.match(cmDiff, /^\+ {4}argocd\.argoproj\.io\/tracking-id: shop-app:\/ConfigMap:shop\/web-config$/m);
  const secretDiff = initial.resources[2]?.diff ?? '';
  assert.doesNotMatch(secretDiff, /hunter2|aHVudGVyMg/);
  assert.match(secretDiff, /password: \+{8,}/);

  const result = await sync(client, webDesired(), [], opts());
  assert.equal(result.phase, 'Succeeded', result.message);
  assert.equal(result.message, 'successfully synced (all tasks run)');
  assert.equal(result.identity, saUser);
  // gitops-engine's kind order: Secret, ConfigMap, Service.
  assert.deepEqual(
    result.resources.map((r) => [r.kind, r.name, r.status, r.syncPhase]),
    [
      ['Secret', 'web-secret', 'Synced', 'Sync'],
      ['ConfigMap', 'web-config', 'Synced', 'Sync'],
      ['Service', 'web', 'Synced', 'Sync'],
    ],
  );
  assert.equal(result.resources[1]?.message, 'configmap/web-config serverside-applied');
  const liveCm = await live('ConfigMap', 'web-config');
  assert.equal(
    (liveCm?.metadata['annotations'] as Record<string, string>)['argocd.argoproj.io/tracking-id'],
    'shop-app:/ConfigMap:shop/web-config',
  );

  const afterSync = await compare(client, webDesired(), inventoryOf(initial), opts());
  assert.equal(afterSync.syncStatus, 'Synced', JSON.stringify(afterSync.resources.map((r) => [r.name, r.diff])));
  assert.deepEqual(
    afterSync.resources.map((r) => [r.kind, r.status, r.health?.status ?? null, r.diff]),
    [
      ['ConfigMap', 'Synced', null, ''],
      ['Service', 'Synced', 'Healthy', ''],
      ['Secret', 'Synced', null, ''],
    ],
  );
  assert.equal(afterSync.health.status, 'Healthy');
});

test('a live edit is drift: OutOfSync with the changed line; a field someone else added is not; a sync puts it back', async () => {
  await applyRaw(
    cp.admin,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-config', namespace: ns }, data: { color: 'red' } },
    { fieldManager: 'kubectl-edit', force: true },
  );
  await applyRaw(
    cp.admin,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-config', namespace: ns, labels: { team: 'shop' } } },
    { fieldManager: 'labeller' },
  );
  // No text diff unless asked: the controller's comparisons never read one.
  assert.deepEqual(
    (await compare(client, webDesired(), [], opts())).resources.map((r) => r.diff),
    ['', '', ''],
  );
  const drift = await compare(client, webDesired(), [], { ...opts(), diffs: true });
  assert.equal(drift.syncStatus, 'OutOfSync');
  const r = drift.resources.find((x) => x.name === 'web-config');
  assert.equal(r?.status, 'OutOfSync');
  assert.match(r?.diff ?? '', /^- {2}color: red$/m);
  assert.match(r?.diff ?? '', /^\+ {2}color: blue$/m);
  assert.doesNotMatch(r?.diff ?? '', /team: shop/);
  assert.deepEqual(
    drift.resources.filter((x) => x.status !== 'Synced').map((x) => x.name),
    ['web-config'],
  );

  const result = await sync(client, webDesired(), [], opts());
  assert.equal(result.phase, 'Succeeded');
  assert.deepEqual((await live('ConfigMap', 'web-config'))?.['data'], { color: 'blue' });
  assert.equal((await compare(client, webDesired(), [], opts())).syncStatus, 'Synced');
});

test('prune deletes only when asked, only what the inventory holds and Git dropped and the app still tracks, honouring Prune=false', async () => {
  const first = [
    cm('keep', { a: '1' }),
    cm('drop', { a: '1' }),
    cm('protected', { a: '1' }, { 'argocd.argoproj.io/sync-options': 'Prune=false' }),
  ];
  const synced = await sync(client, first, [], opts({ appName: 'prune-app' }));
  assert.equal(synced.phase, 'Succeeded', synced.message);
  await applyRaw(cp.admin, cm('foreign', { a: '1' }, undefined, ns), { fieldManager: 'someone-else' });
  const inventory = [
    ...inventoryOf(synced.comparison as ComparisonResult),
    { group: '', version: 'v1', kind: 'ConfigMap', namespace: ns, name: 'foreign' },
  ];

  const second = [cm('keep', { a: '1' })];
  const diff = await compare(client, second, inventory, { ...opts({ appName: 'prune-app' }), diffs: true });
  assert.deepEqual(
    diff.resources.map((r) => [r.name, r.status, r.requiresPruning]),
    [
      ['keep', 'Synced', false],
      ['drop', 'OutOfSync', true],
      ['protected', 'OutOfSync', true],
    ],
  );
  assert.match(diff.resources[1]?.diff ?? '', /^- {2}a: "1"$/m);

  const notAsked = await sync(client, second, inventory, opts({ appName: 'prune-app' }));
  assert.equal(notAsked.phase, 'Succeeded');
  assert.deepEqual(
    notAsked.resources.filter((r) => r.status !== 'Synced').map((r) => [r.name, r.status, r.message]),
    [
      ['drop', 'PruneSkipped', 'ignored (requires pruning)'],
      ['protected', 'PruneSkipped', 'ignored (requires pruning)'],
    ],
  );
  assert.ok(await live('ConfigMap', 'drop'));

  const asked = await sync(client, second, inventory, opts({ appName: 'prune-app', prune: true }));
  assert.equal(asked.phase, 'Succeeded', asked.message);
  assert.deepEqual(
    asked.resources.filter((r) => r.status !== 'Synced').map((r) => [r.name, r.status, r.message]),
    [
      ['drop', 'Pruned', 'pruned'],
      ['protected', 'PruneSkipped', 'ignored (no prune)'],
    ],
  );
  await waitFor('drop to be gone', async () => ((await live('ConfigMap', 'drop')) ? undefined : true));
  assert.ok(await live('ConfigMap', 'protected'));
  assert.ok(
    await live('ConfigMap', 'foreign'),
    'an object the app does not track is not pruned, whatever the inventory says',
  );
  const deletes = (await writes()).filter((w) => w.verb === 'delete' && w.name === 'drop');
  assert.deepEqual(
    deletes.map((d) => d.impersonatedUser),
    [saUser],
  );
});

test("a forbidden kind fails with the API server's message naming the ServiceAccount; the rest of the result is intact", async () => {
  const desired: KubeObject[] = [
    cm('beside-forbidden', { a: '1' }),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } },
      },
    },
  ];
  const diff = await compare(client, desired, [], opts());
  assert.equal(diff.syncStatus, 'Unknown');
  const dep = diff.resources.find((r) => r.kind === 'Deployment');
  assert.equal(dep?.status, 'Unknown');
  assert.match(dep?.message ?? '', /User "system:serviceaccount:shop:deployer" cannot get resource "deployments"/);
  assert.equal(diff.resources.find((r) => r.kind === 'ConfigMap')?.status, 'OutOfSync');

  const result = await sync(client, desired, [], opts());
  assert.equal(result.phase, 'Failed');
  const forbidden = result.resources.find((r) => r.kind === 'Deployment');
  assert.equal(forbidden?.status, 'SyncFailed');
  assert.match(
    forbidden?.message ?? '',
    /deployments.apps "web" is forbidden: User "system:serviceaccount:shop:deployer" cannot patch resource "deployments"/,
  );
  assert.equal(result.message, `one or more objects failed to apply, reason: ${forbidden?.message}`);
  assert.deepEqual(result.resources.find((r) => r.kind === 'ConfigMap')?.status, 'Synced');
  assert.ok(await live('ConfigMap', 'beside-forbidden'));
});

test('waves and hooks run in order, each wave healthy before the next, hooks deleted when they succeed', async () => {
  const hook = (phase: string, policy = 'HookSucceeded') => ({
    'argocd.argoproj.io/hook': phase,
    'argocd.argoproj.io/hook-delete-policy': policy,
  });
  const desired: KubeObject[] = [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'post', annotations: hook('PostSync') },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        // Placed only once the test labels the node, when the sync says it waits for the hook.
        nodeSelector: { post: 'ready' },
        containers: [{ name: 'c', image: 'busybox' }],
      },
    },
    cm('wave-plus', { w: '1' }, { 'argocd.argoproj.io/sync-wave': '1' }),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'lb' },
      spec: { type: 'LoadBalancer', ports: [{ port: 80 }] },
    },
    cm('wave-minus', { w: '-1' }, { 'argocd.argoproj.io/sync-wave': '-1' }),
    cm('pre', { hook: 'yes' }, hook('PreSync')),
  ];
  const progress: string[] = [];
  let labelled: Promise<void> | undefined;
  const running = sync(
    client,
    desired,
    [],
    opts({
      appName: 'waves-app',
      revision: 'abcdef1234',
      onProgress: (m) => {
        progress.push(m);
        if (m === 'waiting for completion of hook /Pod/post') labelled ??= labelNode(cp.admin, 0, { post: 'ready' });
      },
    }),
  );

  // Wave 0 holds a LoadBalancer Service: Progressing until it has an address, so wave 1 waits.
  await waitFor('the Service', () => live('Service', 'lb'));
  await sleep(500);
  assert.equal(await live('ConfigMap', 'wave-plus'), undefined, 'wave 1 waits for wave 0 to be healthy');
  const health = await compare(
    client,
    desired.filter((o) => o.kind === 'Service'),
    [],
    opts({ appName: 'waves-app' }),
  );
  assert.equal(health.resources[0]?.health?.status, 'Progressing');
  await patchStatus('services', 'lb', { loadBalancer: { ingress: [{ ip: '192.0.2.10', ipMode: 'VIP' }] } });

  // The PostSync hook runs once everything is applied and healthy; it succeeds when its Pod does,
  // which runs on the kwok node and exits 0.
  const result = await running;
  await labelled;
  assert.equal(result.phase, 'Succeeded', result.message);
  assert.equal(result.message, 'successfully synced (all tasks run)');
  assert.deepEqual(
    result.resources.map((r) => [r.syncPhase, r.kind, r.name, r.hookType ?? '', r.hookPhase]),
    [
      ['PreSync', 'ConfigMap', 'pre', 'PreSync', 'Succeeded'],
      ['Sync', 'ConfigMap', 'wave-minus', '', 'Succeeded'],
      ['Sync', 'Service', 'lb', '', 'Succeeded'],
      ['Sync', 'ConfigMap', 'wave-plus', '', 'Succeeded'],
      ['PostSync', 'Pod', 'post', 'PostSync', 'Succeeded'],
    ],
  );
  assert.ok(
    progress.some((m) => m === 'waiting for healthy state of /Service/lb'),
    JSON.stringify(progress),
  );
  assert.ok(
    progress.some((m) => m === 'waiting for completion of hook /Pod/post'),
    JSON.stringify(progress),
  );
  const order = (await writes())
    .filter((w) => w.verb === 'patch' && ['pre', 'wave-minus', 'lb', 'wave-plus', 'post'].includes(w.name))
    .map((w) => w.name);
  // A hook's second patch takes Argo CD's hook finalizer off once it has completed.
  assert.deepEqual(order, ['pre', 'pre', 'wave-minus', 'lb', 'wave-plus', 'post', 'post']);
  // HookSucceeded: both hooks are gone.
  await waitFor('hooks deleted', async () =>
    (await live('ConfigMap', 'pre')) || (await live('Pod', 'post')) ? undefined : true,
  );
});

test('a failing hook fails the sync, stops later waves, runs the SyncFail hook and deletes itself (HookFailed)', async () => {
  const desired: KubeObject[] = [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'migrate',
        annotations: { 'argocd.argoproj.io/hook': 'PreSync', 'argocd.argoproj.io/hook-delete-policy': 'HookFailed' },
      },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', 'exit 1'] }],
      },
    },
    cm('never-applied', { a: '1' }),
    cm('on-fail', { a: '1' }, { 'argocd.argoproj.io/hook': 'SyncFail' }),
  ];
  // The hook Pod runs on the kwok node and exits 1.
  const result = await sync(client, desired, [], opts({ appName: 'fail-app' }));
  assert.equal(result.phase, 'Failed');
  assert.equal(result.message, 'one or more synchronization tasks completed unsuccessfully');
  assert.deepEqual(
    result.resources.map((r) => [r.name, r.hookType ?? '', r.hookPhase, r.message]),
    [
      ['migrate', 'PreSync', 'Failed', 'container "c" failed with exit code 1'],
      ['on-fail', 'SyncFail', 'Succeeded', 'on-fail created'],
    ],
  );
  assert.equal(await live('ConfigMap', 'never-applied'), undefined);
  assert.ok(await live('ConfigMap', 'on-fail'));
  await waitFor('the failed hook deleted', async () => ((await live('Pod', 'migrate')) ? undefined : true));
});

test('CreateNamespace=true creates the namespace as the ServiceAccount; a CRD and its custom resource go in one sync; unknown fields reach the server', async () => {
  const desired: KubeObject[] = [
    {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'w1' },
      spec: { size: 3, anythingGoes: { nested: true } },
    },
    cm('in-new-namespace', { a: '1' }),
    {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
              },
            },
          },
        ],
      },
    },
  ];
  const result = await sync(
    client,
    desired,
    [],
    opts({ appName: 'crd-app', namespace: created, syncOptions: ['CreateNamespace=true'] }),
  );
  assert.equal(result.phase, 'Succeeded', result.message);
  assert.deepEqual(
    result.resources.map((r) => [r.syncPhase, r.kind, r.namespace, r.name, r.status]),
    [
      ['PreSync', 'Namespace', '', created, 'Synced'],
      ['Sync', 'ConfigMap', created, 'in-new-namespace', 'Synced'],
      ['Sync', 'CustomResourceDefinition', '', 'widgets.example.com', 'Synced'],
      ['Sync', 'Widget', created, 'w1', 'Synced'],
    ],
  );
  const widget = await live('Widget', 'w1', created, 'example.com/v1');
  assert.deepEqual(widget?.['spec'], { size: 3, anythingGoes: { nested: true } });
  const nsWrites = (await writes()).filter((w) => w.resource === 'namespaces' && w.name === created);
  assert.ok(nsWrites.length >= 1);
  assert.ok(nsWrites.every((w) => w.impersonatedUser === saUser));
  const again = await compare(client, desired, [], opts({ appName: 'crd-app', namespace: created }));
  assert.equal(again.syncStatus, 'Synced', JSON.stringify(again.resources.map((r) => [r.name, r.message, r.diff])));
  const crd = again.resources.find((r) => r.kind === 'CustomResourceDefinition');
  assert.equal(crd?.health?.status, 'Healthy');
});

test('unknown fields reach the server and fail that object with its message; Strict and Validate=false go to the server as asked', async () => {
  const desired = [{ ...cm('strict', { a: '1' }), bogusField: 'x' }];
  const diff = await compare(client, desired, [], opts({ appName: 'strict-app' }));
  assert.equal(diff.resources[0]?.status, 'OutOfSync');
  assert.match(diff.resources[0]?.message ?? '', /\.bogusField: field not declared in schema/);
  const refused = await sync(client, desired, [], opts({ appName: 'strict-app' }));
  assert.equal(refused.phase, 'Failed');
  assert.match(
    refused.message,
    /^one or more objects failed to apply, reason: .*\.bogusField: field not declared in schema/,
  );
  assert.equal(await live('ConfigMap', 'strict'), undefined);

  const clean = [cm('strict', { a: '1' })];
  assert.equal(
    (await sync(client, clean, [], opts({ appName: 'strict-app', fieldValidation: 'Strict' }))).phase,
    'Succeeded',
  );
  assert.equal(
    (
      await sync(
        client,
        [cm('lenient', { a: '1' })],
        [],
        opts({ appName: 'strict-app', fieldValidation: 'Strict', syncOptions: ['Validate=false'] }),
      )
    ).phase,
    'Succeeded',
  );
  const patches = (await cp.readAudit()).filter(
    (r) => r.verb === 'patch' && !r.dryRun && (r.name === 'strict' || r.name === 'lenient') && r.code === 201,
  );
  assert.deepEqual(
    patches.map((r) => [r.name, new URL(r.requestURI, 'https://x').searchParams.get('fieldValidation')]),
    [
      ['strict', 'Strict'],
      ['lenient', 'Ignore'],
    ],
  );
});

test('ApplyOutOfSyncOnly=true applies only what differs; a dry-run sync writes nothing', async () => {
  const desired = [cm('oos-1', { a: '1' }), cm('oos-2', { a: '2' })];
  assert.equal((await sync(client, desired, [], opts({ appName: 'oos-app' }))).phase, 'Succeeded');
  await applyRaw(cp.admin, cm('oos-2', { a: 'changed' }, undefined, ns), { fieldManager: 'kubectl-edit', force: true });
  const result = await sync(
    client,
    desired,
    [],
    opts({ appName: 'oos-app', syncOptions: ['ApplyOutOfSyncOnly=true'] }),
  );
  assert.equal(result.phase, 'Succeeded');
  assert.deepEqual(
    result.resources.map((r) => r.name),
    ['oos-2'],
  );

  const dry = await sync(client, [cm('dry-only', { a: '1' })], [], opts({ appName: 'oos-app', dryRun: true }));
  assert.equal(dry.phase, 'Succeeded');
  assert.equal(dry.resources[0]?.message, 'configmap/dry-only serverside-applied (server dry run)');
  assert.equal(await live('ConfigMap', 'dry-only'), undefined);
});

test('bad input (an unknown kind, an object without a name) fails the sync before any write, naming the object', async () => {
  const desired: KubeObject[] = [
    cm('valid-but-blocked', { a: '1' }),
    { apiVersion: 'nothing.example.com/v1', kind: 'Gizmo', metadata: { name: 'g' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: '' }, data: {} },
  ];
  const diff = await compare(client, desired, [], opts({ appName: 'bad-app' }));
  assert.equal(diff.syncStatus, 'Unknown');
  assert.match(diff.errors.join('\n'), /Gizmo g: no matches for kind "Gizmo" in version "nothing.example.com\/v1"/);
  const result = await sync(client, desired, [], opts({ appName: 'bad-app' }));
  assert.equal(result.phase, 'Failed');
  assert.equal(
    result.message,
    'one or more synchronization tasks are not valid: no matches for kind "Gizmo" in version "nothing.example.com/v1"; v1, Kind=ConfigMap: metadata.name is required',
  );
  assert.deepEqual(
    result.resources.map((r) => [r.kind, r.status]),
    [
      ['Gizmo', 'SyncFailed'],
      ['ConfigMap', 'SyncFailed'],
    ],
  );
  assert.equal(await live('ConfigMap', 'valid-but-blocked'), undefined);
});

test('a named hook is deleted before it is created again (BeforeHookCreation, the default policy)', async () => {
  const desired = [cm('seed', { a: '1' }, { 'argocd.argoproj.io/hook': 'PreSync' }), cm('seeded', { a: '1' })];
  assert.equal((await sync(client, desired, [], opts({ appName: 'bhc-app' }))).phase, 'Succeeded');
  const firstUid = (await live('ConfigMap', 'seed'))?.metadata['uid'];
  assert.ok(firstUid, 'the hook stays: it has no HookSucceeded policy');
  assert.equal((await sync(client, desired, [], opts({ appName: 'bhc-app' }))).phase, 'Succeeded');
  const secondUid = (await live('ConfigMap', 'seed'))?.metadata['uid'];
  assert.ok(secondUid && secondUid !== firstUid, 'a new object, not the old one patched');
  const seq = (await writes()).filter((w) => w.name === 'seed').map((w) => w.verb);
  // Each run: applied with the hook finalizer, then a patch that takes it off once completed.
  assert.deepEqual(seq, ['patch', 'patch', 'delete', 'patch', 'patch']);
});

test('prunes run first in their wave, or after the last wave with PruneLast=true', async () => {
  const wave1 = { 'argocd.argoproj.io/sync-wave': '1' };
  const seed = await sync(
    client,
    [cm('pl-a', { a: '1' }), cm('pl-b', { a: '1' }, wave1), cm('pl-old', { a: '1' }), cm('pl-old2', { a: '1' })],
    [],
    opts({ appName: 'pl-app' }),
  );
  assert.equal(seed.phase, 'Succeeded');
  const inventory = inventoryOf(seed.comparison as ComparisonResult);
  const desired = [cm('pl-a', { a: '2' }), cm('pl-b', { a: '2' }, wave1)];
  const order = async (name: string[]) =>
    (await writes())
      .filter((w) => name.includes(w.name) && (w.verb === 'delete' || w.verb === 'patch'))
      .map((w) => `${w.verb} ${w.name}`);

  const plain = await sync(
    client,
    [...desired, cm('pl-old2', { a: '1' })],
    inventory,
    opts({ appName: 'pl-app', prune: true }),
  );
  assert.equal(plain.phase, 'Succeeded', plain.message);
  assert.deepEqual((await order(['pl-a', 'pl-b', 'pl-old'])).slice(-3), ['delete pl-old', 'patch pl-a', 'patch pl-b']);

  const last = await sync(
    client,
    desired,
    inventoryOf(plain.comparison as ComparisonResult),
    opts({ appName: 'pl-app', prune: true, syncOptions: ['PruneLast=true'] }),
  );
  assert.equal(last.phase, 'Succeeded', last.message);
  assert.deepEqual(
    last.resources.map((r) => `${r.status} ${r.name}`),
    ['Synced pl-a', 'Synced pl-b', 'Pruned pl-old2'],
  );
  assert.deepEqual((await order(['pl-a', 'pl-b', 'pl-old2'])).slice(-3), [
    'patch pl-a',
    'patch pl-b',
    'delete pl-old2',
  ]);
});

test('the audit log: every write the controller made was made as the ServiceAccount, dry-runs included', async () => {
  const records = (await cp.readAudit()).filter(
    (r) => r.user === cp.controllerUserName && ['create', 'patch', 'update', 'delete'].includes(r.verb),
  );
  assert.ok(records.length > 40, `expected many writes, saw ${records.length}`);
  const notAsSA = records.filter((r) => r.impersonatedUser !== saUser);
  assert.deepEqual(
    notAsSA.map(
      (r) => `${r.verb} ${r.resource}/${r.namespace ?? ''}/${r.name ?? ''} as ${r.impersonatedUser ?? '(itself)'}`,
    ),
    [],
  );
  const reads = (await cp.readAudit()).filter(
    (r) => r.user === cp.controllerUserName && ['get', 'list'].includes(r.verb) && r.resource !== undefined,
  );
  assert.ok(reads.length > 0);
  assert.deepEqual(
    reads.filter((r) => r.impersonatedUser !== saUser).map((r) => r.requestURI),
    [],
    'live reads for the diff were made as the ServiceAccount too',
  );
});
