// The memory budget's admission (src/renderer/budget.ts): never over the budget, a small job not
// starved behind a big one, a big one not starved by small ones, a job bigger than the whole
// budget refused at once by name and size.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import type { Logger } from 'pino';
import { controllerBudget, memoryBudget, memoryLimit } from '../../src/controller/memory.ts';
import { BudgetExceededError, ByteBudget, holdInJob, withBudgetJob } from '../../src/renderer/budget.ts';

const flush = () => new Promise((r) => setImmediate(r));

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('a small job behind a big one that does not fit goes ahead; the big one is admitted once room is made', async () => {
  const b = new ByteBudget(100);
  const running = await b.acquire('running', 60);
  let bigIn = false;
  const big = b.acquire('Application team-a/big', 80).then((r) => ((bigIn = true), r));
  const small = await b.acquire('Application team-b/small', 10);
  assert.equal(b.used, 70, 'the small job passed the waiting big one');
  assert.deepEqual(
    b.waiting().map((w) => [w.job, w.bytes]),
    [['Application team-a/big', 80]],
  );
  small();
  running();
  const releaseBig = await big;
  assert.ok(bigIn);
  assert.equal(b.used, 80);
  releaseBig();
  releaseBig(); // twice gives back nothing more
  assert.equal(b.used, 0);
});

test('small jobs pass a waiting big one only until a budget of them has: then it goes first', async () => {
  const b = new ByteBudget(100, { passBytes: 100 });
  const first = await b.acquire('first', 50);
  const order: string[] = [];
  const big = b.acquire('big', 90).then((r) => (order.push('big'), r));
  // Small jobs keep coming, each ending once the next has arrived: there is always room for one
  // more, never 90 free, so without the bound the big job would wait forever.
  let previous: (() => void) | undefined;
  let blocked: Promise<() => void> | undefined;
  let passed = 0;
  for (let i = 0; i < 30 && !blocked; i++) {
    const small = b.acquire(`small-${i}`, 10).then((r) => (order.push(`small-${i}`), r));
    await flush();
    if (b.waiting().some((w) => w.job === `small-${i}`)) blocked = small;
    else {
      passed++;
      previous?.();
      previous = await small;
    }
  }
  assert.equal(passed, 10, 'ten small jobs of 10 bytes passed it: a budget of 100');
  assert.ok(blocked, 'the next small job waits behind the big one');
  previous?.();
  first();
  (await big)();
  (await blocked)();
  assert.deepEqual(order.slice(-2), ['big', 'small-10'], 'the big job went in first');
  assert.equal(b.used, 0);
});

test('a job bigger than the whole budget is refused at once, naming it and its size', async () => {
  const b = new ByteBudget(64 * 1024 ** 2);
  await assert.rejects(b.acquire('Application team-a/huge', 100 * 1024 ** 2), (err: unknown) => {
    assert.ok(err instanceof BudgetExceededError);
    assert.match(
      err.message,
      /Application team-a\/huge needs 100\.0 MiB of memory, more than the whole memory budget of 64\.0 MiB/,
    );
    return true;
  });
  assert.equal(b.stats().waiting, 0, 'nothing left waiting');
});

test('an abort while waiting admits nothing and lets the others in', async () => {
  const b = new ByteBudget(10);
  const hold = await b.acquire('a', 10);
  const ac = new AbortController();
  const aborted = b.acquire('b', 10, ac.signal);
  const c = b.acquire('c', 5);
  ac.abort(new Error('stopping'));
  await assert.rejects(aborted, /stopping/);
  hold();
  (await c)();
  assert.equal(b.used, 0);
});

