import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkQueue } from '../../src/controller/queue.ts';
import { WorkShare } from '../../src/controller/work-share.ts';

const settle = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

test("a tenant's key time: measured, risen at once, halved every 30 s, never below its oldest key's age", () => {
  let t = 100_000;
  const share = new WorkShare({ inFlightMs: 1000, now: () => t });
  assert.equal(share.allowed('x', undefined), Infinity, 'nothing measured yet: not limited');
  assert.equal(share.allowed('x', t - 2500), 1, 'a first key running for 2.5 s holds the rest back');
  share.ended('x', t - 100);
  assert.equal(share.allowed('x', undefined), 10, '100 ms keys: ten in 1,000 ms');
  share.ended('x', t - 3000);
  assert.equal(share.allowed('x', undefined), 1, 'a 3 s key: one at a time');
  share.ended('x', t - 10);
  assert.equal(share.allowed('x', undefined), 1, 'a cheap key does not wash the slow one out');
  t += 60_000;
  assert.equal(share.estimate('x', undefined), 750);
  t += 30_000;
  assert.equal(share.allowed('x', undefined), 2, 'after 90 s: 375 ms');
  share.close();
});

test('a tenant counts as having work for a second after its last key ended', () => {
  let t = 0;
  const share = new WorkShare({ inFlightMs: 1000, now: () => t });
  share.register({ busyTenants: () => ['queued'], wake: () => {} });
  share.ended('done', 0);
  assert.deepEqual([...share.busy()].sort(), ['done', 'queued']);
  t = 999;
  assert.ok(share.busy().has('done'));
  t = 1000;
  assert.deepEqual([...share.busy()], ['queued']);
  share.close();
});

test('a tenant with no key for ten minutes is forgotten with its key time; one still at work is not', () => {
  let t = 0;
  const share = new WorkShare({ inFlightMs: 1000, now: () => t });
  share.ended('gone', t - 3000);
  share.ended('busy', t - 3000);
  assert.equal(share.remembered, 2);
  t = 9 * 60_000;
  share.ended('busy', t - 100);
  t = 10 * 60_000 - 1;
  share.ended('busy', t - 100);
  assert.equal(share.remembered, 2, 'not yet ten minutes since its last key');
  t = 10 * 60_000;
  share.ended('busy', t - 100);
  assert.equal(share.remembered, 1, 'ten minutes: forgotten');
  assert.equal(share.estimate('gone', undefined), 0);
  assert.ok(share.estimate('busy', undefined) > 0, 'kept while it has keys');
  share.ended('gone', t - 50);
  assert.equal(share.estimate('gone', undefined), 50, 'measured afresh when it comes back');
  share.close();
});

/** Two queues in one share, as the manager has them, with handlers that run until released. */
function queues(inFlightMs: number) {
  const clock = { t: 0 };
  const share = new WorkShare({ inFlightMs, now: () => clock.t });
  const opts = {
    ratePerSecond: 0,
    now: () => clock.t,
    tenantOf: (k: string) => k.split('/')[0] as string,
    tenants: () => 2,
    share,
  };
  const refresh = new WorkQueue(opts);
  const operation = new WorkQueue(opts);
  const running = new Map<string, () => void>();
  const handler = (key: string) => new Promise<void>((resolve) => running.set(key, resolve));
  refresh.run(8, handler);
  operation.run(8, handler);
  const release = async (key: string) => {
    const done = running.get(key);
    assert.ok(done, `${key} is running`);
    running.delete(key);
    done();
    await settle();
  };
  const of = (tenant: string) => [...running.keys()].filter((k) => k.startsWith(`${tenant}/`)).length;
  const stop = async () => {
    const shut = Promise.all([refresh.shutdown(), operation.shutdown()]);
    for (const done of running.values()) done();
    await shut;
    share.close();
  };
  return { clock, refresh, operation, running, release, of, stop };
}

