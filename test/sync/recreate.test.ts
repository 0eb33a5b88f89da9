// Replace=true / Force=true re-create an object without holding a worker (issue 12): the delete is
// sent at one step, the step ends with the task waiting (no result), and a later step creates the
// object once the server no longer has the old one, or fails the task 60 s after the delete was
// sent, measured by the operation's clock across steps. The client is an in-memory
// DestinationClient whose deletes a finalizer can hold; the real API server's side is
// test/e2e/semantics-options.test.ts, semantics-takeover.test.ts and operation-steps.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import type { DestinationClient, KubeResult, ObjectRef, ResourceInfo } from '../../src/kube/types.ts';
import { applyGroup, taskContext } from '../../src/sync/sync.ts';
import type { SyncOptions } from '../../src/sync/sync.ts';
import type { Recreating, SyncTask } from '../../src/sync/tasks.ts';

const ok = <T>(value: T): KubeResult<T> => ({ ok: true, value, warnings: [] });
const refused = (code: number, message: string): KubeResult<never> => ({
  ok: false,
  error: { code, reason: code === 422 ? 'Invalid' : 'Conflict', message },
});

const cmInfo: ResourceInfo = {
  apiVersion: 'v1',
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  resource: 'configmaps',
  namespaced: true,
  verbs: ['get', 'create', 'update', 'patch', 'delete'],
};

function configMap(name: string, data: Record<string, string>, syncOptions: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'app', annotations: { 'argocd.argoproj.io/sync-options': syncOptions } },
    data,
    immutable: true,
  };
}

/**
 * One namespace of ConfigMaps. An immutable ConfigMap's data cannot change (422); a delete while
 * `held` (a finalizer) only marks the object as being deleted, until release().
 */
function cluster() {
  const objects = new Map<string, KubeObject>();
  const calls: string[] = [];
  let uids = 0;
  let held = false;
  const key = (r: { name: string }) => r.name;
  const put = (o: KubeObject): KubeObject => {
    const stored = structuredClone(o);
    stored.metadata['uid'] = `uid-${++uids}`;
    objects.set(key(o.metadata), stored);
    return structuredClone(stored);
  };
  const unused = (): never => {
    throw new Error('not used');
  };
  const client: DestinationClient = {
    server: 'https://kubernetes.default.svc',
    identity: { impersonate: 'system:serviceaccount:app:deployer' },
    resolveGroupKind: unused,
    list: unused,
    uncached: unused,
    openApiV3: unused,
    async resolve() {
      return ok(cmInfo);
    },
    async get(ref: ObjectRef) {
      const o = objects.get(key(ref));
      return ok(o ? structuredClone(o) : null);
    },
    async apply(obj: KubeObject, opts) {
      calls.push(`apply${opts?.dryRun ? ' (dry run)' : ''} ${obj.metadata.name}`);
      const live = objects.get(key(obj.metadata));
      if (live && live['immutable'] === true && JSON.stringify(live['data']) !== JSON.stringify(obj['data']))
        return refused(422, `ConfigMap "${obj.metadata.name}" is invalid: data: Forbidden: field is immutable`);
      if (live?.metadata['deletionTimestamp']) return refused(409, 'object is being deleted');
      if (opts?.dryRun) return ok(structuredClone(obj));
      const uid = live?.metadata['uid'];
      const stored = put(obj);
      if (uid !== undefined) {
        stored.metadata['uid'] = uid;
        (objects.get(key(obj.metadata)) as KubeObject).metadata['uid'] = uid;
      }
      return ok(stored);
    },
    async create(obj: KubeObject, opts) {
      calls.push(`create${opts?.dryRun ? ' (dry run)' : ''} ${obj.metadata.name}`);
      if (objects.has(key(obj.metadata))) return refused(409, `configmaps "${obj.metadata.name}" already exists`);
      return ok(opts?.dryRun ? structuredClone(obj) : put(obj));
    },
    async delete(ref: ObjectRef, opts) {
      calls.push(`delete ${ref.name} ${opts?.propagationPolicy ?? ''}`.trim());
      const o = objects.get(key(ref));
      if (!o) return ok('absent' as const);
      if (held) o.metadata['deletionTimestamp'] = '2026-01-01T00:00:00Z';
      else objects.delete(key(ref));
      return ok('deleted' as const);
    },
    async request<T>(req: {
      method: string;
      path: string;
      body?: unknown;
      query?: Record<string, string | undefined>;
    }) {
      calls.push(`${req.method}${req.query?.['dryRun'] ? ' (dry run)' : ''} ${req.path}`);
      const body = req.body as KubeObject;
      const live = objects.get(key(body.metadata));
      if (!live) return refused(404, 'not found') as KubeResult<T>;
      const next = structuredClone(body);
      next.metadata['uid'] = live.metadata['uid'];
      if (req.query?.['dryRun'] === undefined) objects.set(key(body.metadata), next);
      return ok(structuredClone(next) as T);
    },
  };
  return {
    client,
    calls,
    live: (name: string) => (objects.has(name) ? structuredClone(objects.get(name) as KubeObject) : null),
    seed: (o: KubeObject) => put(o),
    hold: () => (held = true),
    release: () => {
      held = false;
      for (const [k, o] of objects) if (o.metadata['deletionTimestamp']) objects.delete(k);
    },
  };
}

