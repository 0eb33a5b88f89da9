// Argo CD's cache encoding (src/argocd-cache/encode.ts): key names, Go's JSON byte for byte (checked
// against Go's own encoding/json decoding and re-encoding, as Argo CD's reader and writer do), gzip
// as Go's gzip reader takes it, and the tree's shards.
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { test } from 'node:test';
import {
  CACHE_VERSION,
  appManagedResourcesKey,
  appResourcesTreeKey,
  clusterInfoKey,
  clusterInfoStruct,
  diffStruct,
  goJson,
  marshal,
  redisKey,
  sortManagedResources,
  treeShards,
  treeStruct,
  treeUpdatedChannel,
  unmarshal,
} from '../../src/argocd-cache/encode.ts';
import { managedResources } from '../../src/argocd-cache/tree.ts';
import type { ApplicationTree, ClusterInfo } from '../../src/argocd-cache/types.ts';
import type { ResourceComparison } from '../../src/sync/index.ts';
import { goRoundTrip } from './go-decoder.ts';

test("keys as Argo CD's cache names them: the key, the cache version, the prefix, .gz when compressed", () => {
  assert.equal(CACHE_VERSION, '1.8.3');
  const gz = { prefix: '', compression: 'gzip' as const };
  assert.equal(redisKey(appResourcesTreeKey('guestbook'), gz), 'app|resources-tree|guestbook|1.8.3.gz');
  assert.equal(redisKey(appResourcesTreeKey('guestbook', 2), gz), 'app|resources-tree|guestbook|2|1.8.3.gz');
  assert.equal(redisKey(appManagedResourcesKey('tenant_web'), gz), 'app|managed-resources|tenant_web|1.8.3.gz');
  assert.equal(
    redisKey(clusterInfoKey('https://kubernetes.default.svc'), { prefix: 'x-', compression: 'none' }),
    'x-cluster|info|https://kubernetes.default.svc|1.8.3',
  );
  // NotifyUpdated publishes on the full key, with neither prefix nor .gz.
  assert.equal(treeUpdatedChannel('guestbook'), 'app|managed-resources|guestbook|1.8.3');
});

test("Go's encoding/json: struct order, omitempty, sorted map keys, HTML-safe escapes", () => {
  assert.equal(
    goJson({ b: 1, a: { '10': 'x', '2': 'y' }, c: '<a&b>\u2028' }),
    '{"a":{"10":"x","2":"y"},"b":1,"c":"\\u003ca\\u0026b\\u003e\\u2028"}',
  );
  assert.equal(goJson('\ud800'), '"\\ufffd"');
  assert.equal(
    goJson(
      treeStruct({
        nodes: [{ kind: 'Pod', name: 'p', version: 'v1', group: '', info: [], health: { status: 'Healthy' } }],
      }),
    ),
    '{"nodes":[{"version":"v1","kind":"Pod","name":"p","health":{"status":"Healthy"}}]}',
  );
  const info: ClusterInfo = {
    connectionState: { status: '', message: '', attemptedAt: null },
    cacheInfo: {},
    applicationsCount: 0,
  };
  assert.equal(
    goJson(clusterInfoStruct(info)),
    '{"connectionState":{"status":"","message":"","attemptedAt":null},"cacheInfo":{},"applicationsCount":0}',
  );
});

test('a gzip value is the JSON and a newline, in a stream that names no operating system (as Go writes)', () => {
  const v = marshal(treeStruct({ nodes: [{ kind: 'Pod', name: 'p' }] }), 'gzip');
  assert.deepEqual([...v.subarray(0, 4)], [0x1f, 0x8b, 8, 0]);
  assert.equal(v[9], 255);
  assert.equal(gunzipSync(v).toString(), '{"nodes":[{"kind":"Pod","name":"p"}]}\n');
  assert.equal(marshal(treeStruct({}), 'none').toString(), '{}\n');
  assert.deepEqual(unmarshal(v, 'gzip'), { nodes: [{ kind: 'Pod', name: 'p' }] });
});

test('the tree is sorted by full name and split into shards as GetShards splits it', () => {
  const node = (name: string) => ({ group: 'apps', kind: 'ReplicaSet', namespace: 'ns', name });
  const tree: ApplicationTree = { nodes: ['e', 'a', 'c', 'b', 'd'].map(node) };
  const one = treeShards(tree, 0);
  assert.equal(one.length, 1);
  assert.deepEqual(
    one[0]?.nodes?.map((n) => n.name),
    ['a', 'b', 'c', 'd', 'e'],
  );
  assert.equal(one[0]?.shardsCount, undefined);
  const shards = treeShards(tree, 2);
  assert.deepEqual(
    shards.map((s) => s.nodes?.map((n) => n.name)),
    [['a', 'b'], ['c', 'd'], ['e']],
  );
  assert.deepEqual(
    shards.map((s) => s.shardsCount),
    [3, undefined, undefined],
  );
  assert.deepEqual(treeShards({ nodes: [] }, 2), [{ shardsCount: 0 }]);
});

