// The API server's share between tenants (src/kube/tenant-share.ts): a tenant whose requests take
// long may have fewer of them in flight while another tenant is about; alone, any number; never
// none; its waiting requests start in order as its own end.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TenantShare } from '../../src/kube/tenant-share.ts';

/** A request the test ends by hand, and whether it has been sent. */
function manual(): { sent: boolean; end: () => void; send: () => Promise<string> } {
  let end: () => void = () => undefined;
  const r = {
    sent: false,
    end: () => end(),
    send: () =>
      new Promise<string>((resolve) => {
        r.sent = true;
        end = () => resolve('done');
      }),
  };
  return r;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A quiet tenant about; a noisy tenant's first request still in flight 2 s later, when its second is asked. */
async function secondBehindSlowFirst(share: TenantShare, advance: (ms: number) => void) {
  const q = manual();
  const qrun = share.run('quiet', q.send);
  const first = manual();
  const firstRun = share.run('noisy', first.send);
  advance(2000);
  const second = manual();
  const secondRun = share.run('noisy', second.send);
  await turn();
  return { q, qrun, first, firstRun, second, secondRun };
}

test('alone, a tenant has every request in flight however slow they are', async () => {
  let now = 0;
  const share = new TenantShare({ inFlightMs: 1000, now: () => now });
  const first = manual();
  const running = share.run('noisy', first.send);
  now += 5000;
  first.end();
  await running;
  const many = Array.from({ length: 10 }, () => manual());
  const all = many.map((r) => share.run('noisy', r.send));
  await turn();
  assert.equal(many.filter((r) => r.sent).length, 10);
  for (const r of many) r.end();
  await Promise.all(all);
});

test('with another tenant about, a tenant whose requests take 5 s has one in flight, the cheap tenant many', async () => {
  let now = 0;
  const waits: Array<[string, number]> = [];
  const share = new TenantShare({ inFlightMs: 1000, now: () => now, onWait: (t, ms) => waits.push([t, ms]) });
  // Each tenant's first request teaches the share its cost: 5 s for noisy, 10 ms for quiet.
  const n0 = manual();
  const q0 = manual();
  const n0run = share.run('noisy', n0.send);
  const q0run = share.run('quiet', q0.send);
  now += 10;
  q0.end();
  await q0run;
  now += 4990;
  n0.end();
  await n0run;
  assert.equal(share.allowed('noisy'), 1);
  assert.ok(share.allowed('quiet') >= 100, `10 ms requests: ${share.allowed('quiet')} in flight`);

  const noisy = Array.from({ length: 4 }, () => manual());
  const quiet = Array.from({ length: 20 }, () => manual());
  const noisyRuns = noisy.map((r) => share.run('noisy', r.send));
  const quietRuns = quiet.map((r) => share.run('quiet', r.send));
  await turn();
  assert.deepEqual(
    noisy.map((r) => r.sent),
    [true, false, false, false],
    'one of the costly tenant in flight',
  );
  assert.equal(quiet.filter((r) => r.sent).length, 20, 'every cheap request at once');
  assert.deepEqual([...share.waiting()], [['noisy', 3]]);

  // Its waiting requests start in order as its own end.
  for (let i = 0; i < 4; i++) {
    now += 5000;
    noisy[i]?.end();
    await turn();
    assert.deepEqual(
      noisy.map((r) => r.sent),
      [0, 1, 2, 3].map((j) => j <= i + 1),
    );
  }
  for (const r of quiet) r.end();
  await Promise.all([...noisyRuns, ...quietRuns]);
  assert.deepEqual(
    waits.map(([t, ms]) => [t, ms]),
    [
      ['noisy', 5000],
      ['noisy', 10000],
      ['noisy', 15000],
    ],
  );
});

test('a first request that runs long stops the rest before its time is known', async () => {
  let now = 0;
  const share = new TenantShare({ inFlightMs: 1000, now: () => now });
  const { q, qrun, first, firstRun, second, secondRun } = await secondBehindSlowFirst(share, (ms) => (now += ms));
  assert.equal(second.sent, false, 'the oldest request in flight is 2 s old: one at a time');
  first.end();
  await turn();
  assert.equal(second.sent, true);
  second.end();
  q.end();
  await Promise.all([qrun, firstRun, secondRun]);
});

test('the estimate falls back with time, not with cheap requests, and a tenant long gone is alone again', async () => {
  let now = 0;
  const share = new TenantShare({ inFlightMs: 1000, aboutMs: 600_000, now: () => now });
  const q = manual();
  const qrun = share.run('quiet', q.send);
  const slow = manual();
  const slowRun = share.run('noisy', slow.send);
  now += 4000;
  slow.end();
  await slowRun;
  assert.equal(share.allowed('noisy'), 1);
  // A hostile tenant sends cheap requests on purpose to wash the slow one out: they do not.
  for (let i = 0; i < 200; i++) {
    const r = manual();
    const run = share.run('noisy', r.send);
    now += 1;
    r.end();
    await run;
  }
  assert.equal(share.allowed('noisy'), 1, 'cheap requests in a burst leave the estimate where it was');
  // 4 s halved every 30 s: after 2 min, 250 ms (4 in flight); after 5 min about 4 ms (all of them).
  now += 120_000 - 200;
  assert.equal(share.allowed('noisy'), 4);
  now += 180_000;
  assert.ok(share.allowed('noisy') > 100, `after 5 min: ${share.allowed('noisy')}`);
  q.end();
  await qrun;
  now += 601_000;
  assert.equal(share.allowed('noisy'), Infinity, 'the quiet tenant is no longer about');
});

test('a waiting request starts even when telling the metric throws', async () => {
  let now = 0;
  const share = new TenantShare({
    inFlightMs: 1000,
    now: () => now,
    onWait: () => {
      throw new Error('metric broken');
    },
  });
  const { q, qrun, first, firstRun, second, secondRun } = await secondBehindSlowFirst(share, (ms) => (now += ms));
  first.end();
  assert.equal(await firstRun, 'done', "the ended request's answer is its own");
  await turn();
  assert.equal(second.sent, true);
  second.end();
  q.end();
  await Promise.all([qrun, secondRun]);
});

test('a failed request ends its share as an answered one does, and 0 turns the share off', async () => {
  let now = 0;
  const share = new TenantShare({ inFlightMs: 1000, now: () => now });
  const q = manual();
  const qrun = share.run('quiet', q.send);
  const failing = share.run('noisy', async () => {
    now += 3000;
    throw new Error('refused');
  });
  await assert.rejects(failing, /refused/);
  const next = manual();
  const nextRun = share.run('noisy', next.send);
  await turn();
  assert.equal(next.sent, true, 'nothing left in flight: the next one goes');
  next.end();
  q.end();
  await Promise.all([qrun, nextRun]);

  const off = new TenantShare({ inFlightMs: 0, now: () => now });
  const offRuns = Array.from({ length: 5 }, () => manual());
  const pending = offRuns.map((r) => off.run('noisy', r.send));
  await turn();
  assert.equal(offRuns.filter((r) => r.sent).length, 5);
  for (const r of offRuns) r.end();
  await Promise.all(pending);
});
