// A memory budget in bytes, shared by the jobs of one process (the controller's comparisons and
// syncs): a job is admitted with the bytes it will hold, and waits while they do not fit, so the
// bytes admitted never exceed the budget whatever mix of jobs arrives.
//
// - In order, with small jobs passing: the job that has waited longest is admitted as soon as it
//   fits; while it does not, later jobs that fit go ahead of it, but only until they have been
//   admitted for `passBytes` in all past it (by default the whole budget). After that nobody passes
//   it: it is admitted as soon as what runs ends. So a small job behind a big one waits only for
//   room, and a big one waits at most for one budget's worth of others' work, never forever.
// - A job bigger than the whole budget could never be admitted: it is refused at once with an
//   error naming it and its size, never left waiting.
// - What waits is visible: `stats()` (for the metrics), `waiting()` (each job and since when) and
//   `holders()` (what holds the budget, for a message that says what a job waits behind).
import { AsyncLocalStorage } from 'node:async_hooks';

export class BudgetExceededError extends Error {
  readonly job: string;
  readonly bytes: number;
  readonly budget: number;

  constructor(job: string, bytes: number, budget: number) {
    super(
      `${job} needs ${formatMiB(bytes)} of memory, more than the whole memory budget of ${formatMiB(budget)} (raise the container's memory limit, or make the content smaller)`,
    );
    this.name = 'BudgetExceededError';
    this.job = job;
    this.bytes = bytes;
    this.budget = budget;
  }
}