const deployment = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'web',
    namespace: 'tenant',
    uid: 'u-1',
    resourceVersion: '42',
    labels: { 'app.kubernetes.io/instance': 'web', '1': 'one', '10': 'ten', '2': 'two' },
    annotations: { note: '<b>&amp;</b>', 'deployment.kubernetes.io/revision': '3' },
  },
  spec: { replicas: 1, selector: { matchLabels: { app: 'web' } } },
};

test("byte for byte what Argo CD's controller writes: Go's reader decodes each value and writes it back unchanged", () => {
  const tree: ApplicationTree = {
    nodes: [
      {
        group: 'apps',
        version: 'v1',
        kind: 'Deployment',
        namespace: 'tenant',
        name: 'web',
        uid: 'u-1',
        info: [{ name: 'Revision', value: 'Rev:3' }],
        resourceVersion: '42',
        health: { status: 'Healthy' },
        createdAt: '2026-12-02T01:00:00Z',
      },
      {
        version: 'v1',
        kind: 'Pod',
        namespace: 'tenant',
        name: 'web-1-a',
        uid: 'u-3',
        parentRefs: [
          { group: 'apps', version: 'v1', kind: 'ReplicaSet', namespace: 'tenant', name: 'web-1', uid: 'u-2' },
        ],
        info: [{ name: 'Status Reason', value: 'Running' }, { name: 'Node' }, { name: 'Containers', value: '1/1' }],
        networkingInfo: { labels: { b: '2', a: '1' } },
        images: ['nginx:1.27 <latest>'],
        health: { status: 'Progressing', message: 'waiting & "quoted"' },
      },
      {
        version: 'v1',
        kind: 'Service',
        namespace: 'tenant',
        name: 'web',
        networkingInfo: { targetLabels: { app: 'web' }, ingress: [{ hostname: 'lb.example' }, { ip: '10.0.0.1' }] },
      },
    ],
  };
  for (const compression of ['gzip', 'none'] as const) {
    for (const shard of treeShards(tree, compression === 'gzip' ? 2 : 0)) {
      const ours = marshal(treeStruct(shard), compression);
      const plain = compression === 'gzip' ? gunzipSync(ours).toString() : ours.toString();
      assert.equal(goRoundTrip('tree', compression, ours), plain);
    }
  }
  const comparison: ResourceComparison = {
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    namespace: 'tenant',
    name: 'web',
    status: 'OutOfSync',
    health: { status: 'Healthy' },
    diff: '',
    requiresPruning: false,
    target: { ...deployment, spec: { replicas: 2, selector: { matchLabels: { app: 'web' } } } },
    live: deployment,
    normalizedLive: deployment,
    predictedLive: { ...deployment, spec: { replicas: 2 } },
  };
  const secret: ResourceComparison = {
    group: '',
    version: 'v1',
    kind: 'Secret',
    namespace: 'tenant',
    name: 's',
    status: 'Synced',
    health: null,
    diff: '',
    requiresPruning: false,
    target: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'tenant' }, data: { k: 'c2VjcmV0' } },
    live: null,
  };
  const managed = sortManagedResources(managedResources([comparison, secret]));
  assert.deepEqual(
    managed.map((m) => m.kind),
    ['Secret', 'Deployment'],
  );
  assert.equal(managed[0]?.liveState, 'null');
  assert.ok(!managed[0]?.targetState?.includes('c2VjcmV0'), 'Secret values are masked');
  assert.equal(managed[1]?.modified, true);
  assert.equal(managed[1]?.resourceVersion, '42');
  const value = marshal(managed.map(diffStruct), 'gzip');
  assert.equal(goRoundTrip('managed', 'gzip', value), gunzipSync(value).toString());
  const info: ClusterInfo = {
    connectionState: { status: 'Successful', message: '', attemptedAt: '2026-12-02T01:00:00Z' },
    serverVersion: 'v1.34.3',
    cacheInfo: { apisCount: 57, lastCacheSyncTime: '2026-12-02T01:00:00Z' },
    applicationsCount: 2,
    apiVersions: ['apps/v1', 'apps/v1/Deployment', 'v1', 'v1/Pod'],
  };
  const c = marshal(clusterInfoStruct(info), 'gzip');
  assert.equal(goRoundTrip('cluster', 'gzip', c), gunzipSync(c).toString());
});
