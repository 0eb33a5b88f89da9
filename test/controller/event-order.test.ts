import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventOrder } from '../../src/controller/events.ts';

const tick = () => new Promise((r) => setImmediate(r));

test('an event waits for the holds on its Application taken before it, and for no other', async () => {
  const order = new EventOrder();
  const seen: string[] = [];
  const release = order.hold('ns/a');
  void order.after('ns/a').then(() => seen.push('a'));
  void order.after('ns/b').then(() => seen.push('b'));
  await tick();
  assert.deepEqual(seen, ['b'], 'another Application does not wait');
  release();
  await tick();
  assert.deepEqual(seen, ['b', 'a']);
  await tick();
  assert.equal(order.size, 0, 'a hold let go is forgotten');
});

test('two holds on one Application: an event waits for both', async () => {
  const order = new EventOrder();
  const first = order.hold('k');
  const second = order.hold('k');
  let done = false;
  void order.after('k').then(() => (done = true));
  second();
  await tick();
  assert.equal(done, false, 'the first hold still stands');
  first();
  await tick();
  assert.equal(done, true);
});

test('a hold never let go ends by itself: an event is not worth a stalled sync', async () => {
  const order = new EventOrder({ maxHoldMs: 20 });
  order.hold('k');
  const t0 = Date.now();
  await order.after('k');
  assert.ok(Date.now() - t0 >= 15, 'it waited for the hold');
  await tick();
  assert.equal(order.size, 0, 'and it is forgotten');
});
