import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { KIND_ORDER, kindRank, sortTasks, type Orderable } from '../../src/sync/order.ts';

function obj(
  kind: string,
  name: string,
  extra: { apiVersion?: string; namespace?: string; wave?: number; spec?: unknown } = {},
): KubeObject {
  const o: KubeObject = { apiVersion: extra.apiVersion ?? 'v1', kind, metadata: { name } };
  if (extra.namespace) o.metadata.namespace = extra.namespace;
  if (extra.wave !== undefined) o.metadata.annotations = { 'argocd.argoproj.io/sync-wave': String(extra.wave) };
  if (extra.spec) o['spec'] = extra.spec;
  return o;
}
const task = (target: KubeObject, phase: Orderable['phase'] = 'Sync'): Orderable => ({ phase, target, live: null });
const names = (ts: Orderable[]) =>
  ts.map((t) => `${(t.target ?? t.live)?.kind}/${(t.target ?? t.live)?.metadata.name}`);

test("kind order is gitops-engine's list, unknown kinds after every known one", () => {
  assert.equal(KIND_ORDER[0], 'Namespace');
  assert.equal(KIND_ORDER[KIND_ORDER.length - 1], 'APIService');
  assert.equal(KIND_ORDER.length, 35);
  assert.ok(kindRank('Namespace') < kindRank('CustomResourceDefinition'));
  assert.ok(kindRank('ServiceAccount') < kindRank('CustomResourceDefinition'));
  assert.ok(kindRank('ClusterRoleBinding') < kindRank('Deployment'));
  assert.equal(kindRank('Widget'), 0);
  assert.ok(kindRank('APIService') < kindRank('Widget'));
});

test('tasks sort by phase, then wave, then kind, then name', () => {
  const tasks = [
    task(obj('Deployment', 'b')),
    task(obj('ConfigMap', 'z', { wave: -1 })),
    task(obj('Job', 'post', { wave: -5 }), 'PostSync'),
    task(obj('Deployment', 'a')),
    task(obj('Service', 'svc')),
    task(obj('Job', 'pre', { wave: 10 }), 'PreSync'),
    task(obj('Widget', 'w')),
    task(obj('Namespace', 'ns', { wave: 3 })),
  ];
  assert.deepEqual(names(sortTasks(tasks)), [
    'Job/pre',
    'ConfigMap/z',
    'Service/svc',
    'Deployment/a',
    'Deployment/b',
    'Widget/w',
    'Namespace/ns',
    'Job/post',
  ]);
});

test('a Namespace moves up to just before the first object in it, taking its wave', () => {
  const tasks = sortTasks([
    task(obj('ConfigMap', 'cm', { namespace: 'team', wave: -2 })),
    task(obj('Namespace', 'team', { wave: 5 })),
  ]);
  assert.deepEqual(names(tasks), ['Namespace/team', 'ConfigMap/cm']);
  assert.equal(tasks[0]?.waveOverride, -2);
});

test('a CRD moves up to just before its first custom resource, taking its phase and wave', () => {
  const crd = obj('CustomResourceDefinition', 'widgets.example.com', {
    apiVersion: 'apiextensions.k8s.io/v1',
    wave: 2,
    spec: { group: 'example.com', names: { kind: 'Widget' } },
  });
  const cr = obj('Widget', 'w', { apiVersion: 'example.com/v1', wave: -1 });
  const other = obj('ConfigMap', 'x', { wave: -1 });
  const tasks = sortTasks([task(crd), task(cr), task(other)]);
  assert.deepEqual(names(tasks), ['ConfigMap/x', 'CustomResourceDefinition/widgets.example.com', 'Widget/w']);
  assert.equal(tasks[1]?.waveOverride, -1);
});

test('prunes (no target) sort by their live object', () => {
  const t: Orderable = { phase: 'Sync', target: null, live: obj('Secret', 's', { wave: 1 }) };
  assert.deepEqual(names(sortTasks([t, task(obj('ConfigMap', 'c', { wave: 1 }))])), ['Secret/s', 'ConfigMap/c']);
});
