// The one home of the translations between status.resources and what compare(), sync() and
// deletion read (src/sync/inventory.ts), and of the scope lookup the project limits need
// (src/sync/scopes.ts), through a fake client that answers discovery only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/api/index.ts';
import { readStatus } from '../../src/api/index.ts';
import type { DestinationClient, KubeResult, ResourceInfo } from '../../src/kube/types.ts';
import {
  deletionInventoryOf,
  inventoryOf,
  resourceScopes,
  resourceStatusOf,
  trackingTarget,
} from '../../src/sync/index.ts';
import type { ResourceComparison } from '../../src/sync/index.ts';

const deployment: ResourceComparison = {
  group: 'apps',
  version: 'v1',
  kind: 'Deployment',
  namespace: 'web',
  name: 'api',
  status: 'OutOfSync',
  health: { status: 'Progressing', message: 'waiting for rollout' },
  diff: '--- live\n+++ desired\n',
  requiresPruning: false,
};
const namespace: ResourceComparison = {
  group: '',
  version: 'v1',
  kind: 'Namespace',
  namespace: '',
  name: 'web',
  status: 'OutOfSync',
  health: null,
  diff: '',
  requiresPruning: true,
};

test("a comparison becomes Argo CD's status.resources entry: no diff, no live object, empty fields left out", () => {
  assert.deepEqual(resourceStatusOf(deployment), {
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    namespace: 'web',
    name: 'api',
    status: 'OutOfSync',
    health: { status: 'Progressing', message: 'waiting for rollout' },
  });
  assert.deepEqual(resourceStatusOf(namespace), {
    group: '',
    version: 'v1',
    kind: 'Namespace',
    name: 'web',
    status: 'OutOfSync',
    requiresPruning: true,
  });
});

test('a health with no status (a Lua check returned nil) is written as none, so the status still parses', () => {
  const widget: ResourceComparison = { ...deployment, kind: 'Widget', group: 'example.com', health: { status: '' } };
  const entry = resourceStatusOf(widget);
  assert.equal('health' in entry, false);
  const failed = resourceStatusOf({ ...widget, health: { status: 'Unknown', message: 'boom', error: 'boom' } });
  assert.deepEqual(failed.health, { status: 'Unknown', message: 'boom' });
  const raw = { status: { resources: [entry, failed] } };
  assert.equal(readStatus(raw)?.resources?.length, 2);
});

test('status.resources is the inventory the next comparison, prune and deletion start from', () => {
  const status = { resources: [resourceStatusOf(deployment), resourceStatusOf(namespace)] };
  assert.deepEqual(inventoryOf({ status }), [
    { kind: 'Deployment', name: 'api', group: 'apps', namespace: 'web', version: 'v1' },
    { kind: 'Namespace', name: 'web', version: 'v1' },
  ]);
  assert.deepEqual(inventoryOf({}), []);
});

test('objects are tracked by the app instance name and land in the destination namespace', () => {
  const app = (namespace: string) => ({
    metadata: { name: 'web', namespace },
    spec: { destination: { server: 'https://kubernetes.default.svc', namespace: 'web-prod' } },
  });
  assert.deepEqual(trackingTarget(app('argocd'), 'argocd'), { appName: 'web', namespace: 'web-prod' });
  assert.deepEqual(trackingTarget(app('team'), 'argocd'), { appName: 'team_web', namespace: 'web-prod' });
});

test("scopes come from the identity's discovery, asked once per kind; a kind not served is unknown", async () => {
  const asked: string[] = [];
  const served: Record<string, boolean> = { 'v1/ConfigMap': true, 'rbac.authorization.k8s.io/v1/ClusterRole': false };
  const client = {
    resolve: async (apiVersion: string, kind: string): Promise<KubeResult<ResourceInfo>> => {
      asked.push(`${apiVersion}/${kind}`);
      const namespaced = served[`${apiVersion}/${kind}`];
      return namespaced === undefined
        ? { ok: false, error: { code: 404, reason: 'NotFound', message: 'no matches' } }
        : { ok: true, value: { namespaced } as ResourceInfo, warnings: [] };
    },
  } as unknown as DestinationClient;
  const obj = (apiVersion: string, kind: string, name: string): KubeObject => ({
    apiVersion,
    kind,
    metadata: { name },
  });
  const isNamespaced = await resourceScopes(client, [
    obj('v1', 'ConfigMap', 'a'),
    obj('v1', 'ConfigMap', 'b'),
    obj('rbac.authorization.k8s.io/v1', 'ClusterRole', 'c'),
    obj('example.com/v1', 'Gadget', 'd'),
  ]);
  assert.equal(isNamespaced('', 'ConfigMap'), true);
  assert.equal(isNamespaced('rbac.authorization.k8s.io', 'ClusterRole'), false);
  assert.equal(isNamespaced('example.com', 'Gadget'), undefined);
  assert.deepEqual(asked, ['v1/ConfigMap', 'rbac.authorization.k8s.io/v1/ClusterRole', 'example.com/v1/Gadget']);
});

test("deletion's inventory: status.resources, and what the last sync applied that a refresh has not written yet", () => {
  const result = (name: string, extra: Record<string, unknown> = {}) => ({
    group: '',
    version: 'v1',
    kind: 'ConfigMap',
    namespace: 'web',
    name,
    status: 'Synced' as const,
    message: '',
    hookPhase: 'Succeeded' as const,
    syncPhase: 'Sync' as const,
    ...extra,
  });
  const app = {
    status: {
      resources: [{ group: '', version: 'v1', kind: 'ConfigMap', namespace: 'web', name: 'known', status: 'Synced' }],
      operationState: {
        phase: 'Succeeded',
        startedAt: '2026-01-01T00:00:00Z',
        operation: { sync: {} },
        syncResult: {
          resources: [
            result('known'),
            result('new'),
            result('hook', { hookType: 'PreSync' }),
            result('gone', { status: 'Pruned' }),
          ],
        },
      },
    },
  };
  assert.deepEqual(
    deletionInventoryOf(app as never).map((e) => e.name),
    ['known', 'new'],
  );
});
