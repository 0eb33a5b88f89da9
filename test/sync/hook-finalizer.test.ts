// Argo CD's hook finalizer (gitops-engine pkg/sync/hook): added to a hook as a sync creates it,
// taken off with a JSON patch that tests the entry, read again when the list moved.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import type { DestinationClient, RawRequest } from '../../src/kube/types.ts';
import { HOOK_FINALIZER, removeHookFinalizer, withHookFinalizer } from '../../src/sync/hook-finalizer.ts';

const job = (finalizers?: string[]): KubeObject => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'migrate', namespace: 'ns', ...(finalizers ? { finalizers } : {}) },
});

test('a hook is created with the hook finalizer after its own; the object given is not changed', () => {
  const own = job(['example.com/keep']);
  assert.deepEqual(withHookFinalizer(own).metadata['finalizers'], ['example.com/keep', HOOK_FINALIZER]);
  assert.deepEqual(own.metadata['finalizers'], ['example.com/keep']);
  const already = job([HOOK_FINALIZER]);
  assert.equal(withHookFinalizer(already), already);
});

/** A client whose PATCH answers `answers` in turn and whose GET returns `fresh`. */
function fakeClient(
  answers: Array<{ code: number } | KubeObject>,
  fresh: KubeObject,
): {
  client: DestinationClient;
  patches: unknown[];
} {
  const patches: unknown[] = [];
  const client = {
    resolve: async () => ({
      ok: true,
      value: { apiVersion: 'batch/v1', group: 'batch', version: 'v1', kind: 'Job', resource: 'jobs', namespaced: true },
    }),
    request: async (req: RawRequest) => {
      assert.equal(req.path, '/apis/batch/v1/namespaces/ns/jobs/migrate');
      assert.equal(req.contentType, 'application/json-patch+json');
      patches.push(req.body);
      const a = answers.shift();
      if (a && 'code' in a) return { ok: false, error: { code: a.code, reason: '', message: `code ${a.code}` } };
      return { ok: true, value: a, warnings: [] };
    },
    get: async () => ({ ok: true, value: fresh }),
  } as unknown as DestinationClient;
  return { client, patches };
}

test('the finalizer is removed by index, tested first; a moved list is read again and patched at its new index', async () => {
  const done = job(['a']);
  const { client, patches } = fakeClient([{ code: 422 }, done], job(['a', 'b', HOOK_FINALIZER]));
  const res = await removeHookFinalizer(client, job(['a', HOOK_FINALIZER]));
  assert.deepEqual(res, { ok: true, live: done });
  assert.deepEqual(patches, [
    [
      { op: 'test', path: '/metadata/finalizers/1', value: HOOK_FINALIZER },
      { op: 'remove', path: '/metadata/finalizers/1' },
    ],
    [
      { op: 'test', path: '/metadata/finalizers/2', value: HOOK_FINALIZER },
      { op: 'remove', path: '/metadata/finalizers/2' },
    ],
  ]);
});

test('nothing is sent for a hook without the finalizer; a hook gone meanwhile is no error', async () => {
  const { client, patches } = fakeClient([{ code: 404 }], job());
  assert.deepEqual(await removeHookFinalizer(client, job(['x'])), { ok: true, live: job(['x']) });
  assert.equal(patches.length, 0);
  assert.deepEqual(await removeHookFinalizer(client, job([HOOK_FINALIZER])), { ok: true, live: null });
  const refused = fakeClient([{ code: 403 }], job());
  assert.deepEqual(await removeHookFinalizer(refused.client, job([HOOK_FINALIZER])), { ok: false, error: 'code 403' });
});
