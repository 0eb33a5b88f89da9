import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Manager } from '../../src/controller/manager.ts';
import type { ReconcileResult } from '../../src/controller/reconcile.ts';
import { appChangeNeedsRefresh, hasOperationWork } from '../../src/controller/triggers.ts';
import type { ControllerCache } from '../../src/controller/cache.ts';
import type { WatchedObject, WatchEvent } from '../../src/kube/watch.ts';
import { createLogger } from '../../src/observability/logger.ts';
import type { Semantics } from '../../src/controller/semantics.ts';
import type { KubeObject } from '../../src/api/index.ts';
import type { JqRunner } from '../../src/sync/index.ts';
import { readSyncSettings } from '../../src/sync/settings.ts';

const base: WatchedObject = {
  metadata: { name: 'a', namespace: 'argocd', resourceVersion: '1', annotations: {} },
  spec: { project: 'p' },
  status: { sync: { status: 'Synced' } },
};

test('a status-only change (the controller’s own write) does not requeue; spec, annotations, deletion, a cleared operation do', () => {
  assert.equal(
    appChangeNeedsRefresh(base, {
      ...base,
      metadata: { ...base.metadata, resourceVersion: '2' },
      status: { sync: { status: 'OutOfSync' } },
    }),
    false,
  );
  assert.equal(appChangeNeedsRefresh(base, { ...base, spec: { project: 'q' } }), true);
  assert.equal(appChangeNeedsRefresh({ ...base, operation: { sync: {} } }, base), true);
  assert.equal(
    appChangeNeedsRefresh(base, {
      ...base,
      metadata: { ...base.metadata, annotations: { 'argocd.argoproj.io/refresh': 'hard' } },
    }),
    true,
  );
  assert.equal(
    appChangeNeedsRefresh(base, { ...base, metadata: { ...base.metadata, deletionTimestamp: 'now' } }),
    true,
  );
  assert.equal(appChangeNeedsRefresh(undefined, base), true);
});

test('the controller removing the refresh annotation after the refresh it asked for does not requeue; setting or changing it does', () => {
  const withRefresh = (value: string) => ({
    ...base,
    metadata: { ...base.metadata, annotations: { team: 'a', 'argocd.argoproj.io/refresh': value } },
  });
  const without = { ...base, metadata: { ...base.metadata, annotations: { team: 'a' } } };
  assert.equal(appChangeNeedsRefresh(withRefresh('normal'), without), false);
  assert.equal(appChangeNeedsRefresh(without, withRefresh('normal')), true);
  assert.equal(appChangeNeedsRefresh(withRefresh('normal'), withRefresh('hard')), true);
  assert.equal(
    appChangeNeedsRefresh(withRefresh('normal'), {
      ...base,
      metadata: { ...base.metadata, annotations: { team: 'b' } },
    }),
    true,
    'another annotation changed with it',
  );
});

test('a newly set or replaced operation alone does not requeue a refresh (the operation worker compares and refreshes after); with another change it does', () => {
  const op = { sync: { revision: 'abc' } };
  assert.equal(appChangeNeedsRefresh(base, { ...base, operation: op }), false);
  assert.equal(
    appChangeNeedsRefresh({ ...base, operation: op }, { ...base, operation: { sync: { revision: 'def' } } }),
    false,
  );
  // ... while the operation itself is still queued: it is operation work.
  assert.equal(hasOperationWork({ ...base, operation: op }), true);
  const refresh = { ...base.metadata, annotations: { 'argocd.argoproj.io/refresh': 'normal' } };
  assert.equal(appChangeNeedsRefresh(base, { ...base, operation: op, metadata: refresh }), true);
  assert.equal(appChangeNeedsRefresh(base, { ...base, operation: op, spec: { project: 'q' } }), true);
  assert.equal(
    appChangeNeedsRefresh(base, { ...base, operation: op, metadata: { ...base.metadata, deletionTimestamp: 'now' } }),
    true,
  );
  assert.equal(appChangeNeedsRefresh(undefined, { ...base, operation: op }), true);
});

/**
 * The Manager's wiring with its own parts stood in for: a cache that only delivers the events a
 * test emits (the real watches are exercised in test/e2e/controller-*.test.ts), workers that count.
 */