/** The heavy tenant's first key takes 3 s: that is what its keys cost from now on. */
async function heavyLearnt(q: ReturnType<typeof queues>): Promise<void> {
  q.refresh.add('heavy/first');
  await settle();
  q.clock.t += 3000;
  await q.release('heavy/first');
}

test(
  'while seven other tenants have work, a tenant whose keys take 3 s holds one worker; alone, what the queue lets it',
  { timeout: 10_000 },
  async () => {
    const q = queues(1000);
    await heavyLearnt(q);

    // Alone: six of the eight refresh workers (three quarters, the room kept while others are known).
    for (let i = 0; i < 8; i++) q.refresh.add(`heavy/alone-${i}`);
    await settle();
    assert.equal(q.of('heavy'), 6);
    for (let i = 0; i < 8; i++) if (q.running.has(`heavy/alone-${i}`)) await q.release(`heavy/alone-${i}`);
    for (let i = 0; i < 8; i++) if (q.running.has(`heavy/alone-${i}`)) await q.release(`heavy/alone-${i}`);
    assert.equal(q.of('heavy'), 0);

    // Seven light tenants have an operation running (the other queue): the heavy tenant's refreshes go one at a time.
    const light = Array.from({ length: 7 }, (_, i) => `light${i}/sync`);
    for (const key of light) q.operation.add(key);
    await settle();
    for (let i = 0; i < 8; i++) q.refresh.add(`heavy/shared-${i}`);
    await settle();
    assert.equal(q.of('heavy'), 1, "one worker: 1,000 ms fits one 3 s key's time at most");
    assert.equal(q.refresh.tenantStats().get('heavy')?.depth, 7, 'the rest wait in the queue');

    // A second after the light tenants' work ended, the heavy tenant takes what the queue lets it.
    for (const key of light) await q.release(key);
    assert.equal(q.of('heavy'), 1, 'the light tenants still count for a second');
    q.clock.t += 1000;
    const first = [...q.running.keys()].find((k) => k.startsWith('heavy/')) as string;
    await q.release(first);
    assert.equal(q.of('heavy'), 6);
    await q.stop();
  },
);

test('beside a tenant as costly, a costly tenant is not held back: keys slow for latency alone do not go one at a time', async () => {
  const q = queues(1000);
  await heavyLearnt(q);
  q.refresh.add('other/first');
  await settle();
  q.clock.t += 2000;
  await q.release('other/first');
  q.operation.add('other/sync');
  await settle();
  for (let i = 0; i < 8; i++) q.refresh.add(`heavy/shared-${i}`);
  await settle();
  assert.equal(q.of('heavy'), 6, 'keys of 3 s beside keys of 2 s: what the queue lets it');
  await q.stop();
});

test('with --tenant-work-share-ms 0, a costly tenant holds what the queue lets it beside others', async () => {
  const q = queues(0);
  await heavyLearnt(q);
  for (let i = 0; i < 7; i++) q.operation.add(`light${i}/sync`);
  await settle();
  for (let i = 0; i < 8; i++) q.refresh.add(`heavy/shared-${i}`);
  await settle();
  assert.equal(q.of('heavy'), 6);
  await q.stop();
});

test('a tenant held back by the share still has a key running, and a cheap tenant is not held back', async () => {
  const q = queues(1000);
  q.refresh.add('heavy/first');
  q.refresh.add('light/first');
  await settle();
  q.clock.t += 100;
  await q.release('light/first');
  q.clock.t += 2900;
  await q.release('heavy/first');
  q.operation.add('heavy/sync');
  await settle();
  // The heavy tenant has work; the light tenant's keys (100 ms each) may hold ten workers, the queue lets it six.
  for (let i = 0; i < 8; i++) q.refresh.add(`light/${i}`);
  await settle();
  assert.equal(q.of('light'), 6);
  // And the heavy tenant, with the light one busy, still runs one refresh beside its sync.
  q.refresh.add('heavy/refresh');
  await settle();
  assert.ok(q.running.has('heavy/refresh'));
  await q.stop();
});
