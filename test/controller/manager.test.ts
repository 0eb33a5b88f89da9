import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appChangeNeedsRefresh, hasOperationWork } from '../../src/controller/manager.ts';
import { identityConditions } from '../../src/controller/context.ts';
import type { WatchedObject } from '../../src/controller/watch.ts';

const base: WatchedObject = { metadata: { name: 'a', namespace: 'argocd', resourceVersion: '1', annotations: {} }, spec: { project: 'p' }, status: { sync: { status: 'Synced' } } };

test('a status-only change (the controller’s own write) does not requeue; spec, operation, annotations, deletion do', () => {
  assert.equal(appChangeNeedsRefresh(base, { ...base, metadata: { ...base.metadata, resourceVersion: '2' }, status: { sync: { status: 'OutOfSync' } } }), false);
  assert.equal(appChangeNeedsRefresh(base, { ...base, spec: { project: 'q' } }), true);
  assert.equal(appChangeNeedsRefresh(base, { ...base, operation: { sync: {} } }), true);
  assert.equal(appChangeNeedsRefresh(base, { ...base, metadata: { ...base.metadata, annotations: { 'argocd.argoproj.io/refresh': 'hard' } } }), true);
  assert.equal(appChangeNeedsRefresh(base, { ...base, metadata: { ...base.metadata, deletionTimestamp: 'now' } }), true);
  assert.equal(appChangeNeedsRefresh(undefined, base), true);
});

test('operation work: an operation, a Running state to resume, or a deletion', () => {
  assert.equal(hasOperationWork(base), false);
  assert.equal(hasOperationWork({ ...base, operation: { sync: {} } }), true);
  assert.equal(hasOperationWork({ ...base, status: { operationState: { phase: 'Running' } } }), true);
  assert.equal(hasOperationWork({ ...base, status: { operationState: { phase: 'Succeeded' } } }), false);
  assert.equal(hasOperationWork({ ...base, metadata: { ...base.metadata, deletionTimestamp: 'now' } }), true);
});

test('the identity condition names the decision and the ServiceAccount; warnings become their own condition', () => {
  const common = { trace: [], entries: [], globalProjects: [] };
  const impersonate = identityConditions({ ...common, decision: 'impersonate', serviceAccount: 'system:serviceaccount:g:sa', matched: { index: 1, server: '*', namespace: 'g', defaultServiceAccount: 'sa', fromProject: 'p' }, message: '', warnings: [] });
  assert.deepEqual(impersonate, [{ type: 'ImpersonationInfo', message: "comparison and sync run as system:serviceaccount:g:sa (destinationServiceAccounts[1] of AppProject 'p': server '*', namespace 'g')" }]);
  const deny = identityConditions({ ...common, decision: 'deny', serviceAccount: null, matched: null, message: 'no matching service account found for destination server s and namespace n', warnings: ['w1', 'w2'] });
  assert.deepEqual(deny, [
    { type: 'ImpersonationInfo', message: 'refused: no matching service account found for destination server s and namespace n' },
    { type: 'ImpersonationWarning', message: 'w1; w2' },
  ]);
});