function harness(
  opts: {
    cacheStopped?: Promise<void>;
    owns?: (key: string) => boolean;
    listKeys?: boolean;
    semantics?: Semantics;
  } = {},
) {
  const apps = new Map<string, WatchedObject>();
  let emit: (e: WatchEvent) => void = () => {};
  const none = { on: () => {} };
  const cache = {
    apps: {
      on: (h: (e: WatchEvent) => void) => {
        emit = h;
      },
    },
    projects: none,
    configMaps: none,
    secrets: none,
    repoSecrets: none,
    knownHostsCM: none,
    tlsCertsCM: none,
    gpgKeysCM: none,
    start: () => {},
    synced: async () => {},
    stop: () => opts.cacheStopped ?? Promise.resolve(),
    watchesNamespace: () => true,
    namespace: 'argocd',
    app: (k: string) => apps.get(k),
    appKeys: () => (opts.listKeys ? [...apps.keys()] : []),
    allProjects: () => [],
    project: () => undefined,
    settingsConfigMap: () => undefined,
    watches: () => [],
  } as unknown as ControllerCache;
  const calls: string[] = [];
  const waiters: Array<{ what: string; n: number; resolve: () => void }> = [];
  const record = (what: string) => {
    calls.push(what);
    for (const w of waiters.filter((x) => calls.filter((c) => c === x.what).length >= x.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  let releaseOperation: () => void = () => {};
  const operationHeld = new Promise<void>((resolve) => {
    releaseOperation = resolve;
  });
  const manager = new Manager({
    cache,
    ...(opts.owns ? { owns: opts.owns } : {}),
    ...(opts.semantics ? { semantics: opts.semantics } : {}),
    logger: createLogger({ level: 'silent' }),
    workers: {
      refresh: async (): Promise<ReconcileResult> => {
        record('refresh');
        return {};
      },
      operate: async (): Promise<ReconcileResult> => {
        record('operate');
        await operationHeld;
        record('operated');
        return {};
      },
    },
  });
  return {
    manager,
    calls,
    releaseOperation,
    set: (o: WatchedObject) => apps.set(`${o.metadata.namespace}/${o.metadata.name}`, o),
    emit: (e: WatchEvent) => emit(e),
    /** Resolves once `what` has happened `n` times in all. */
    seen: (what: string, n: number) =>
      new Promise<void>((resolve) => {
        if (calls.filter((c) => c === what).length >= n) return resolve();
        waiters.push({ what, n, resolve });
      }),
  };
}

test('an operation-only change queues the operation and no refresh; the refresh follows the operation; a refresh annotation still refreshes', async () => {
  const h = harness();
  h.set(base);
  await h.manager.start();
  try {
    const withOp = {
      ...base,
      metadata: { ...base.metadata, resourceVersion: '2' },
      operation: { sync: { revision: 'abc' } },
    };
    h.set(withOp);
    h.emit({ type: 'MODIFIED', old: base, object: withOp });
    await h.seen('operate', 1);
    // The refresh queue is live: an annotation set while the operation runs is refreshed at once.
    const annotated = {
      ...withOp,
      metadata: { ...withOp.metadata, resourceVersion: '3', annotations: { 'argocd.argoproj.io/refresh': 'normal' } },
    };
    h.set(annotated);
    h.emit({ type: 'MODIFIED', old: withOp, object: annotated });
    await h.seen('refresh', 1);
    assert.deepEqual(h.calls, ['operate', 'refresh']);
    h.releaseOperation();
    await h.seen('refresh', 2);
    assert.deepEqual(h.calls, ['operate', 'refresh', 'operated', 'refresh']);
  } finally {
    h.releaseOperation();
    await h.manager.stop();
  }
});

test('once stop() begins nothing more runs: not the refresh an ending operation asks for, nor its own re-add, even while the watches take their time to stop', async () => {
  let cacheStopped!: () => void;
  const h = harness({
    cacheStopped: new Promise<void>((resolve) => {
      cacheStopped = resolve;
    }),
  });
  h.set(base);
  await h.manager.start();
  const withOp = {
    ...base,
    metadata: { ...base.metadata, resourceVersion: '2' },
    operation: { sync: { revision: 'abc' } },
  };
  h.set(withOp);
  h.emit({ type: 'MODIFIED', old: base, object: withOp });
  await h.seen('operate', 1);
  const stopped = h.manager.stop();
  // While the watches are still stopping: an event for the key, the operation returning (which
  // asks for a refresh), and time for any worker to pick up what that queued.
  const changed = {
    ...withOp,
    metadata: { ...withOp.metadata, resourceVersion: '3' },
    spec: { project: 'q' },
    operation: { sync: { revision: 'def' } },
  };
  h.set(changed);
  h.emit({ type: 'MODIFIED', old: withOp, object: changed });
  h.releaseOperation();
  await h.seen('operated', 1);
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  cacheStopped();
  await stopped;
  assert.deepEqual(h.calls, ['operate', 'operated']);
});

test('operation work: an operation, a Running state to resume, or a deletion', () => {
  assert.equal(hasOperationWork(base), false);
  assert.equal(hasOperationWork({ ...base, operation: { sync: {} } }), true);
  assert.equal(hasOperationWork({ ...base, status: { operationState: { phase: 'Running' } } }), true);
  assert.equal(hasOperationWork({ ...base, status: { operationState: { phase: 'Succeeded' } } }), false);
  assert.equal(hasOperationWork({ ...base, metadata: { ...base.metadata, deletionTimestamp: 'now' } }), true);
});

test('sharded: keys of shards not held are dropped as they come off the queues; adopt() queues a gained shard with its operations; drop() waits for its handlers', async () => {
  let owned = false;
  const h = harness({ owns: () => owned, listKeys: true });
  const withOp = { ...base, operation: { sync: { revision: 'abc' } } };
  h.set(withOp);
  await h.manager.start();
  try {
    // Not held: the start-up refresh and a new operation are dropped.
    h.emit({ type: 'MODIFIED', old: base, object: withOp });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(h.calls.length, 0, h.calls.join(' '));
    // Gained: refreshed, and its operation (another replica may have left it Running) resumed.
    owned = true;
    h.manager.adopt(() => true);
    await h.seen('operate', 1);
    await h.seen('refresh', 1);
    // Lost while the operation runs: drop() settles only once that handler has ended.
    owned = false;
    let dropped = false;
    const drop = h.manager
      .drop(() => true)
      .then(() => {
        dropped = true;
      });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(dropped, false, 'drop() waits for the operation in flight');
    h.releaseOperation();
    await drop;
    assert.ok(h.calls.includes('operated'));
    // Nothing after: the refresh the ended operation would ask for is dropped too.
    const before = h.calls.length;
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(h.calls.length, before, h.calls.join(' '));
  } finally {
    h.releaseOperation();
    await h.manager.stop();
  }
});

/**
 * argocd-cm with label tracking and an ignoreResourceUpdates rule run by a jq that counts its calls;
 * `cost(o)` says what one call does for an object: `busy` ms of this thread (a tenant's costly
 * object weighed), then `wait` ms of waiting (for a jq process, say).
 */
function weighing(cost: (o: KubeObject) => { busy: number; wait: number } = () => ({ busy: 0, wait: 0 })) {
  const settings = readSyncSettings({
    'application.resourceTrackingMethod': 'label',
    'resource.customizations.ignoreResourceUpdates.apps_Deployment': 'jqPathExpressions:\n- .spec.replicas\n',
  });
  let calls = 0;
  const jq = {
    delete: async (o: KubeObject) => {
      calls++;
      const { busy, wait } = cost(o);
      const end = performance.now() + busy;
      while (performance.now() < end) {
        // The thread held, as a costly object's weighing holds it.
      }
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const copy = structuredClone(o) as KubeObject & { spec: { replicas?: number } };
      delete copy.spec.replicas;
      return { ok: true, value: copy };
    },
  } as unknown as JqRunner;
  const semantics = { settings: () => settings, jq } as unknown as Semantics;
  return { semantics, calls: () => calls };
}

const tracked = (app: string, rv: string, replicas: number, image: string): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'team', resourceVersion: rv, labels: { 'app.kubernetes.io/instance': app } },
  spec: { replicas, template: { spec: { containers: [{ name: 'web', image }] } } },
});