export function formatMiB(bytes: number): string {
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

export interface BudgetStats {
  /** The budget. */
  capacity: number;
  /** Bytes admitted now. */
  used: number;
  /** Jobs waiting, and the bytes they wait for. */
  waiting: number;
  waitingBytes: number;
  /** How long the job waiting longest has waited (ms; 0 when none waits). */
  oldestWaitMs: number;
}

interface Waiter {
  job: string;
  bytes: number;
  /** The tenant the job counts for, when the budget is shared between tenants. */
  tenant: string | undefined;
  since: number;
  /** Bytes admitted past this waiter while it waited. */
  passed: number;
  grant: (release: () => void) => void;
  fail: (err: Error) => void;
}

export interface ByteBudgetOptions {
  /** Bytes that may be admitted past a waiting job before nobody passes it (default: the capacity). */
  passBytes?: number;
  /** Clock for `since` and `oldestWaitMs` (tests pass their own). */
  now?: () => number;
  /**
   * The most of the capacity one tenant's jobs may hold while another tenant is about (has held or
   * asked within `tenantAboutMs`), as a share (default 3/4: a quarter kept free for the others, as
   * the work queues keep a quarter of their workers). A tenant holding nothing may always take what
   * fits, so a job larger than the share still runs. Jobs without a tenant are not limited.
   */
  tenantShare?: number;
  /** How long a tenant counts as about after it last asked (default ten minutes). */
  tenantAboutMs?: number;
}

export class ByteBudget {
  readonly capacity: number;
  readonly #passBytes: number;
  readonly #now: () => number;
  readonly #queue: Waiter[] = [];
  /** The admissions not given back yet. */
  readonly #held = new Set<{ job: string; bytes: number }>();
  #used = 0;
  readonly #tenantShare: number;
  readonly #tenantAboutMs: number;
  /** Bytes held per tenant, and when each tenant last asked. */
  readonly #tenantHeld = new Map<string, number>();
  readonly #tenantSeen = new Map<string, number>();

  constructor(capacity: number, opts: ByteBudgetOptions = {}) {
    if (!(capacity > 0)) throw new Error(`a memory budget must be more than 0 bytes, not ${capacity}`);
    this.capacity = capacity;
    this.#passBytes = opts.passBytes ?? capacity;
    this.#now = opts.now ?? Date.now;
    this.#tenantShare = opts.tenantShare ?? 3 / 4;
    this.#tenantAboutMs = opts.tenantAboutMs ?? 10 * 60_000;
  }

  /** Bytes `tenant`'s jobs hold now. */
  heldBy(tenant: string): number {
    return this.#tenantHeld.get(tenant) ?? 0;
  }

  get used(): number {
    return this.#used;
  }

  stats(): BudgetStats {
    const now = this.#now();
    return {
      capacity: this.capacity,
      used: this.#used,
      waiting: this.#queue.length,
      waitingBytes: this.#queue.reduce((n, w) => n + w.bytes, 0),
      oldestWaitMs: this.#queue.length > 0 ? Math.max(0, now - Math.min(...this.#queue.map((w) => w.since))) : 0,
    };
  }

  /**
   * The jobs waiting, oldest first, with their bytes and since when (the clock's ms); `tenantHeld`,
   * the bytes its tenant holds, when the job waits for its tenant's share rather than for room.
   */
  waiting(): Array<{ job: string; bytes: number; since: number; tenantHeld?: number }> {
    const behind = new Set<string>();
    return this.#queue.map((w) => {
      const { job, bytes, since, tenant } = w;
      if (tenant === undefined || !this.#waitsForShare(w, behind)) return { job, bytes, since };
      return { job, bytes, since, tenantHeld: this.heldBy(tenant) };
    });
  }

  /** What holds the budget now: each admission not given back, largest first. */
  holders(): Array<{ job: string; bytes: number }> {
    return [...this.#held].map(({ job, bytes }) => ({ job, bytes })).sort((a, b) => b.bytes - a.bytes);
  }

  /** Admits `bytes` now if they fit and nobody waits; the call that gives them back, or undefined. */
  tryAcquire(job: string, bytes: number): (() => void) | undefined {
    const size = Math.max(0, Math.ceil(bytes));
    if (this.#queue.length > 0 || this.#used + size > this.capacity) return undefined;
    let release: (() => void) | undefined;
    this.#admit({
      job,
      bytes: size,
      tenant: undefined,
      since: this.#now(),
      passed: 0,
      grant: (r) => (release = r),
      fail: () => undefined,
    });
    return release;
  }

  /**
   * Waits until `bytes` fit, admits them and resolves with the call that gives them back (once;
   * later calls do nothing). Refused at once when `bytes` exceed the whole budget; an abort while
   * waiting rejects with the signal's reason and admits nothing. With `tenant`, the job counts for
   * that tenant's share (`tenantShare`): it waits while its tenant holds its share and another
   * tenant is about, and meanwhile holds up nobody else.
   */
  acquire(job: string, bytes: number, signal?: AbortSignal, tenant?: string): Promise<() => void> {
    const size = Math.max(0, Math.ceil(bytes));
    if (size > this.capacity) return Promise.reject(new BudgetExceededError(job, size, this.capacity));
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (tenant !== undefined) this.#tenantSeen.set(tenant, this.#now());
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        job,
        bytes: size,
        tenant,
        since: this.#now(),
        passed: 0,
        grant: resolve,
        fail: reject,
      };
      if (signal) {
        const onAbort = () => {
          const i = this.#queue.indexOf(waiter);
          if (i < 0) return;
          this.#queue.splice(i, 1);
          reject(signal.reason as Error);
          this.#pump();
        };
        signal.addEventListener('abort', onAbort, { once: true });
        waiter.grant = (release) => {
          signal.removeEventListener('abort', onAbort);
          resolve(release);
        };
      }
      this.#queue.push(waiter);
      this.#pump();
    });
  }

  #admit(w: Waiter): void {
    this.#used += w.bytes;
    const held = { job: w.job, bytes: w.bytes };
    this.#held.add(held);
    const tenant = w.tenant;
    if (tenant !== undefined) this.#tenantHeld.set(tenant, this.heldBy(tenant) + w.bytes);
    let released = false;
    w.grant(() => {
      if (released) return;
      released = true;
      this.#used -= w.bytes;
      this.#held.delete(held);
      if (tenant !== undefined) {
        const left = this.heldBy(tenant) - w.bytes;
        if (left > 0) this.#tenantHeld.set(tenant, left);
        else this.#tenantHeld.delete(tenant);
      }
      this.#pump();
    });
  }

  /** `w`'s tenant holds its share while another tenant is about: it waits, and holds up nobody. */
  #atShare(w: Waiter): boolean {
    const tenant = w.tenant;
    if (tenant === undefined) return false;
    const held = this.heldBy(tenant);
    if (held === 0 || held + w.bytes <= this.capacity * this.#tenantShare) return false;
    const since = this.#now() - this.#tenantAboutMs;
    for (const [t, at] of this.#tenantSeen) {
      if (t === tenant) continue;
      if (at >= since || this.heldBy(t) > 0) return true;
      this.#tenantSeen.delete(t);
    }
    return false;
  }

  /**
   * `w` waits for its tenant's share: its tenant holds the share, or an earlier waiter of its
   * tenant does (`behind`, the tenants met so far in queue order, which this adds to). Within a
   * tenant, first come first served, so that its own smaller jobs cannot keep a job from ever
   * fitting its share.
   */
  #waitsForShare(w: Waiter, behind: Set<string>): boolean {
    if (w.tenant === undefined || !(behind.has(w.tenant) || this.#atShare(w))) return false;
    behind.add(w.tenant);
    return true;
  }

  #pump(): void {
    const behind = new Set<string>();
    for (let i = 0; i < this.#queue.length;) {
      const w = this.#queue[i] as Waiter;
      if (this.#waitsForShare(w, behind)) {
        i++;
        continue;
      }
      const fits = this.#used + w.bytes <= this.capacity;
      // Nobody passes a waiter ahead that has been passed by its share already (one waiting for
      // its tenant's share is not held up by others and holds up nobody).
      const ahead = this.#queue.slice(0, i).filter((a) => a.tenant === undefined || !behind.has(a.tenant));
      const blocked = ahead.some((a) => a.passed >= this.#passBytes);
      if (fits && !blocked) {
        this.#queue.splice(i, 1);
        for (const a of ahead) a.passed += w.bytes;
        this.#admit(w);
        continue;
      }
      if (blocked) return;
      i++;
    }
  }
}

