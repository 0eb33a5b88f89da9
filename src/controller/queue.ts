// A work queue in client-go's shape: one entry per key however many times it is added; a key being
// processed that is added again is processed once more afterwards, never concurrently; per-key
// exponential backoff on failure; an overall token bucket; delayed adds; N workers. Shutdown starts
// nothing more: the keys queued, delayed, backing off or re-added while running are dropped (the
// next controller lists everything again), and it resolves once the handlers in flight return.
//
// Beyond client-go, the workers are shared fairly between tenants (renderer/fair.ts): keys wait per
// tenant, each tenant is charged the time its keys' handlers take (a reconcile: its renders, parses,
// comparisons and syncs), the next key is the least-charged waiting tenant's, and while more than
// one tenant is known none holds more than three quarters of the workers. A tenant with 1,000 keys
// queued, or whose keys each take a render's time limit, delays another tenant's key by at most its
// turn, and a tenant whose keys cost 100 times more gets about a hundredth of the turns. With a
// share (work-share.ts), while a tenant whose keys cost at most half as much has work, a tenant
// holds only as many workers as its keys' time fits in the share's milliseconds, so that a costly
// tenant's keys cannot take the cores from the others when no key waits.
import { FairQueue, tenantCap } from '../renderer/fair.ts';
import type { Taken } from '../renderer/fair.ts';
import type { SharedQueue, WorkShare } from './work-share.ts';

export interface QueueOptions {
  /** Per-key backoff after the first failure (client-go: 5 ms). */
  baseDelayMs?: number;
  /** Per-key backoff ceiling (client-go: 1000 s). */
  maxDelayMs?: number;
  /** Token bucket: sustained rate (per second) and burst (client-go: 10/s, 100). 0 disables. */
  ratePerSecond?: number;
  burst?: number;
  /** Clock, for tests. */
  now?: () => number;
  /** The tenant a key belongs to (default: one tenant for all). */
  tenantOf?: (key: string) => string;
  /** How many tenants there are now, for the share each may hold (default 1: no share kept). */
  tenants?: () => number;
  /** The workers shared by what keys cost (work-share.ts), with the other queues it is given to. */
  share?: WorkShare;
}

export type Handler = (key: string) => Promise<void>;

/** The longest delay a Node timer honours. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface QueueStats {
  depth: number;
  processing: number;
}

/** Per tenant: keys waiting and keys being processed. */
export type TenantStats = Map<string, QueueStats>;

export class WorkQueue implements SharedQueue {
  private readonly queue: FairQueue<string>;
  private readonly queued = new Set<string>();
  /** Keys being processed, with the tenant each was taken for and the call that ends its charge. */
  private readonly processing = new Map<string, { tenant: string; finish: () => void; at: number }>();
  private readonly processingPerTenant = new Map<string, number>();
  private workerCount = 0;
  /** Keys added while being processed: re-queued when their processing ends. */
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly addedAt = new Map<string, number>();
  private readonly waiters: Array<() => void> = [];
  private readonly opts: Required<Omit<QueueOptions, 'share'>>;
  private readonly share: WorkShare | undefined;
  private tokens: number;
  private lastRefill: number;
  private shuttingDown = false;
  private workers: Promise<void>[] = [];
  /** Called with (key, ms waited in the queue, its tenant) when a key is taken (metrics). */
  onTake: ((key: string, waitedMs: number, tenant: string) => void) | undefined;

  constructor(opts: QueueOptions = {}) {
    this.opts = {
      baseDelayMs: 5,
      maxDelayMs: 1_000_000,
      ratePerSecond: 10,
      burst: 100,
      now: () => Date.now(),
      tenantOf: () => '',
      tenants: () => 1,
      ...opts,
    };
    this.share = opts.share;
    this.share?.register(this);
    this.tokens = this.opts.burst;
    this.lastRefill = this.opts.now();
    this.queue = new FairQueue<string>(this.opts.now);
  }

  /** Milliseconds of handler time charged to `tenant` (its keys that ran, and those running). */
  charged(tenant: string): number {
    return this.queue.charged(tenant);
  }

  /** Charges `tenant` for `ms` of work done for it outside the queue (FairQueue.charge). */
  charge(tenant: string, ms: number): void {
    this.queue.charge(tenant, ms);
  }

  /** Whether `key` is waiting to be processed (queued, or to run again after the run in progress). */
  waiting(key: string): boolean {
    return this.queued.has(key) || this.dirty.has(key);
  }

  get length(): number {
    return this.queue.size;
  }

  stats(): QueueStats {
    return { depth: this.queue.size, processing: this.processing.size };
  }

  /** Keys waiting and being processed, per tenant that has any. */
  tenantStats(): TenantStats {
    const out: TenantStats = new Map();
    for (const [t, depth] of this.queue.depths()) out.set(t, { depth, processing: 0 });
    for (const [t, processing] of this.processingPerTenant) out.set(t, { depth: out.get(t)?.depth ?? 0, processing });
    return out;
  }

  /** Queue `key` now. A key already queued stays once; one being processed runs again after. */
  add(key: string): void {
    if (this.shuttingDown) return;
    this.enqueue(key);
  }

  private enqueue(key: string): void {
    // The one way into the queue (adds, delayed adds, retries, re-adds after processing).
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(this.opts.tenantOf(key), key);
    this.addedAt.set(key, this.opts.now());
    this.wake();
  }

