import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkQueue } from '../../src/controller/queue.ts';

test('a key added many times is queued once', async () => {
  const q = new WorkQueue();
  for (let i = 0; i < 100; i++) q.add('ns/a');
  q.add('ns/b');
  assert.equal(q.length, 2);
  assert.equal(await q.get(), 'ns/a');
  assert.equal(await q.get(), 'ns/b');
});

test('a key added while processing runs again after, never concurrently', async () => {
  const q = new WorkQueue();
  let running = 0;
  let maxRunning = 0;
  let runs = 0;
  let release!: () => void;
  const firstStarted = new Promise<void>((resolve) => { release = resolve; });
  let unblock!: () => void;
  const blocker = new Promise<void>((resolve) => { unblock = resolve; });
  q.run(4, async () => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    runs++;
    if (runs === 1) {
      release();
      await blocker;
    }
    running--;
  });
  q.add('k');
  await firstStarted;
  q.add('k');
  q.add('k');
  assert.equal(q.length, 0, 'not queued while processing');
  unblock();
  await q.shutdown();
  assert.equal(runs, 2);
  assert.equal(maxRunning, 1);
});

test('per-key backoff doubles from the base delay and is forgotten on success', () => {
  const q = new WorkQueue({ baseDelayMs: 5, maxDelayMs: 1000, ratePerSecond: 0 });
  const delays: number[] = [];
  for (let i = 0; i < 10; i++) {
    delays.push(q.backoffFor('k'));
    q.addRateLimited('k');
  }
  assert.deepEqual(delays, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
  assert.equal(q.numRequeues('k'), 10);
  q.forget('k');
  assert.equal(q.backoffFor('k'), 5);
  void q.shutdown();
});

test('the token bucket delays adds beyond the burst', () => {
  let now = 0;
  const q = new WorkQueue({ baseDelayMs: 0, ratePerSecond: 10, burst: 2, now: () => now });
  assert.equal(q.backoffFor('a'), 0);
  assert.equal(q.backoffFor('b'), 0);
  assert.equal(q.backoffFor('c'), 100);
  assert.equal(q.backoffFor('d'), 200);
  now = 1000;
  assert.equal(q.backoffFor('e'), 0);
  void q.shutdown();
});

test('addAfter queues the key after the delay; the earliest pending delay wins', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  const q = new WorkQueue({ now: () => Date.now() });
  q.addAfter('k', 1000);
  q.addAfter('k', 5000);
  q.addAfter('k', 500);
  t.mock.timers.tick(499);
  assert.equal(q.length, 0);
  t.mock.timers.tick(1);
  assert.equal(q.length, 1);
  t.mock.timers.tick(10_000);
  assert.equal(q.length, 1, 'the later delays were dropped');
});

test('a failing handler is retried with backoff, then succeeds', async () => {
  const q = new WorkQueue({ baseDelayMs: 1, ratePerSecond: 0 });
  let attempts = 0;
  const errors: string[] = [];
  const finished = new Promise<void>((resolve) => {
    q.run(1, async () => {
      attempts++;
      if (attempts < 3) throw new Error(`boom ${attempts}`);
      resolve();
    }, (_k, err) => errors.push((err as Error).message));
  });
  q.add('k');
  await finished;
  assert.equal(attempts, 3);
  assert.deepEqual(errors, ['boom 1', 'boom 2']);
  await q.shutdown();
  assert.equal(q.numRequeues('k'), 0);
});

test('shutdown drains what is queued and refuses new keys', async () => {
  const q = new WorkQueue();
  const seen: string[] = [];
  q.add('a');
  q.add('b');
  q.add('c');
  q.run(2, async (k) => { seen.push(k); });
  const done = q.shutdown();
  q.add('d');
  await done;
  assert.deepEqual(seen.sort(), ['a', 'b', 'c']);
});