test('property: random jobs are never admitted over the budget, all finish, none passed beyond the bound', async () => {
  for (let seed = 1; seed <= 20; seed++) {
    const rnd = random(seed);
    const capacity = 1000;
    const maxJob = 1000;
    let clock = 0;
    const b = new ByteBudget(capacity, { now: () => clock });
    let maxUsed = 0;
    const done: string[] = [];
    const refused: string[] = [];
    // Bytes admitted after each job arrived and before it was admitted, by jobs that arrived later.
    const arrivals: Array<{ job: string; bytes: number; at: number; admittedAt?: number | undefined }> = [];
    const admissions: Array<{ job: string; bytes: number; order: number }> = [];
    const running: Array<{ until: number; release: () => void }> = [];
    let order = 0;
    for (let tick = 0; tick < 400; tick++) {
      clock = tick;
      for (const r of running.filter((r) => r.until <= tick)) r.release();
      running.splice(0, running.length, ...running.filter((r) => r.until > tick));
      const n = rnd() < 0.5 ? 1 : 0;
      for (let k = 0; k < n; k++) {
        const big = rnd() < 0.15;
        const bytes = big ? Math.floor(400 + rnd() * 700) : Math.floor(1 + rnd() * 100);
        const job = `job-${seed}-${tick}-${k}`;
        const entry: { job: string; bytes: number; at: number; admittedAt?: number } = { job, bytes, at: order++ };
        arrivals.push(entry);
        b.acquire(job, bytes).then(
          (release) => {
            entry.admittedAt = admissions.length;
            admissions.push({ job, bytes, order: entry.at });
            maxUsed = Math.max(maxUsed, b.used);
            running.push({
              until: tick + 1 + Math.floor(rnd() * 8),
              release: () => {
                done.push(job);
                release();
              },
            });
          },
          (err: Error) => {
            assert.ok(err instanceof BudgetExceededError, err.message);
            assert.ok(bytes > capacity);
            refused.push(job);
          },
        );
      }
      await flush();
      assert.ok(b.used <= capacity, `seed ${seed} tick ${tick}: ${b.used} > ${capacity}`);
    }
    // Drain: no new work, everything admitted finishes.
    for (let tick = 400; tick < 2000 && (running.length > 0 || b.stats().waiting > 0); tick++) {
      clock = tick;
      for (const r of running.filter((r) => r.until <= tick)) r.release();
      running.splice(0, running.length, ...running.filter((r) => r.until > tick));
      await flush();
    }
    assert.equal(b.stats().waiting, 0, `seed ${seed}: jobs left waiting`);
    assert.equal(done.length + refused.length, arrivals.length, `seed ${seed}: every job finished or was refused`);
    assert.ok(maxUsed <= capacity);
    for (const a of arrivals.filter((x) => x.admittedAt !== undefined)) {
      const passedBy = admissions
        .slice(0, a.admittedAt)
        .filter((x) => x.order > a.at)
        .reduce((s, x) => s + x.bytes, 0);
      assert.ok(passedBy <= capacity + maxJob, `seed ${seed}: ${a.job} passed by ${passedBy} bytes`);
    }
  }
});

test('jobs hold what they are about to read, grow without waiting for each other forever, and give it all back', async () => {
  const b = new ByteBudget(100);
  let maxUsed = 0;
  const gate = Promise.withResolvers<void>();
  const job = (name: string, sizes: number[]) =>
    withBudgetJob(b, name, async () => {
      for (const s of sizes) {
        await holdInJob(s);
        maxUsed = Math.max(maxUsed, b.used);
        await gate.promise;
      }
      return name;
    });
  // Each grows to 60 in two steps: both cannot hold 60 at once, and neither holds while it waits.
  const both = Promise.all([job('Application a/one', [30, 30]), job('Application b/two', [30, 30])]);
  await flush();
  gate.resolve();
  assert.deepEqual(await both, ['Application a/one', 'Application b/two']);
  assert.ok(maxUsed <= 100, `held ${maxUsed}`);
  assert.equal(b.used, 0, 'all given back when the jobs ended');
  // Growths of one job made at once (sources rendered together) are added up, none lost.
  await withBudgetJob(b, 'Application c/multi', async () => {
    await Promise.all([holdInJob(20), holdInJob(20), holdInJob(20)]);
    assert.equal(b.used, 60);
  });
  assert.equal(b.used, 0);
  // Outside a job nothing is held.
  await holdInJob(1e12);
  assert.equal(b.used, 0);
});

