// The live-object cache's bookkeeping (src/kube/live-cache.ts) over a scripted transport: when a
// read is answered from the watch, when it must go to the server (not listed yet, our own write
// not yet seen, cluster-scoped, no list/watch verb, refused), and which events are reported as
// changes. The real-server behaviour is in test/e2e/live-objects.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LiveObjectCache } from '../../src/kube/live-cache.ts';
import type { ResourceInfo } from '../../src/kube/types.ts';
import { CONFIGMAPS } from './configmaps.ts';
import type { WatchTransport } from '../../src/kube/watch.ts';

const CM = CONFIGMAPS;
const COLL = '/api/v1/namespaces/a/configmaps';
const cm = (name: string, rv: string, data = 'x') => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'a', resourceVersion: rv },
  data: { v: data },
});

/** A transport whose list answers `items` (or `listStatus`) and whose watch streams what `push` sends. */
function scripted(items: unknown[], listStatus = 200) {
  const queue: string[] = [];
  let wake: (() => void) | undefined;
  const transport: WatchTransport = {
    get: async () => ({
      status: listStatus,
      body: listStatus === 200 ? { metadata: { resourceVersion: '10' }, items } : { message: 'forbidden' },
      text: '',
    }),
    stream: async (_p, signal) => ({
      status: 200,
      discard: () => undefined,
      chunks: (async function* () {
        while (!signal.aborted) {
          const line = queue.shift();
          if (line !== undefined) yield line;
          else
            await new Promise<void>((r) => {
              wake = r;
              signal.addEventListener('abort', () => r(), { once: true });
            });
        }
      })(),
    }),
  };
  const push = (type: string, object: unknown) => {
    queue.push(`${JSON.stringify({ type, object })}\n`);
    wake?.();
  };
  return { transport, push };
}

async function settle(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(cond(), 'condition not reached');
}

test('the first read misses and starts the watch; later reads come from it, absent objects as null', async () => {
  const { transport } = scripted([cm('one', '5')]);
  const cache = new LiveObjectCache(transport);
  try {
    assert.deepEqual(cache.lookup(CM, COLL, 'one'), { hit: false });
    await settle(() => cache.lookup(CM, COLL, 'one').hit);
    const got = cache.lookup(CM, COLL, 'one');
    assert.ok(got.hit);
    assert.equal(got.object?.metadata.resourceVersion, '5');
    assert.deepEqual(cache.lookup(CM, COLL, 'two'), { hit: true, object: null });
    assert.equal(cache.resourceVersion(CM, COLL, 'two'), '');
    assert.equal(cache.watchCount, 1);
  } finally {
    await cache.close();
  }
});

test('after our own write, reads go to the server until the watch shows that version; its echo is not a change', async () => {
  const { transport, push } = scripted([cm('one', '5')]);
  const changes: string[] = [];
  const cache = new LiveObjectCache(transport, {
    onChange: (o) => changes.push(`${o.metadata.name}@${String(o.metadata.resourceVersion)}`),
  });
  try {
    cache.lookup(CM, COLL, 'one');
    await settle(() => cache.lookup(CM, COLL, 'one').hit);
    cache.noteWrite(COLL, 'one', cm('one', '7') as never);
    assert.deepEqual(cache.lookup(CM, COLL, 'one'), { hit: false }, 'our write is not in the watch yet');
    push('MODIFIED', cm('one', '7'));
    await settle(() => cache.lookup(CM, COLL, 'one').hit);
    push('MODIFIED', cm('one', '8', 'edited'));
    await settle(() => changes.length === 1);
    assert.deepEqual(changes, ['one@8'], 'only the edit by someone else is reported');
    cache.noteWrite(COLL, 'one', null);
    push('DELETED', cm('one', '9'));
    await settle(() => cache.lookup(CM, COLL, 'one').hit);
    assert.deepEqual(cache.lookup(CM, COLL, 'one'), { hit: true, object: null });
    assert.deepEqual(changes, ['one@8'], 'our delete is not reported either');
  } finally {
    await cache.close();
  }
});

