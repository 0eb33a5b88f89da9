// The list+watch loop's list (src/kube/watch.ts) over a scripted transport: a continue token that
// expires mid-list (410) starts the list over rather than ending it empty, and `streaming` says
// whether a watch stream is delivering (the live-object cache reads only then).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Watch } from '../../src/kube/watch.ts';
import type { WatchTransport } from '../../src/kube/watch.ts';

const cm = (name: string) => ({ metadata: { name, namespace: 'a', resourceVersion: '5' } });

test('an expired continue token starts the list over; the cache holds every object, and reads are live only while streaming', async () => {
  const pages = [
    { status: 200, body: { metadata: { resourceVersion: '9', continue: 'tok1' }, items: [cm('one')] } },
    { status: 410, body: { message: 'continue token expired' } },
    { status: 200, body: { metadata: { resourceVersion: '12', continue: 'tok2' }, items: [cm('one')] } },
    { status: 200, body: { metadata: { resourceVersion: '12' }, items: [cm('two')] } },
  ];
  const asked: string[] = [];
  let release: (() => void) | undefined;
  const transport: WatchTransport = {
    get: (path) => {
      asked.push(path);
      const page = pages.shift() ?? { status: 500, body: {} };
      return Promise.resolve({ ...page, text: '' });
    },
    stream: async (_path, signal) => ({
      status: 200,
      discard: () => undefined,
      chunks: (async function* () {
        await new Promise<void>((r) => {
          release = r;
          signal.addEventListener('abort', () => r(), { once: true });
        });
        yield* [] as string[]; // the stream ends without an event
      })(),
    }),
  };
  const w = new Watch(transport, {
    path: '/api/v1/namespaces/a/configmaps',
    kind: 'ConfigMap',
    apiVersion: 'v1',
    backoffInitialMs: 10_000,
  });
  w.start();
  await w.synced;
  assert.deepEqual([...w.store.keys()].sort(), ['a/one', 'a/two']);
  assert.equal(asked.length, 4);
  assert.ok(!asked[2]?.includes('continue='), 'the list started over without a token');
  for (let i = 0; i < 100 && !w.streaming; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(w.streaming, true, 'the watch stream is open');
  release?.(); // the server ends the stream
  for (let i = 0; i < 100 && w.streaming; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(w.streaming, false, 'no stream: the cache may be behind');
  await w.stop();
});

/** A transport whose watches answer from `script` (one entry per watch request) and whose lists from `list`. */
function streamed(script: Array<{ status: number; lines: unknown[]; end?: boolean }>, list?: unknown) {
  const streams: string[] = [];
  const lists: string[] = [];
  const transport: WatchTransport = {
    get: (path) => {
      lists.push(path);
      return Promise.resolve({
        status: 200,
        body: list ?? { metadata: { resourceVersion: '1' }, items: [] },
        text: '',
      });
    },
    stream: async (path, signal) => {
      streams.push(path);
      const step = script.shift() ?? { status: 200, lines: [] };
      return {
        status: step.status,
        discard: () => undefined,
        chunks: (async function* () {
          for (const l of step.lines) yield `${JSON.stringify(l)}\n`;
          if (step.end) return;
          await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
        })(),
      };
    },
  };
  return { transport, streams, lists };
}

const endOfList = (rv: string) => ({
  type: 'BOOKMARK',
  object: { metadata: { resourceVersion: rv, annotations: { 'k8s.io/initial-events-end': 'true' } } },
});

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(cond(), 'condition not reached');
}

const opts = { path: '/api/v1/namespaces/a/configmaps', kind: 'ConfigMap', apiVersion: 'v1', backoffInitialMs: 10 };

test('a streamed list: one watch request lists (its initial events) and goes on watching; live only from the bookmark that ends the list', async () => {
  let gate: (() => void) | undefined;
  const held = new Promise<void>((r) => (gate = r));
  const streams: string[] = [];
  const transport: WatchTransport = {
    get: () => Promise.reject(new Error('no LIST expected')),
    stream: async (path, signal) => {
      streams.push(path);
      return {
        status: 200,
        discard: () => undefined,
        chunks: (async function* () {
          yield `${JSON.stringify({ type: 'ADDED', object: cm('one') })}\n`;
          yield `${JSON.stringify({ type: 'ADDED', object: cm('two') })}\n`;
          await held;
          yield `${JSON.stringify(endOfList('12'))}\n`;
          yield `${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'three', namespace: 'a', resourceVersion: '13' } } })}\n`;
          await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
        })(),
      };
    },
  };
  const support = { supported: undefined as boolean | undefined };
  const events: string[] = [];
  const w = new Watch(transport, { ...opts, streamingList: support });
  w.on((e) => events.push(`${e.type} ${e.object.metadata.name}`));
  w.start();
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(w.isSynced, false, 'not listed before the end of the initial events');
  assert.equal(w.streaming, false, 'not live before the end of the initial events');
  assert.equal(w.store.size, 0, 'the initial events are not the cache until they end');
  gate?.();
  await w.synced;
  await until(() => w.store.size === 3);
  assert.equal(w.streaming, true);
  assert.deepEqual(events, ['ADDED one', 'ADDED two', 'ADDED three']);
  assert.equal(streams.length, 1);
  const q = new URL(streams[0] ?? '', 'http://x').searchParams;
  assert.equal(q.get('sendInitialEvents'), 'true');
  assert.equal(q.get('resourceVersionMatch'), 'NotOlderThan');
  assert.equal(q.get('allowWatchBookmarks'), 'true');
  assert.equal(q.get('resourceVersion'), null, 'the most recent state: a consistent list');
  assert.notEqual(support.supported, false);
  await w.stop();
});

test('a server that refuses sendInitialEvents (422) is listed and watched the classic way, by every watch sharing the answer', async () => {
  const s = streamed(
    [
      { status: 422, lines: [] },
      { status: 200, lines: [{ type: 'ADDED', object: cm('two') }] },
    ],
    { metadata: { resourceVersion: '9' }, items: [cm('one')] },
  );
  const support = { supported: undefined as boolean | undefined };
  const w = new Watch(s.transport, { ...opts, streamingList: support });
  w.start();
  await w.synced;
  await until(() => w.store.size === 2);
  assert.equal(support.supported, false);
  assert.equal(s.lists.length, 1);
  assert.equal(new URL(s.streams[1] ?? '', 'http://x').searchParams.get('resourceVersion'), '9');
  await w.stop();
  const again = new Watch(s.transport, { ...opts, streamingList: support });
  again.start();
  await again.synced;
  assert.equal(s.streams.filter((p) => p.includes('sendInitialEvents')).length, 1, 'not asked again');
  await again.stop();
});

test('a server that ignores sendInitialEvents (a bookmark without the end mark) is listed the classic way', async () => {
  const s = streamed(
    [
      {
        status: 200,
        lines: [
          { type: 'ADDED', object: cm('one') },
          { type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } },
        ],
      },
      { status: 200, lines: [] },
    ],
    { metadata: { resourceVersion: '9' }, items: [cm('one'), cm('two')] },
  );
  const support = { supported: undefined as boolean | undefined };
  const w = new Watch(s.transport, { ...opts, streamingList: support });
  w.start();
  await w.synced;
  assert.deepEqual([...w.store.keys()].sort(), ['a/one', 'a/two']);
  assert.equal(support.supported, false);
  assert.equal(s.lists.length, 1);
  await w.stop();
});

test('a streamed list cut off before its end lists again (streamed); a 410 afterwards relists the same way and reports the differences', async () => {
  const s = streamed([
    { status: 200, lines: [{ type: 'ADDED', object: cm('one') }], end: true },
    {
      status: 200,
      lines: [
        { type: 'ADDED', object: cm('one') },
        endOfList('10'),
        { type: 'ERROR', object: { kind: 'Status', code: 410, message: 'too old resource version' } },
      ],
      end: true,
    },
    { status: 200, lines: [{ type: 'ADDED', object: cm('two') }, endOfList('20')] },
  ]);
  const events: string[] = [];
  const w = new Watch(s.transport, { ...opts, streamingList: { supported: undefined } });
  w.on((e) => events.push(`${e.type} ${e.object.metadata.name}`));
  w.start();
  await until(() => s.streams.length === 3 && w.streaming);
  assert.deepEqual([...w.store.keys()], ['a/two']);
  assert.deepEqual(events, ['ADDED one', 'ADDED two', 'DELETED one']);
  assert.equal(s.lists.length, 0, 'no LIST');
  assert.ok(
    s.streams.every((p) => p.includes('sendInitialEvents=true')),
    'every list streamed',
  );
  assert.equal(w.relists, 2);
  await w.stop();
});