/** One step as sync-step.ts takes it: a plan's task made again from the cluster, and where the last step left it. */
async function step(
  c: ReturnType<typeof cluster>,
  target: KubeObject,
  opts: { at: number; recreating?: readonly Recreating[]; dryRun?: boolean; options?: SyncOptions },
) {
  const ctx = taskContext(
    c.client,
    {
      appName: 'app',
      namespace: 'app',
      dryRun: opts.dryRun ?? false,
      recreating: opts.recreating,
      now: () => opts.at,
      ...opts.options,
    },
    0,
  );
  const t: SyncTask = {
    phase: 'Sync',
    target,
    live: c.live(target.metadata.name),
    hook: false,
    message: '',
  };
  const applied = await applyGroup(ctx, [t]);
  return { t, applied, recreating: ctx.recreating };
}

const T0 = Date.parse('2026-12-01T12:00:00Z');

test('Force=true: the delete is sent once, the step ends waiting, a later step applies once the old object is gone', async () => {
  const c = cluster();
  c.seed(configMap('imm', { a: '1' }, 'Force=true'));
  const oldUid = c.live('imm')?.metadata['uid'];
  c.hold();
  const target = configMap('imm', { a: '2' }, 'Force=true');

  const first = await step(c, target, { at: T0 });
  assert.deepEqual(first.applied, { ok: true, progressed: false });
  assert.equal(first.t.deleting, true);
  assert.equal(first.t.order, undefined, 'not started: no result in status yet');
  assert.equal(first.t.result, undefined);
  assert.deepEqual(first.recreating, [
    { key: 'Sync//ConfigMap/app/imm', uid: oldUid, since: new Date(T0).toISOString() },
  ]);
  assert.deepEqual(c.calls, ['apply imm', 'delete imm Foreground']);

  // Still held 30 s later: looked at, not deleted again, not applied.
  c.calls.length = 0;
  const second = await step(c, target, { at: T0 + 30_000, recreating: first.recreating });
  assert.equal(second.t.deleting, true);
  assert.deepEqual(second.recreating, first.recreating, 'the timeout still counts from the first delete');
  assert.deepEqual(c.calls, []);

  c.release();
  const third = await step(c, target, { at: T0 + 40_000, recreating: second.recreating });
  assert.deepEqual(third.applied, { ok: true, progressed: true });
  assert.equal(third.t.result, 'Synced');
  assert.equal(third.t.operationState, 'Running');
  assert.equal(third.t.message, 'configmap/imm serverside-applied');
  assert.deepEqual(third.recreating, []);
  assert.deepEqual(c.calls, ['apply imm']);
  assert.deepEqual(c.live('imm')?.['data'], { a: '2' });
});

test('Force=true: an old object still there 60 s after the delete fails the task, saying so', async () => {
  const c = cluster();
  c.seed(configMap('imm', { a: '1' }, 'Force=true'));
  c.hold();
  const target = configMap('imm', { a: '2' }, 'Force=true');
  const first = await step(c, target, { at: T0 });
  const late = await step(c, target, { at: T0 + 59_999, recreating: first.recreating });
  assert.equal(late.t.deleting, true);
  const timedOut = await step(c, target, { at: T0 + 60_000, recreating: late.recreating });
  assert.equal(timedOut.applied.ok, false);
  assert.equal(timedOut.t.result, 'SyncFailed');
  assert.equal(timedOut.t.operationState, 'Failed');
  assert.equal(timedOut.t.message, 'timed out after 60s waiting for configmap/imm to be deleted');
  assert.deepEqual(timedOut.recreating, []);
  assert.equal(c.calls.filter((x) => x.startsWith('delete')).length, 1);
});

