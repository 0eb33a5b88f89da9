// PostDelete hooks (Argo CD's controller/hook.go): which objects are hooks, and the finalizers the
// refresh keeps in step with the manifests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/api/index.ts';
import {
  isPostDeleteHook,
  POST_DELETE_CLEANUP_FINALIZER,
  POST_DELETE_FINALIZER,
  postDeleteFinalizers,
} from '../../src/controller/post-delete.ts';

const obj = (annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'j', annotations },
});

test("a PostDelete hook: Argo CD's annotation among others, or Helm's post-delete", () => {
  assert.equal(isPostDeleteHook(obj({ 'argocd.argoproj.io/hook': 'PostDelete' })), true);
  assert.equal(isPostDeleteHook(obj({ 'argocd.argoproj.io/hook': 'PreSync, PostDelete' })), true);
  assert.equal(isPostDeleteHook(obj({ 'helm.sh/hook': 'post-delete' })), true);
  assert.equal(isPostDeleteHook(obj({ 'argocd.argoproj.io/hook': 'PostSync' })), false);
  assert.equal(isPostDeleteHook(obj()), false);
});

test('both finalizers are set with a hook in the manifests and removed without one; others are kept', () => {
  const hook = obj({ 'argocd.argoproj.io/hook': 'PostDelete' });
  assert.deepEqual(postDeleteFinalizers(['resources-finalizer.argocd.argoproj.io'], [hook]), [
    'resources-finalizer.argocd.argoproj.io',
    POST_DELETE_FINALIZER,
    POST_DELETE_CLEANUP_FINALIZER,
  ]);
  assert.equal(postDeleteFinalizers([POST_DELETE_FINALIZER, POST_DELETE_CLEANUP_FINALIZER], [hook]), undefined);
  assert.deepEqual(postDeleteFinalizers([POST_DELETE_FINALIZER], [hook]), [
    POST_DELETE_FINALIZER,
    POST_DELETE_CLEANUP_FINALIZER,
  ]);
  assert.deepEqual(postDeleteFinalizers(['x', POST_DELETE_FINALIZER, POST_DELETE_CLEANUP_FINALIZER], [obj()]), ['x']);
  assert.equal(postDeleteFinalizers(['x'], [obj()]), undefined);
});
