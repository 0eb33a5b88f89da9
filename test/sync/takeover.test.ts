// Taking over what Argo CD applied (gitops-engine sync_context.go performCSAUpgradeMigration): the
// managedFields patch, and the comparison's view of what the apply after it removes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { afterTakeover, takeoverManagers, takeoverPatch } from '../../src/sync/takeover.ts';

const live: KubeObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'c',
    namespace: 'n',
    resourceVersion: '42',
    managedFields: [
      {
        manager: 'kubectl-client-side-apply',
        operation: 'Update',
        apiVersion: 'v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:a': {}, 'f:stale': {} } },
      },
      {
        manager: 'argocd-controller',
        operation: 'Apply',
        apiVersion: 'v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:b': {} } },
      },
      {
        manager: 'someone',
        operation: 'Update',
        apiVersion: 'v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:theirs': {} } },
      },
    ],
  },
  data: { a: '1', b: '2', stale: 'x', theirs: 'y' },
};

test("the managers: kubectl-client-side-apply (or the annotation's) and argocd-controller", () => {
  assert.deepEqual(takeoverManagers(undefined), ['kubectl-client-side-apply', 'argocd-controller']);
  assert.deepEqual(takeoverManagers({ 'argocd.argoproj.io/client-side-apply-migration-manager': 'mine' }), [
    'mine',
    'argocd-controller',
  ]);
});

test('the patch hands their fields to impersync, guarded by the resourceVersion; others keep theirs', () => {
  const patch = takeoverPatch(
    live,
    'impersync',
    takeoverManagers(undefined),
    new Date('2026-01-01T00:00:00Z'),
  ) as Array<{ op: string; path: string; value: unknown }>;
  assert.deepEqual(patch[0], { op: 'test', path: '/metadata/resourceVersion', value: '42' });
  const entries = patch[1]?.value as Array<{ manager: string; operation: string; fieldsV1: unknown }>;
  assert.deepEqual(
    entries.map((e) => e.manager),
    ['impersync', 'someone'],
  );
  assert.deepEqual(entries[0]?.fieldsV1, { 'f:data': { 'f:a': {}, 'f:stale': {}, 'f:b': {} } });
  assert.equal(entries[0]?.operation, 'Apply');
  const mine = { ...live, metadata: { ...live.metadata, managedFields: [] } };
  assert.equal(takeoverPatch(mine, 'impersync', takeoverManagers(undefined), new Date()), null);
});

test("the comparison sees the stale field go, and the other manager's stay", () => {
  const target: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'c', namespace: 'n' },
    data: { a: '1', b: '2' },
  };
  const predicted = structuredClone(live);
  const after = afterTakeover(predicted, target, live, 'impersync', takeoverManagers(undefined));
  assert.deepEqual(after['data'], { a: '1', b: '2', theirs: 'y' });
});
