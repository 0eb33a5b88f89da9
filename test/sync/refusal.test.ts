// spec §5: a denied or failed identity decision is a failed comparison and an errored sync with
// the decision's exact message, and nothing is reported as Synced.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import type { ClientRefusal } from '../../src/kube/types.ts';
import { refusedComparison, refusedSync } from '../../src/sync/index.ts';

const deny: ClientRefusal = {
  refused: true,
  decision: 'deny',
  message:
    'no matching service account found for destination server https://kubernetes.default.svc and namespace guestbook',
};
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
  assert.deepEqual(c.errors, [deny.message]);
  assert.deepEqual(
    c.resources.map((r) => [r.kind, r.status, r.message]),
    [['ConfigMap', 'Unknown', deny.message]],
  );
  assert.ok(!c.resources.some((r) => r.status === 'Synced'));
});

test('a refused sync is phase Error with the exact message and no resource results', () => {
  const error: ClientRefusal = {
    refused: true,
    decision: 'error',
    message: "failed to derive service account to impersonate: default service account contains invalid chars 'a*b'",
  };
  assert.deepEqual(refusedSync(error), { phase: 'Error', message: error.message, identity: 'none', resources: [] });
});
