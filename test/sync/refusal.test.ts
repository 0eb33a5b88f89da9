// spec §5: a denied or failed identity decision is a failed comparison with the decision's exact
// message, and nothing is reported as Synced (the errored sync is the operation's: admission.ts
// refuses, test/controller/operation-machine.test.ts ends it).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { refusedComparison } from '../../src/sync/index.ts';

const deny =
  'no matching service account found for destination server https://kubernetes.default.svc and namespace guestbook';
const desired: KubeObject[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'guestbook' } },
  {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'hook', annotations: { 'argocd.argoproj.io/hook': 'PreSync' } },
  },
];

test('a refused comparison is Unknown with the exact message, every resource Unknown, hooks left out', () => {
  const c = refusedComparison(deny, desired);
  assert.equal(c.syncStatus, 'Unknown');
  assert.deepEqual(c.errors, [deny]);
  assert.deepEqual(
    c.resources.map((r) => [r.kind, r.status, r.message]),
    [['ConfigMap', 'Unknown', deny]],
  );
  assert.ok(!c.resources.some((r) => r.status === 'Synced'));
});
