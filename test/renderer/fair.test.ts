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
  const q = new FairQueue<string>();
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

test('past the queue limit a request is refused', async () => {
  const slots = new RenderSlots(1, 1);
  const first = await slots.acquire('a');
  const waiting = slots.acquire('a');
  assert.equal(await slots.acquire('b'), undefined);
  first?.();
  (await waiting)?.();
});
