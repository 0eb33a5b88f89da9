// Fair shares between tenants (src/renderer/fair.ts, slots.ts): turns in rotation, and a quarter of
// the workers kept free for others while more than one tenant is about.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FairQueue, tenantCap } from '../../src/renderer/fair.ts';
import { RenderSlots } from '../../src/renderer/slots.ts';

test('a tenant alone may use every worker; with others about it keeps a quarter (at least one) free', () => {
  assert.deepEqual(
    [1, 2, 4, 10, 20].map((w) => [tenantCap(w, 1), tenantCap(w, 2)]),
    [
      [1, 1],
      [2, 1],
      [4, 3],
      [10, 7],
      [20, 15],
    ],
  );
});

test('items are taken tenant by tenant, first in first out within one, a tenant at its share skipped', () => {
  // A clock that stands still: nothing is charged, so the order is the rotation alone.
  const q = new FairQueue<string>(() => 0);
  for (let i = 0; i < 5; i++) q.push('noisy', `n${i}`);
  q.push('quiet-a', 'a0');
  q.push('quiet-b', 'b0');
  q.push('quiet-a', 'a1');
  const order: string[] = [];
  for (let it = q.take(); it; it = q.take()) order.push(it.item);
  assert.deepEqual(order, ['n0', 'a0', 'b0', 'n1', 'a1', 'n2', 'n3', 'n4']);
  q.push('noisy', 'n5');
  q.push('quiet', 'q0');
  assert.equal(q.take((t) => t === 'noisy')?.item, 'q0');
  assert.equal(
    q.take((t) => t === 'noisy'),
    undefined,
    'only the capped tenant is left',
  );
  assert.deepEqual([...q.depths()], [['noisy', 1]]);
});

