// The MemoryBudgetWarning message (src/controller/budget-waits.ts): it names the job, the budget,
// how long it waited, what it needs and what holds the budget, the largest holders first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobName, viewOf, waitMessage } from '../../src/controller/budget-waits.ts';
import { ByteBudget } from '../../src/renderer/budget.ts';

const MiB = 1024 * 1024;

test("a job waiting in the controller's budget is seen with its wait and the budget's holders, largest first", async () => {
  const budget = new ByteBudget(100 * MiB, { now: () => 1000 });
  const a = await budget.acquire(jobName('argocd/small'), 10 * MiB);
  const b = await budget.acquire(jobName('argocd/big'), 80 * MiB);
  const waiting = budget.acquire(jobName('team/waits'), 30 * MiB);
  const view = viewOf("the controller's memory budget", budget, 43_500);
  assert.deepEqual(view.waiting, [{ job: 'Application team/waits', bytes: 30 * MiB, waitedMs: 42_500 }]);
  const wait = view.waiting[0];
  assert.ok(wait);
  assert.equal(
    waitMessage(['refresh'], view, wait),
    "this Application's refresh has waited 43 s for the controller's memory budget of 100.0 MiB: it needs 30.0 MiB, and 90.0 MiB of it is held by Application argocd/big (80.0 MiB), Application argocd/small (10.0 MiB)",
  );
  assert.match(waitMessage(['operation'], view, wait), /^this Application's operation step has waited/);
  assert.match(
    waitMessage(['refresh', 'operation'], view, wait),
    /^this Application's refresh and operation step has waited/,
  );
  a();
  b();
  (await waiting)();
  assert.equal(budget.holders().length, 0);
});

test('more than five holders are counted, not listed', () => {
  const holders = Array.from({ length: 7 }, (_, i) => ({ job: `Application ns/a${i}`, bytes: MiB }));
  const message = waitMessage(
    ['refresh'],
    { name: "the renderer's memory budget", capacity: 8 * MiB, waiting: [], holders },
    { bytes: 2 * MiB, waitedMs: 31_000 },
  );
  assert.match(message, /held by Application ns\/a0 \(1\.0 MiB\), .*Application ns\/a4 \(1\.0 MiB\) and 2 more$/);
  assert.match(message, /7\.0 MiB of it is held/);
});

test("a job waiting for its project's share of the budget is told so, with what its project holds", async () => {
  const budget = new ByteBudget(100 * MiB, { now: () => 1000 });
  const other = await budget.acquire(jobName('other/app'), 1 * MiB, undefined, 'other');
  const held = await budget.acquire(jobName('team/first'), 70 * MiB, undefined, 'team');
  const waiting = budget.acquire(jobName('team/waits'), 10 * MiB, undefined, 'team');
  const view = viewOf("the controller's memory budget", budget, 31_000);
  const wait = view.waiting[0];
  assert.deepEqual(wait, { job: 'Application team/waits', bytes: 10 * MiB, waitedMs: 30_000, tenantHeld: 70 * MiB });
  assert.equal(
    waitMessage(['refresh'], view, wait),
    "this Application's refresh has waited 30 s for the controller's memory budget of 100.0 MiB: it needs 10.0 MiB, and 71.0 MiB of it is held by Application team/first (70.0 MiB), Application other/app (1.0 MiB); it waits for its project's share: while other projects have work, one project's Applications hold at most three quarters of it, and this one's hold 70.0 MiB",
  );
  held();
  (await waiting)();
  other();
});
