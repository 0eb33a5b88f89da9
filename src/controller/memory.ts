// The controller's memory budget: how many bytes its comparisons and syncs may hold at once,
// derived from the container's memory limit, and what one byte of a render's answer stands for.
//
// A refresh or an operation step is a job (renderer/budget.ts): before the renderer client reads
// an answer it holds (its declared length) × HELD_PER_ANSWER_BYTE (8) of the budget, and waits while
// that does not fit; the hold is given back when the job ends. So the rendered objects, and the
// live objects and dry-run answers compared with them, are admitted before they are read, whatever
// mix of tenants' content arrives. Not in the budget: what stays between jobs. The Application and
// project caches grow with what is managed; the live-object watches' stores hold every object of
// a kind in a watched namespace, which whoever writes there decides, so they have a bound of their
// own (STORE_SHARE_OF_BUDGET, kube/store-budget.ts); the remembered dry-run answers hold 128 MiB at
// most (kube/dry-run-memo.ts).
import { totalmem } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.ts';
import { ByteBudget, formatMiB } from '../renderer/budget.ts';
import { memoryLimit } from '../renderer/memory-limit.ts';

export { HELD_PER_ANSWER_BYTE } from '../renderer/budget.ts';

/**
 * The share of the jobs' budget the live-object watches' objects may hold together, by the
 * estimate of what they take in memory (kube/store-budget.ts heldBy, 1.0-5.0 times what V8's heap
 * holds for them): 64 MiB for a limit of 1 GiB.
 */
export const STORE_SHARE_OF_BUDGET = 1 / 8;

/** The share of the memory limit comparisons and syncs may hold; the rest is the process's own. */
export const BUDGET_SHARE_OF_LIMIT = 0.5;

export { memoryLimit, type MemoryLimit, type MemoryLimitSources } from '../renderer/memory-limit.ts';

/**
 * The share of V8's heap limit the budget may take at most: what jobs hold lives in the heap, and
 * the heap also holds what stays between jobs (the caches and the watches' stores: 121 MiB live at
 * 500 Applications of 5 objects, in a heap snapshot).
 */
export const BUDGET_SHARE_OF_HEAP = 2 / 3;

/**
 * The budget of the controller's jobs for a memory limit of `limitBytes`, and no more than the
 * heap can hold (`heapLimitBytes`, V8's heap_size_limit). In a container Node sizes the heap from
 * the memory limit, and for a limit of 1 GiB to less than half of it; a budget of half the limit
 * alone would then admit jobs the heap cannot hold (a fatal "heap out of memory", not a wait).
 */
export function memoryBudget(limitBytes: number, heapLimitBytes: number = Number.POSITIVE_INFINITY): ByteBudget {
  const bytes = Math.min(limitBytes * BUDGET_SHARE_OF_LIMIT, heapLimitBytes * BUDGET_SHARE_OF_HEAP);
  return new ByteBudget(Math.max(1, Math.floor(bytes)));
}

/** The budget of this controller: from `memoryLimitBytes` when given, else as memoryLimit() finds it. */
export function controllerBudget(
  opts: {
    memoryLimitBytes?: number | undefined;
    env?: Readonly<Record<string, string | undefined>> | undefined;
    /** V8's heap limit (default: this process's heap_size_limit), for tests. */
    heapLimitBytes?: number | undefined;
  },
  log: Logger,
): ByteBudget {
  let bytes = opts.memoryLimitBytes;
  let from = '--memory-limit';
  if (bytes === undefined) {
    const found = memoryLimit({ env: (opts.env ?? process.env)['IMPERSYNC_MEMORY_LIMIT'] });
    if (!found.ok) {
      log.warn(`${found.error}; using a quarter of the machine memory`);
      bytes = Math.floor(totalmem() / 4);
      from = 'a quarter of the machine memory';
    } else {
      bytes = found.bytes;
      from = found.from;
    }
  }
  const heapLimit = opts.heapLimitBytes ?? getHeapStatistics().heap_size_limit;
  const budget = memoryBudget(bytes, heapLimit);
  const byHeap = heapLimit * BUDGET_SHARE_OF_HEAP < bytes * BUDGET_SHARE_OF_LIMIT;
  const why = byHeap
    ? `two thirds of the V8 heap limit of ${formatMiB(heapLimit)}, which is less than half of the memory limit of ${formatMiB(bytes)} (from ${from}); the install sets NODE_OPTIONS=--max-old-space-size-percentage=75`
    : `half of ${formatMiB(bytes)}, from ${from}`;
  log.info(
    { memoryLimitBytes: bytes, heapLimitBytes: heapLimit, budgetBytes: budget.capacity, from },
    `memory budget of refreshes and operation steps: ${formatMiB(budget.capacity)} (${why})`,
  );
  return budget;
}

/** Jobs waiting longer than this are named in the log. */
const WAIT_WARN_MS = 30_000;

/** Sets the budget's gauges; names in the log the jobs that have waited long. */
export function observeBudget(budget: ByteBudget, metrics: Metrics, log: Logger, now: number = Date.now()): void {
  const s = budget.stats();
  metrics.memoryBudget.set({ state: 'capacity' }, s.capacity);
  metrics.memoryBudget.set({ state: 'used' }, s.used);
  metrics.memoryBudget.set({ state: 'waiting' }, s.waitingBytes);
  metrics.memoryBudgetWaiting.set(s.waiting);
  metrics.memoryBudgetOldestWait.set(s.oldestWaitMs / 1000);
  const long = budget.waiting().filter((w) => now - w.since >= WAIT_WARN_MS);
  if (long.length > 0)
    log.warn(
      { waiting: long.map((w) => ({ job: w.job, bytes: w.bytes, waitedMs: now - w.since })) },
      `${long.length} job(s) waiting for memory budget for more than ${WAIT_WARN_MS / 1000} s (${formatMiB(s.used)} of ${formatMiB(s.capacity)} held)`,
    );
}
