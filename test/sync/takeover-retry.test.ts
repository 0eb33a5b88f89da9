// The takeover's guarded patch when the object changed after the comparison read it (a Deployment's
// own controller writes its status): read again and patched again, but never another object, and
// never hiding the patch's own error. The client is scripted, to make on cue what a real server
// does by chance; test/e2e/semantics-takeover.test.ts takes over a real Deployment.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import type { DestinationClient, KubeError, KubeResult, RawRequest } from '../../src/kube/types.ts';
import { takeOver } from '../../src/sync/apply.ts';
import type { TaskContext } from '../../src/sync/tasks.ts';

const CSA = 'kubectl-client-side-apply';
const cm = (rv: string, uid = 'uid-1'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'c',
    namespace: 'n',
    uid,
    resourceVersion: rv,
    managedFields: [{ manager: CSA, operation: 'Update', apiVersion: 'v1', fieldsV1: { 'f:data': { 'f:a': {} } } }],
  },
  data: { a: '1' },
});
const ok = <T>(value: T): KubeResult<T> => ({ ok: true, value, warnings: [] });
const fail = (code: number, message: string): KubeResult<never> => ({
  ok: false,
  error: { code, reason: 'Invalid', message } as KubeError,
});
const refusedMessage = 'the server rejected our request due to an error in our request';
const refused = fail(422, refusedMessage);

/** A client answering the patches and the reads from scripts, logging the versions each patch tested. */
function scripted(patches: Array<KubeResult<unknown>>, reads: Array<KubeResult<KubeObject | null>>) {
  const tested: string[] = [];
  let reads_ = 0;
  const unused = (): never => {
    throw new Error('not used by the takeover');
  };
  const client: DestinationClient = {
    server: 'https://kubernetes.default.svc',
    identity: { impersonate: 'system:serviceaccount:n:deployer' },
    resolve: () =>
      Promise.resolve(
        ok({
          apiVersion: 'v1',
          group: '',
          version: 'v1',
          kind: 'ConfigMap',
          resource: 'configmaps',
          namespaced: true,
          verbs: [],
        }),
      ),
    request<T>(req: RawRequest) {
      const ops = req.body as Array<{ op: string; value: unknown }>;
      tested.push(String(ops[0]?.value));
      return Promise.resolve((patches.shift() ?? ok({})) as KubeResult<T>);
    },
    resolveGroupKind: unused,
    create: unused,
    list: unused,
    delete: unused,
    apply: unused,
    openApiV3: unused,
    get: unused,
    uncached: () => ({
      ...client,
      get: () => {
        reads_++;
        return Promise.resolve(reads.shift() ?? fail(500, 'no more reads scripted'));
      },
    }),
  };
  const ctx = { client, dryRun: false, fieldManager: 'impersync', takeover: [CSA] } as unknown as TaskContext;
  return { ctx, tested, reads: () => reads_ };
}

test('a patch refused because the object changed is made again from a fresh read', async () => {
  const s = scripted([refused, ok({ patched: true })], [ok(cm('11'))]);
  assert.deepEqual(await takeOver(s.ctx, cm('10')), { live: { patched: true } });
  assert.deepEqual(s.tested, ['10', '11']);
});

test('an object deleted and created again since the comparison is not patched', async () => {
  const s = scripted([refused], [ok(cm('55', 'uid-2'))]);
  assert.deepEqual(await takeOver(s.ctx, cm('10')), {
    error: 'the object was deleted and created again since it was compared',
  });
  assert.deepEqual(s.tested, ['10']);
});

test('a patch refused for itself (the object unchanged) is reported at once, with its own error', async () => {
  const same = scripted([refused], [ok(cm('10'))]);
  assert.deepEqual(await takeOver(same.ctx, cm('10')), { error: refusedMessage });
  assert.deepEqual(same.tested, ['10']);
  const unreadable = scripted([refused], [fail(403, 'forbidden')]);
  assert.deepEqual(await takeOver(unreadable.ctx, cm('10')), { error: refusedMessage });
  const gone = scripted([refused], [ok(null)]);
  assert.deepEqual(await takeOver(gone.ctx, cm('10')), { live: null }, 'gone: nothing to hand over');
  const other = scripted([fail(403, 'patch forbidden')], []);
  assert.deepEqual(await takeOver(other.ctx, cm('10')), { error: 'patch forbidden' });
  assert.equal(other.reads(), 0);
});

test('an object that keeps changing is given up after 5 patches', async () => {
  const s = scripted(
    Array.from({ length: 9 }, () => refused),
    Array.from({ length: 9 }, (_, i) => ok(cm(String(11 + i)))),
  );
  assert.deepEqual(await takeOver(s.ctx, cm('10')), { error: refusedMessage });
  assert.deepEqual(s.tested, ['10', '11', '12', '13', '14']);
});