  /** Workers waiting for a key look again (one may now be theirs to take). */
  wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Tenants with keys waiting or being processed (work-share.ts). */
  busyTenants(): Iterable<string> {
    return new Set([...this.queue.depths().keys(), ...this.processingPerTenant.keys()]);
  }

  /**
   * Whether `tenant` holds its share of the workers already: the part of them left to it while
   * others are known, and, while a cheaper tenant has work (`busy`, from the share), what its keys'
   * time allows (work-share.ts).
   */
  private atCap(tenant: string, busy: Set<string> | undefined): boolean {
    // Keys taken with get() and no workers of run(): no share to keep.
    if (this.workerCount === 0) return false;
    const running = this.processingPerTenant.get(tenant) ?? 0;
    if (running >= tenantCap(this.workerCount, this.opts.tenants())) return true;
    if (!this.share || !busy || running === 0 || busy.size <= (busy.has(tenant) ? 1 : 0)) return false;
    let oldest: number | undefined;
    for (const p of this.processing.values()) if (p.tenant === tenant) oldest = Math.min(oldest ?? p.at, p.at);
    if (running < this.share.allowed(tenant, oldest)) return false;
    return this.share.cheaperBusy(tenant, this.share.estimate(tenant, oldest), busy);
  }

  /** Queue `key` after `ms`; an earlier pending delayed add for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = this.opts.now() + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    // Node fires a timer longer than 2^31-1 ms after 1 ms: cap it, or a long interval becomes a hot loop.
    const timer = setTimeout(
      () => {
        this.delayed.delete(key);
        this.add(key);
      },
      Math.min(ms, MAX_TIMER_MS),
    );
    timer.unref?.();
    this.delayed.set(key, { at, timer });
  }

  /** The delay the next failure of `key` earns: base·2^n, capped, and at least the token bucket's wait. */
  backoffFor(key: string): number {
    const n = this.failures.get(key) ?? 0;
    const perKey = Math.min(this.opts.maxDelayMs, this.opts.baseDelayMs * 2 ** Math.min(n, 40));
    return Math.max(perKey, this.takeToken());
  }

  /** Re-queue after a failure, with the key's backoff. */
  addRateLimited(key: string): void {
    const delay = this.backoffFor(key);
    this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
    this.addAfter(key, delay);
  }

  /** The key succeeded: its backoff starts over. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Returns the wait (ms) before a token is available, consuming one (possibly in advance). */
  private takeToken(): number {
    if (this.opts.ratePerSecond <= 0) return 0;
    const now = this.opts.now();
    this.tokens = Math.min(this.opts.burst, this.tokens + ((now - this.lastRefill) / 1000) * this.opts.ratePerSecond);
    this.lastRefill = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.opts.ratePerSecond) * 1000);
  }

  /** Next key to work on (least-charged tenant first, each within its share), or undefined once shut down. */
  async get(): Promise<string | undefined> {
    let next: Taken<string> | undefined;
    for (;;) {
      if (this.shuttingDown) return undefined;
      const busy = this.share && this.share.inFlightMs > 0 && this.workerCount > 0 ? this.share.busy() : undefined;
      next = this.queue.take((t) => this.atCap(t, busy));
      if (next) break;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    const { tenant, item: key, finish } = next;
    this.queued.delete(key);
    this.processing.set(key, { tenant, finish, at: this.share?.clock() ?? 0 });
    this.processingPerTenant.set(tenant, (this.processingPerTenant.get(tenant) ?? 0) + 1);
    const at = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (at !== undefined) this.onTake?.(key, this.opts.now() - at, tenant);
    return key;
  }

  /** Processing of `key` ended; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    const taken = this.processing.get(key);
    this.processing.delete(key);
    // A key added while it ran is owed a run, unless shutdown began (enqueue refuses it then). It is
    // queued before its run's charge ends, so its tenant never looks away and keeps its account.
    if (this.dirty.delete(key)) this.enqueue(key);
    if (taken !== undefined) {
      const { tenant } = taken;
      taken.finish();
      this.share?.ended(tenant, taken.at);
      const n = (this.processingPerTenant.get(tenant) ?? 1) - 1;
      if (n > 0) this.processingPerTenant.set(tenant, n);
      else this.processingPerTenant.delete(tenant);
      // Its tenant may be below its share again: a waiting worker may take one of its keys.
      this.wake();
    }
  }

  /** Start `n` workers running `handler`; a throw re-queues the key with backoff. */
  run(n: number, handler: Handler, onError?: (key: string, err: unknown) => void): void {
    this.workerCount += n;
    for (let i = 0; i < n; i++) {
      this.workers.push(
        (async () => {
          for (;;) {
            const key = await this.get();
            if (key === undefined) return;
            try {
              await handler(key);
              this.forget(key);
            } catch (err) {
              onError?.(key, err);
              this.done(key);
              this.addRateLimited(key);
              continue;
            }
            this.done(key);
          }
        })(),
      );
    }
  }

  /**
   * Start nothing more: refuse keys, cancel delayed adds and backoff retries, drop what is queued
   * or owed a re-run; resolves when the handlers already running have returned. Its synchronous
   * part is the whole refusal, so a caller that shuts down before awaiting anything leaves no gap.
   */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.queue.clear();
    this.queued.clear();
    this.addedAt.clear();
    this.dirty.clear();
    for (const w of this.waiters.splice(0)) w();
    await Promise.all(this.workers);
  }
}