test('cluster-scoped kinds, kinds without list/watch and refused lists are always read from the server', async () => {
  const ns: ResourceInfo = { ...CM, kind: 'Namespace', resource: 'namespaces', namespaced: false };
  const noWatch: ResourceInfo = { ...CM, verbs: ['get', 'patch'] };
  const ok = scripted([]);
  const cache = new LiveObjectCache(ok.transport);
  const refused = scripted([], 403);
  const errors: string[] = [];
  const refusing = new LiveObjectCache(refused.transport, { onError: (_c, e) => errors.push(e.message) });
  try {
    assert.deepEqual(cache.lookup(ns, '/api/v1/namespaces', 'a'), { hit: false });
    assert.deepEqual(cache.lookup(noWatch, COLL, 'one'), { hit: false });
    assert.equal(cache.watchCount, 0, 'no watch started for either');
    refusing.lookup(CM, COLL, 'one');
    await settle(() => errors.length > 0);
    assert.match(errors[0] ?? '', /403 forbidden/);
    assert.deepEqual(refusing.lookup(CM, COLL, 'one'), { hit: false });
    assert.equal(refusing.watchCount, 0, 'the refused watch is not retried at once');
  } finally {
    await cache.close();
    await refusing.close();
  }
});

test('a read waits for the first list, and for the echo of our write, instead of going to the server', async () => {
  const { transport, push } = scripted([cm('one', '5')]);
  const cache = new LiveObjectCache(transport);
  try {
    // The first read starts the watch and is answered by its list (here at once), not a miss.
    const first = await cache.lookupSoon(CM, COLL, 'one', 2000);
    assert.ok(first.hit, 'answered from the first list');
    assert.equal(first.object?.metadata.resourceVersion, '5');
    assert.deepEqual(await cache.lookupSoon(CM, COLL, 'two', 2000), { hit: true, object: null });
    // Our write: the read waits for its echo and returns the version it made.
    cache.noteWrite(COLL, 'one', cm('one', '7') as never);
    const echoed = cache.lookupSoon(CM, COLL, 'one', 2000);
    setTimeout(() => push('MODIFIED', cm('one', '7')), 30);
    const after = await echoed;
    assert.ok(after.hit);
    assert.equal(after.object?.metadata.resourceVersion, '7');
    // An echo that never comes: a miss after the wait (the caller GETs).
    cache.noteWrite(COLL, 'one', cm('one', '9') as never);
    const t0 = Date.now();
    assert.deepEqual(await cache.lookupSoon(CM, COLL, 'one', 100), { hit: false });
    assert.ok(Date.now() - t0 >= 100);
  } finally {
    await cache.close();
  }
});

test("a watch already past our write (its echo and the next change came before the write's answer) is caught up", async () => {
  // A Deployment's controller updates it right after the apply; the watch can show both before
  // the apply's answer is read. Before, every read of it waited out the echo for a minute.
  const { transport, push } = scripted([cm('one', '5')]);
  const cache = new LiveObjectCache(transport);
  try {
    await cache.lookupSoon(CM, COLL, 'one', 2000);
    push('MODIFIED', cm('one', '7'));
    push('MODIFIED', cm('one', '8', 'status'));
    await settle(() => cache.lookup(CM, COLL, 'one').hit && cache.resourceVersion(CM, COLL, 'one') === '8');
    cache.noteWrite(COLL, 'one', cm('one', '7') as never);
    const t0 = Date.now();
    const got = await cache.lookupSoon(CM, COLL, 'one', 2000);
    assert.ok(got.hit, 'answered from the watch');
    assert.equal(got.object?.metadata.resourceVersion, '8');
    assert.ok(Date.now() - t0 < 500, `no wait for an echo already past (${Date.now() - t0} ms)`);
    // Noted while the watch was behind, then passed without the echo itself (a relist): caught up too.
    cache.noteWrite(COLL, 'one', cm('one', '10') as never);
    assert.deepEqual(cache.lookup(CM, COLL, 'one'), { hit: false });
    push('MODIFIED', cm('one', '11', 'later'));
    await settle(() => cache.lookup(CM, COLL, 'one').hit);
    assert.equal(cache.resourceVersion(CM, COLL, 'one'), '11');
  } finally {
    await cache.close();
  }
});

test('a refused watch is not waited for: the read goes to the server at once', async () => {
  const refused = scripted([], 403);
  const cache = new LiveObjectCache(refused.transport, { onError: () => undefined });
  try {
    cache.lookup(CM, COLL, 'one');
    await settle(() => cache.watchCount === 0);
    const t0 = Date.now();
    assert.deepEqual(await cache.lookupSoon(CM, COLL, 'one', 5000), { hit: false });
    assert.ok(Date.now() - t0 < 1000, 'not waited for');
  } finally {
    await cache.close();
  }
});