test("one tenant's slow renders never take the last render slot while another tenant is about", async () => {
  const slots = new RenderSlots(4, 100);
  const noisy: Array<() => void> = [];
  // Alone, the noisy tenant gets every slot.
  for (let i = 0; i < 4; i++) noisy.push((await slots.acquire('noisy')) as () => void);
  let quietGot = false;
  const quiet = slots.acquire('quiet').then((r) => {
    quietGot = true;
    return r;
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(quietGot, false, 'all four are busy');
  // More noisy work waits behind the quiet request: the next slot freed is the quiet one's.
  const noisyNext = slots.acquire('noisy');
  noisy.shift()?.();
  const releaseQuiet = (await quiet) as () => void;
  assert.deepEqual(slots.stats, { running: 4, queued: 1 });
  // Now both are about: the noisy tenant holds 3, and a freed slot stays for others.
  releaseQuiet();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(slots.stats, { running: 3, queued: 1 }, 'the noisy tenant is at its share of 3');
  const again = await slots.acquire('quiet');
  assert.ok(again, 'a quiet request starts at once');
  assert.deepEqual(slots.stats, { running: 4, queued: 1 });
  again?.();
  for (const r of noisy) r();
  assert.ok(await noisyNext);
});

/** One worker taking from `q` until the clock passes `until`; each item costs what `cost` says. */
function runOneWorker(q: FairQueue<string>, clock: { t: number }, cost: (tenant: string) => number, until: number) {
  const turns = new Map<string, number>();
  while (clock.t < until) {
    const it = q.take();
    if (!it) break;
    turns.set(it.tenant, (turns.get(it.tenant) ?? 0) + 1);
    clock.t += cost(it.tenant);
    q.push(it.tenant, it.item); // more work waiting, queued while this item still runs
    it.finish();
  }
  return turns;
}

test('a tenant whose items cost 100 times more gets about a hundredth of the turns', () => {
  const clock = { t: 0 };
  const q = new FairQueue<string>(() => clock.t);
  q.push('costly', 'c');
  q.push('cheap', 'k');
  const turns = runOneWorker(q, clock, (t) => (t === 'costly' ? 100 : 1), 100_000);
  const costly = turns.get('costly') ?? 0;
  const cheap = turns.get('cheap') ?? 0;
  // Each is charged about half the time: 50,000 ms is 500 turns of 100 ms, 50,000 turns of 1 ms.
  assert.ok(costly >= 495 && costly <= 505, `costly tenant: ${costly} turns`);
  assert.ok(cheap >= 49_500 && cheap <= 50_500, `cheap tenant: ${cheap} turns`);
  assert.ok(Math.abs(q.charged('costly') - q.charged('cheap')) <= 100, 'charged alike, within one costly item');
});

test('work still running is charged as it runs: a long item keeps its tenant behind the others', () => {
  const clock = { t: 0 };
  const q = new FairQueue<string>(() => clock.t);
  q.push('slow', 's0');
  q.push('slow', 's1');
  q.push('quick', 'q0');
  q.push('quick', 'q1');
  const s0 = q.take();
  assert.equal(s0?.item, 's0');
  clock.t += 50; // s0 still running
  const order = [q.take(), q.take(), q.take()].map((it) => it?.item);
  assert.deepEqual(order, ['q0', 'q1', 's1'], 'quick was charged 0 against slow 50 ms running');
  assert.equal(q.charged('slow'), 50);
});

test('no credit for being away: a tenant that comes back starts at the least busy charge, keeps its debt', () => {
  const clock = { t: 0 };
  const q = new FairQueue<string>(() => clock.t);
  q.push('steady', 'x');
  runOneWorker(q, clock, () => 10, 1000); // steady alone for 1 s
  q.push('returning', 'r');
  assert.equal(q.charged('returning'), q.charged('steady'), 'lifted to the busy tenant, no 1 s head start');
  const turns = runOneWorker(q, clock, () => 10, 2000);
  assert.ok(Math.abs((turns.get('returning') ?? 0) - (turns.get('steady') ?? 0)) <= 1, JSON.stringify([...turns]));
  // A tenant charged more that goes away and comes back keeps its debt.
  const d = new FairQueue<string>(() => clock.t);
  d.push('costly', 'c');
  d.push('other', 'o');
  const c = d.take();
  clock.t += 500;
  c?.finish(); // costly charged 500, now away
  d.push('costly', 'c2');
  assert.equal(d.charged('costly'), 500);
  assert.equal(d.take()?.tenant, 'other');
});

test('when nobody is busy every account starts over', () => {
  const clock = { t: 0 };
  const q = new FairQueue<string>(() => clock.t);
  q.push('a', 'a');
  const a = q.take();
  clock.t += 1000;
  a?.finish();
  q.push('b', 'b');
  assert.equal(q.charged('a'), 0);
  assert.equal(q.charged('b'), 0);
});

test('render slots charge each tenant the time it holds a slot', async () => {
  let t = 0;
  const slots = new RenderSlots(1, 100, () => t);
  const first = (await slots.acquire('big')) as () => void;
  const big = slots.acquire('big');
  const small = slots.acquire('small');
  t += 30_000;
  first();
  // The small tenant, charged nothing, is served before the big one's second render.
  const releaseSmall = (await small) as () => void;
  assert.equal(slots.charged('big'), 30_000);
  assert.deepEqual(slots.stats, { running: 1, queued: 1 });
  t += 10;
  releaseSmall();
  ((await big) as () => void)();
  assert.equal(slots.charged('small'), 10);
});

test('past the queue limit a request is refused', async () => {
  const slots = new RenderSlots(1, 1);
  const first = await slots.acquire('a');
  const waiting = slots.acquire('a');
  assert.equal(await slots.acquire('b'), undefined);
  first?.();
  (await waiting)?.();
});

test('work charged from outside the queue (charge) counts as a turn: a tenant charged 500 ms waits behind one charged nothing', () => {
  const clock = { t: 0 };
  const q = new FairQueue<string>(() => clock.t);
  q.push('noisy', 'n');
  q.push('quiet', 'q');
  // In rotation, noisy (first in) would go first; its 500 ms of watch events weighed put it behind.
  q.charge('noisy', 500);
  assert.equal(q.charged('noisy'), 500);
  assert.deepEqual([q.take()?.item, q.take()?.item], ['q', 'n']);
  // A charge of nothing (or less) changes nothing.
  q.charge('quiet', 0);
  q.charge('quiet', -5);
  assert.equal(q.charged('quiet'), 0);
});
