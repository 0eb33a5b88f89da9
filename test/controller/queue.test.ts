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
  const firstStarted = new Promise<void>((resolve) => {
    release = resolve;
  });
  let unblock!: () => void;
  const blocker = new Promise<void>((resolve) => {
    unblock = resolve;
  });
  let secondDone!: () => void;
  const second = new Promise<void>((resolve) => {
    secondDone = resolve;
  });
  q.run(4, async () => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    runs++;
    if (runs === 1) {
      release();
      await blocker;
    }
    running--;
    if (runs === 2) secondDone();
  });
  q.add('k');
  await firstStarted;
  q.add('k');
  q.add('k');
  assert.equal(q.length, 0, 'not queued while processing');
  unblock();
  await second;
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
    q.run(
      1,
      async () => {
        attempts++;
        if (attempts < 3) throw new Error(`boom ${attempts}`);
        resolve();
      },
      (_k, err) => errors.push((err as Error).message),
    );
  });
  q.add('k');
  await finished;
  assert.equal(attempts, 3);
  assert.deepEqual(errors, ['boom 1', 'boom 2']);
  await q.shutdown();
  assert.equal(q.numRequeues('k'), 0);
});

test('shutdown starts none of the keys still queued and refuses new ones', async () => {
  const q = new WorkQueue();
  const seen: string[] = [];
  let started!: () => void;
  const firstStarted = new Promise<void>((resolve) => {
    started = resolve;
  });
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  q.add('a');
  q.add('b');
  q.add('c');
  q.run(1, async (k) => {
    seen.push(k);
    started();
    await held;
  });
  await firstStarted;
  const done = q.shutdown();
  q.add('d');
  release();
  await done;
  assert.deepEqual(seen, ['a'], 'only the key already running when shutdown began');
  assert.equal(q.length, 0);
});

test('after shutdown begins neither a delayed key nor a key backing off after a failure runs, and shutdown resolves', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  const q = new WorkQueue({ baseDelayMs: 1000, ratePerSecond: 0, now: () => Date.now() });
  const runs: string[] = [];
  let failed!: () => void;
  const firstFailure = new Promise<void>((resolve) => {
    failed = resolve;
  });
  q.run(
    2,
    async (k) => {
      runs.push(k);
      if (k === 'flaky') throw new Error('boom');
    },
    () => failed(),
  );
  q.addAfter('later', 5000);
  q.add('flaky');
  await firstFailure;
  assert.equal(q.numRequeues('flaky'), 1, 'the failure was re-queued with backoff');
  const stopped = q.shutdown();
  t.mock.timers.tick(10_000_000);
  await stopped;
  assert.deepEqual(runs, ['flaky'], 'only the run that happened before shutdown');
  assert.equal(q.length, 0);
});

test('a key running when shutdown begins is not run again, whether it was re-added meanwhile or fails', async () => {
  const q = new WorkQueue({ baseDelayMs: 0, ratePerSecond: 0 });
  const runs: string[] = [];
  let started!: () => void;
  const bothStarted = new Promise<void>((resolve) => {
    let n = 0;
    started = () => {
      if (++n === 2) resolve();
    };
  });
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  q.run(2, async (k) => {
    runs.push(k);
    started();
    await held;
    if (k === 'fails') throw new Error('aborted by the shutdown');
  });
  q.add('requeued');
  q.add('fails');
  await bothStarted;
  q.add('requeued'); // owed a re-run after this one, as a handler finishing an operation does
  q.add('waiting');
  const stopped = q.shutdown();
  q.add('requeued'); // a re-add from the handler itself after shutdown began
  release();
  await stopped;
  assert.deepEqual(runs.sort(), ['fails', 'requeued']);
  assert.equal(q.length, 0);
});

test(
  "1,000 keys of one tenant queued first delay another tenant's key by one turn, not 1,000",
  { timeout: 10_000 },
  async () => {
    const q = new WorkQueue({ ratePerSecond: 0, tenantOf: (k) => k.split('/')[0] as string, tenants: () => 2 });
    const order: string[] = [];
    let done!: () => void;
    const quietDone = new Promise<void>((resolve) => (done = resolve));
    for (let i = 0; i < 1000; i++) q.add(`noisy/app-${i}`);
    q.add('quiet/app');
    q.run(2, async (key) => {
      order.push(key);
      await new Promise((r) => setImmediate(r));
      if (key === 'quiet/app') done();
    });
    await quietDone;
    await q.shutdown();
    assert.ok(order.indexOf('quiet/app') <= 2, `taken at position ${order.indexOf('quiet/app')}`);
  },
);

test(
  "a tenant whose keys never finish holds at most its share; another tenant's key starts at once",
  { timeout: 10_000 },
  async () => {
    const q = new WorkQueue({ ratePerSecond: 0, tenantOf: (k) => k.split('/')[0] as string, tenants: () => 2 });
    const started: string[] = [];
    let unblock!: () => void;
    const forever = new Promise<void>((resolve) => (unblock = resolve));
    let quietRan!: () => void;
    const quiet = new Promise<void>((resolve) => (quietRan = resolve));
    q.run(4, async (key) => {
      started.push(key);
      if (key.startsWith('noisy/')) await forever;
      else quietRan();
    });
    for (let i = 0; i < 10; i++) q.add(`noisy/slow-${i}`);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(started.length, 3, 'the noisy tenant holds three of the four workers, its share');
    assert.deepEqual([...q.tenantStats()], [['noisy', { depth: 7, processing: 3 }]]);
    q.add('quiet/app');
    await quiet;
    assert.equal(started.at(-1), 'quiet/app');
    unblock();
    await q.shutdown();
  },
);

test('the workers are shared by the time handlers take: 100× costlier keys get about 100× fewer turns', async () => {
  let t = 0;
  const q = new WorkQueue({
    ratePerSecond: 0,
    now: () => t,
    tenantOf: (k) => k.split('/')[0] as string,
    tenants: () => 2,
  });
  const turns = { heavy: 0, light: 0 };
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  q.run(1, async (key) => {
    const tenant = key.split('/')[0] as 'heavy' | 'light';
    turns[tenant]++;
    await Promise.resolve();
    t += tenant === 'heavy' ? 1000 : 10; // the handler's time, on the queue's clock
    if (t >= 1_000_000) stop();
    else q.add(key); // re-added while processing: runs again after, so both tenants always wait
  });
  q.add('heavy/app');
  q.add('light/app');
  await stopped;
  await q.shutdown();
  assert.ok(turns.heavy >= 490 && turns.heavy <= 510, `heavy: ${turns.heavy} turns`);
  assert.ok(turns.light >= 49_000 && turns.light <= 51_000, `light: ${turns.light} turns`);
  assert.ok(Math.abs(q.charged('heavy') - q.charged('light')) <= 1000);
});

test('alone, a tenant may use every worker', async () => {
  const q = new WorkQueue({ ratePerSecond: 0, tenantOf: () => 'only', tenants: () => 1 });
  let running = 0;
  let most = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  q.run(4, async () => {
    running++;
    most = Math.max(most, running);
    await gate;
    running--;
  });
  for (let i = 0; i < 8; i++) q.add(`only/${i}`);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(most, 4);
  release();
  await q.shutdown();
});