/** Resolves once `cond` holds (polled). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
}

test('a live-object change for an Application whose refresh already waits is not weighed again: the refresh reads it', async () => {
  const w = weighing();
  const h = harness({ semantics: w.semantics });
  h.set(base);
  // Not started: what is queued stays queued.
  h.manager.managedObjectChanged(tracked('a', '2', 3, 'v1'), tracked('a', '1', 1, 'v1'));
  await until(() => w.calls() === 2);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(h.manager.refreshQueue.waiting('argocd/a'), false, 'only ignored fields changed: no refresh');
  h.manager.managedObjectChanged(tracked('a', '3', 3, 'v2'), tracked('a', '2', 3, 'v1'));
  await until(() => h.manager.refreshQueue.waiting('argocd/a'));
  assert.equal(w.calls(), 4);
  // While it waits, changes (a tenant rewriting its object in a loop) cost no weighing.
  for (let i = 0; i < 50; i++)
    h.manager.managedObjectChanged(tracked('a', `${4 + i}`, 3, `v${i}`), tracked('a', '3', 3, 'v2'));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(w.calls(), 4);
  assert.equal(h.manager.refreshQueue.waiting('argocd/a'), true);
  await h.manager.stop();
});

test("the time a live-object change takes to weigh is charged to its Application's tenant, not to another's", async () => {
  // team-a's object holds the thread 100 ms per call; team-b's waits 10 ms and costs nothing.
  const w = weighing((o) =>
    o.metadata.labels?.['app.kubernetes.io/instance'] === 'team-a_x' ? { busy: 100, wait: 0 } : { busy: 0, wait: 10 },
  );
  const h = harness({ semantics: w.semantics });
  const app = (namespace: string): WatchedObject => ({ ...base, metadata: { ...base.metadata, namespace, name: 'x' } });
  h.set(app('team-a'));
  h.set(app('team-b'));
  // Ignored changes (no refresh): team-b's first, whose wait ends only after team-a's weighing
  // let the thread go; its time on the clock includes team-a's, its time weighing does not.
  h.manager.managedObjectChanged(tracked('team-b_x', '2', 3, 'v1'), tracked('team-b_x', '1', 1, 'v1'));
  h.manager.managedObjectChanged(tracked('team-a_x', '2', 3, 'v1'), tracked('team-a_x', '1', 1, 'v1'));
  await until(() => w.calls() === 4);
  await new Promise((r) => setTimeout(r, 100));
  const a = h.manager.refreshQueue.charged('namespace:team-a');
  const b = h.manager.refreshQueue.charged('namespace:team-b');
  assert.ok(a >= 190, `team-a charged ${a} ms for two calls of 100 ms`);
  assert.ok(b < 50, `team-b charged ${b} ms, though its weighing took none of the thread`);
  await h.manager.stop();
});
