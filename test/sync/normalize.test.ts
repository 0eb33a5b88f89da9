import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { jsonEqual, maskSecrets, normalizeForCompare } from '../../src/sync/normalize.ts';

test('server bookkeeping, status and last-applied are removed; the rest kept', () => {
  const live: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'c',
      namespace: 'n',
      uid: 'u',
      resourceVersion: '5',
      generation: 2,
      creationTimestamp: '2024-01-01T00:00:00Z',
      managedFields: [{ manager: 'x' }],
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
      labels: { keep: 'me' },
    },
    data: { a: '1' },
    status: { anything: true },
  };
  assert.deepEqual(normalizeForCompare(live), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'c', namespace: 'n', labels: { keep: 'me' } },
    data: { a: '1' },
  });
  assert.equal(live.metadata['uid'], 'u', 'the input is not changed');
  assert.deepEqual(live.metadata.annotations, { 'kubectl.kubernetes.io/last-applied-configuration': '{}' });
  assert.deepEqual(live['status'], { anything: true });
});

test('JSON equality ignores key order, not array order', () => {
  assert.ok(jsonEqual({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }));
  assert.ok(!jsonEqual({ a: [1, 2] }, { a: [2, 1] }));
  assert.ok(!jsonEqual({ a: 1 }, { a: 1, b: null }));
  assert.ok(jsonEqual({ a: 1, b: undefined }, { a: 1 }));
});

test('Secret values are masked, differing ones with a longer mask', () => {
  const secret = (data: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's' },
    data,
  });
  const { live, predicted } = maskSecrets(
    secret({ same: 'YQ==', changed: 'Yg==' }),
    secret({ same: 'YQ==', changed: 'Yw==', added: 'ZA==' }),
  );
  assert.deepEqual(live?.['data'], { same: '++++++++', changed: '++++++++' });
  assert.deepEqual(predicted?.['data'], { same: '++++++++', changed: '+++++++++', added: '+++++++++' });
  const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: 'visible' } };
  assert.equal(maskSecrets(cm, cm).live, cm);
});