test('a job that would hold more than the whole budget fails with its name and size, and holds nothing after', async () => {
  const b = new ByteBudget(10 * 1024 ** 2);
  await assert.rejects(
    withBudgetJob(b, 'Application team-a/huge', async () => {
      await holdInJob(4 * 1024 ** 2);
      await holdInJob(8 * 1024 ** 2);
    }),
    /Application team-a\/huge needs 12\.0 MiB of memory, more than the whole memory budget of 10\.0 MiB/,
  );
  assert.equal(b.used, 0);
});

test('the memory limit comes from the flag, the variable, cgroup v2, or a quarter of the machine', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'budget-'));
  try {
    const file = join(dir, 'memory.max');
    writeFileSync(file, '536870912\n');
    assert.deepEqual(memoryLimit({ flag: '1Gi', env: '2Gi', cgroupFile: file }), {
      ok: true,
      bytes: 1024 ** 3,
      from: '--memory-limit',
    });
    assert.deepEqual(memoryLimit({ env: '1073741824', cgroupFile: file }), {
      ok: true,
      bytes: 1024 ** 3,
      from: 'IMPERSYNC_MEMORY_LIMIT',
    });
    assert.deepEqual(memoryLimit({ cgroupFile: file }), { ok: true, bytes: 512 * 1024 ** 2, from: file });
    writeFileSync(file, 'max\n');
    const unlimited = memoryLimit({ cgroupFile: file });
    assert.ok(unlimited.ok && unlimited.bytes === Math.floor(totalmem() / 4));
    assert.deepEqual(memoryLimit({ flag: 'lots' }), {
      ok: false,
      error: "--memory-limit: 'lots' is not a size (a number of bytes, or e.g. 512Mi, 1Gi)",
    });
    assert.equal(memoryBudget(1024 ** 3).capacity, 512 * 1024 ** 2, 'half the limit');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the controller's budget is half its memory limit, and never more than two thirds of V8's heap limit", () => {
  const MiB = 1024 ** 2;
  const lines: string[] = [];
  const log = { info: (_o: unknown, msg: string) => lines.push(msg), warn: () => {} } as unknown as Logger;
  // A heap as large as the limit: half the limit.
  assert.equal(controllerBudget({ memoryLimitBytes: 1024 * MiB, heapLimitBytes: 1024 * MiB }, log).capacity, 512 * MiB);
  assert.match(lines.at(-1) ?? '', /512\.0 MiB \(half of 1024\.0 MiB, from --memory-limit\)/);
  // What Node gives a 1 GiB container by default: a heap below half the limit bounds the budget.
  assert.equal(
    controllerBudget({ memoryLimitBytes: 1024 * MiB, heapLimitBytes: 464 * MiB }, log).capacity,
    Math.floor((464 * MiB * 2) / 3),
  );
  assert.match(lines.at(-1) ?? '', /two thirds of the V8 heap limit of 464\.0 MiB.*--max-old-space-size-percentage=75/);
  // This process: never more than its own heap can hold.
  assert.ok(
    controllerBudget({ memoryLimitBytes: 2 ** 50 }, log).capacity <= (getHeapStatistics().heap_size_limit * 2) / 3,
  );
});

