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