test('Replace=true with Force=true: deleted at one step, created at the next, reported replaced', async () => {
  const c = cluster();
  c.seed(configMap('r', { a: '1' }, 'Replace=true,Force=true'));
  c.hold();
  const target = configMap('r', { a: '2' }, 'Replace=true,Force=true');
  const first = await step(c, target, { at: T0 });
  assert.equal(first.t.deleting, true);
  assert.deepEqual(c.calls, ['delete r Foreground']);

  // Gone by the next step's plan: the task's live object is null, and what is created replaces it.
  c.release();
  const second = await step(c, target, { at: T0 + 5_000, recreating: first.recreating });
  assert.equal(second.t.result, 'Synced');
  assert.equal(second.t.message, 'configmap/r replaced');
  assert.deepEqual(c.calls, ['delete r Foreground', 'create r']);
  assert.deepEqual(second.recreating, []);
});

test('Replace=true with Force=true: gone already at the step that deletes it, created at once', async () => {
  const c = cluster();
  c.seed(configMap('r', { a: '1' }, 'Replace=true,Force=true'));
  const s = await step(c, configMap('r', { a: '2' }, 'Replace=true,Force=true'), { at: T0 });
  assert.deepEqual(s.applied, { ok: true, progressed: true });
  assert.equal(s.t.message, 'configmap/r replaced');
  assert.deepEqual(c.calls, ['delete r Foreground', 'create r']);
  assert.deepEqual(s.recreating, []);
});

test('after a restart that lost the result of the create, the object made since is not deleted again', async () => {
  const c = cluster();
  c.seed(configMap('r', { a: '1' }, 'Replace=true,Force=true'));
  const oldUid = c.live('r')?.metadata['uid'] as string;
  c.hold();
  const target = configMap('r', { a: '2' }, 'Replace=true,Force=true');
  const first = await step(c, target, { at: T0 });
  // The next step created it, then the controller stopped before writing the step's state.
  c.release();
  await c.client.create(target);
  c.calls.length = 0;
  const again = await step(c, target, { at: T0 + 5_000, recreating: first.recreating });
  assert.notEqual(c.live('r')?.metadata['uid'], oldUid);
  assert.equal(again.t.result, 'Synced');
  assert.equal(again.t.message, 'configmap/r replaced');
  assert.deepEqual(c.calls, ['PUT /api/v1/namespaces/app/configmaps/r'], 'replaced in place, no delete');

  // Force=true's apply path: the same.
  const f = cluster();
  f.seed(configMap('imm', { a: '1' }, 'Force=true'));
  f.hold();
  const fTarget = configMap('imm', { a: '2' }, 'Force=true');
  const fFirst = await step(f, fTarget, { at: T0 });
  f.release();
  await f.client.create(fTarget);
  f.calls.length = 0;
  const fAgain = await step(f, fTarget, { at: T0 + 5_000, recreating: fFirst.recreating });
  assert.equal(fAgain.t.result, 'Synced');
  assert.deepEqual(f.calls, ['apply imm']);
});

test('an object already being deleted, its delete not recorded (a crash before the write), is not deleted again', async () => {
  const c = cluster();
  c.seed(configMap('imm', { a: '1' }, 'Force=true'));
  c.hold();
  await c.client.delete({ apiVersion: 'v1', kind: 'ConfigMap', name: 'imm', namespace: 'app' });
  c.calls.length = 0;
  const s = await step(c, configMap('imm', { a: '2' }, 'Force=true'), { at: T0 });
  assert.equal(s.t.deleting, true);
  assert.equal(s.recreating.length, 1);
  assert.deepEqual(c.calls, ['apply imm']);
});

test('a dry run never deletes: Force=true reports the refusal, Replace=true with Force=true a dry-run create', async () => {
  const c = cluster();
  c.seed(configMap('imm', { a: '1' }, 'Force=true'));
  c.seed(configMap('r', { a: '1' }, 'Replace=true,Force=true'));
  const forced = await step(c, configMap('imm', { a: '2' }, 'Force=true'), { at: T0, dryRun: true });
  assert.equal(forced.t.result, 'SyncFailed');
  assert.match(forced.t.message, /field is immutable/);
  const replaced = await step(c, configMap('r', { a: '2' }, 'Replace=true,Force=true'), { at: T0, dryRun: true });
  assert.equal(replaced.t.deleting, undefined);
  assert.deepEqual(replaced.recreating, []);
  assert.equal(c.calls.filter((x) => x.startsWith('delete')).length, 0);
  assert.deepEqual(c.calls, ['apply (dry run) imm', 'create (dry run) r']);
});
