// PreDelete and PostDelete hooks (Argo CD's controller/hook.go): which objects are hooks, and the
// finalizers the refresh keeps in step with the manifests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/api/index.ts';
import {
  deleteHookFinalizers,
  isPostDeleteHook,
  isPreDeleteHook,
  POST_DELETE_CLEANUP_FINALIZER,
  POST_DELETE_FINALIZER,
  PRE_DELETE_CLEANUP_FINALIZER,
  PRE_DELETE_FINALIZER,
} from '../../src/controller/delete-hooks.ts';

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
  assert.deepEqual(deleteHookFinalizers(['resources-finalizer.argocd.argoproj.io'], [hook]), [
    'resources-finalizer.argocd.argoproj.io',
    POST_DELETE_FINALIZER,
    POST_DELETE_CLEANUP_FINALIZER,
  ]);
  assert.equal(deleteHookFinalizers([POST_DELETE_FINALIZER, POST_DELETE_CLEANUP_FINALIZER], [hook]), undefined);
  assert.deepEqual(deleteHookFinalizers([POST_DELETE_FINALIZER], [hook]), [
    POST_DELETE_FINALIZER,
    POST_DELETE_CLEANUP_FINALIZER,
  ]);
  assert.deepEqual(deleteHookFinalizers(['x', POST_DELETE_FINALIZER, POST_DELETE_CLEANUP_FINALIZER], [obj()]), ['x']);
  assert.equal(deleteHookFinalizers(['x'], [obj()]), undefined);
});

test("a PreDelete hook: Argo CD's annotation among others, or Helm's pre-delete; never a PostDelete one", () => {
  assert.equal(isPreDeleteHook(obj({ 'argocd.argoproj.io/hook': 'PreDelete' })), true);
  assert.equal(isPreDeleteHook(obj({ 'argocd.argoproj.io/hook': 'PreSync,PreDelete' })), true);
  assert.equal(isPreDeleteHook(obj({ 'helm.sh/hook': 'pre-delete' })), true);
  assert.equal(isPreDeleteHook(obj({ 'argocd.argoproj.io/hook': 'PostDelete' })), false);
  assert.equal(isPostDeleteHook(obj({ 'argocd.argoproj.io/hook': 'PreDelete' })), false);
});

test("each type's two finalizers follow its own hooks: PreDelete's first, PostDelete's after", () => {
  const pre = obj({ 'argocd.argoproj.io/hook': 'PreDelete' });
  const post = obj({ 'helm.sh/hook': 'post-delete' });
  assert.deepEqual(deleteHookFinalizers([], [post, pre]), [
    PRE_DELETE_FINALIZER,
    PRE_DELETE_CLEANUP_FINALIZER,
    POST_DELETE_FINALIZER,
    POST_DELETE_CLEANUP_FINALIZER,
  ]);
  // The PreDelete hook leaves Git: its finalizers go, PostDelete's stay.
  assert.deepEqual(
    deleteHookFinalizers(
      [PRE_DELETE_FINALIZER, PRE_DELETE_CLEANUP_FINALIZER, POST_DELETE_FINALIZER, POST_DELETE_CLEANUP_FINALIZER],
      [post],
    ),
    [POST_DELETE_FINALIZER, POST_DELETE_CLEANUP_FINALIZER],
  );
  assert.equal(deleteHookFinalizers([PRE_DELETE_FINALIZER, PRE_DELETE_CLEANUP_FINALIZER], [pre]), undefined);
});