test("while another tenant is about, one tenant's jobs hold at most three quarters of the budget, and its waiter holds up nobody", async () => {
  const now = 0;
  const budget = new ByteBudget(100, { now: () => now });
  const noisy: Array<() => void> = [];
  for (let i = 0; i < 3; i++) noisy.push(await budget.acquire(`noisy-${i}`, 25, undefined, 'noisy'));
  assert.equal(budget.heldBy('noisy'), 75);
  // Alone no more: the quiet tenant asks (and gets its bytes), and the noisy tenant's next job waits
  // for its own to end, though the budget has room.
  const quiet = await budget.acquire('quiet-0', 10, undefined, 'quiet');
  let fourth: (() => void) | undefined;
  void budget.acquire('noisy-3', 10, undefined, 'noisy').then((r) => (fourth = r));
  await new Promise((r) => setImmediate(r));
  const fourthNow = () => fourth;
  assert.equal(fourthNow(), undefined, 'at its share: waits');
  // A quiet job behind the waiting noisy one goes at once: it is not held up.
  const quiet2 = await budget.acquire('quiet-1', 10, undefined, 'quiet');
  assert.equal(budget.used, 95);
  noisy.pop()?.();
  await new Promise((r) => setImmediate(r));
  assert.ok(fourthNow(), 'one of its own ended: it goes');
  fourth?.();
  quiet();
  quiet2();
  for (const r of noisy) r();
  assert.equal(budget.used, 0);
  assert.equal(budget.heldBy('noisy'), 0);
});

test('a tenant alone, or holding nothing, takes what fits; the share is kept only while another tenant is about', async () => {
  let now = 0;
  const budget = new ByteBudget(100, { now: () => now, tenantAboutMs: 60_000 });
  // Holding nothing, a job larger than the share runs.
  const big = await budget.acquire('noisy-big', 90, undefined, 'noisy');
  big();
  const quiet = await budget.acquire('quiet-0', 5, undefined, 'quiet');
  quiet();
  const a = await budget.acquire('noisy-a', 70, undefined, 'noisy');
  let b: (() => void) | undefined;
  void budget.acquire('noisy-b', 20, undefined, 'noisy').then((r) => (b = r));
  await new Promise((r) => setImmediate(r));
  const bNow = () => b;
  assert.equal(bNow(), undefined, 'the quiet tenant asked a moment ago: 90 would pass the share');
  // Ten minutes later nobody else is about; the next end or ask lets it through.
  now += 61_000;
  const c = await budget.acquire('noisy-c', 1, undefined, 'noisy');
  await new Promise((r) => setImmediate(r));
  assert.ok(bNow(), 'alone again: what fits is taken');
  a();
  b?.();
  c();
  assert.equal(budget.used, 0);
});

test("a job's holds count for the tenant it runs for", async () => {
  const budget = new ByteBudget(100);
  await withBudgetJob(
    budget,
    'Application argocd/a',
    async () => {
      await holdInJob(30);
      await holdInJob(10);
      assert.equal(budget.heldBy('team-a'), 40);
    },
    'team-a',
  );
  assert.equal(budget.heldBy('team-a'), 0);
});

test("a tenant's own smaller jobs do not pass its job waiting at its share, and the wait is reported as the share's", async () => {
  const budget = new ByteBudget(100, { now: () => 0 });
  const quiet = await budget.acquire('quiet-0', 1, undefined, 'quiet');
  const held = await budget.acquire('noisy-0', 60, undefined, 'noisy');
  // 60 + 20 is over the share of 75: it waits.
  let big: (() => void) | undefined;
  void budget.acquire('noisy-big', 20, undefined, 'noisy').then((r) => (big = r));
  // Its own small job, though 65 would fit the share, waits behind it.
  let small: (() => void) | undefined;
  void budget.acquire('noisy-small', 5, undefined, 'noisy').then((r) => (small = r));
  await new Promise((r) => setImmediate(r));
  const now = () => ({ big, small });
  assert.deepEqual(now(), { big: undefined, small: undefined });
  assert.deepEqual(
    budget.waiting().map((w) => [w.job, w.tenantHeld]),
    [
      ['noisy-big', 60],
      ['noisy-small', 60],
    ],
  );
  held();
  await new Promise((r) => setImmediate(r));
  assert.ok(now().big && now().small, 'its own job ended: both go, in order');
  now().big?.();
  now().small?.();
  quiet();
  assert.equal(budget.used, 0);
});