// A job's hold on a budget, carried through its async work (AsyncLocalStorage), so that code deep
// inside it (the renderer client reading an answer) can ask for the bytes it is about to hold
// without every caller passing a handle down.

/**
 * Bytes of memory one byte of a render's answer stands for while its job runs: the answer read (1),
 * its objects parsed (about 3), the live objects read for them and the dry-run answers, parsed
 * (about 2 each).
 */
export const HELD_PER_ANSWER_BYTE = 8;

interface BudgetJob {
  readonly name: string;
  readonly budget: ByteBudget;
  /** The tenant its holds count for (ByteBudget's tenantShare); undefined: none. */
  readonly tenant: string | undefined;
  held: number;
  release: () => void;
  /** Growths of one job are made one after another (sources rendered at once). */
  chain: Promise<void>;
}

const jobs = new AsyncLocalStorage<BudgetJob>();

/**
 * Runs `fn` as a job named `name` on `budget` (none: no admission), its holds counting for
 * `tenant`'s share when given; what it holds is given back when it ends.
 */
export async function withBudgetJob<T>(
  budget: ByteBudget | undefined,
  name: string,
  fn: () => Promise<T>,
  tenant?: string,
): Promise<T> {
  if (!budget) return fn();
  const job: BudgetJob = { name, budget, tenant, held: 0, release: () => undefined, chain: Promise.resolve() };
  try {
    return await jobs.run(job, fn);
  } finally {
    job.release();
  }
}

/**
 * The job running now is about to hold `bytes` more: waits until its whole hold fits the budget.
 * To grow, it gives back what it held and waits for the sum, so a job waiting holds nothing of the
 * budget and jobs growing at the same time can never wait for each other forever. More than the
 * whole budget is a BudgetExceededError naming the job and the size. Outside a job: nothing.
 */
export function holdInJob(bytes: number): Promise<void> {
  const job = jobs.getStore();
  if (!job) return Promise.resolve();
  const grown = job.chain.then(async () => {
    const total = job.held + Math.max(0, Math.ceil(bytes));
    if (total > job.budget.capacity) throw new BudgetExceededError(job.name, total, job.budget.capacity);
    job.release();
    job.held = 0;
    job.release = () => undefined;
    job.release = await job.budget.acquire(job.name, total, undefined, job.tenant);
    job.held = total;
  });
  job.chain = grown.catch(() => undefined);
  return grown;
}
