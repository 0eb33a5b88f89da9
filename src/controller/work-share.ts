// The controller's workers shared between tenants by what their keys cost, not only by turns. The
// fair queues (queue.ts, renderer/fair.ts) order the keys that wait; but with workers to spare no
// key waits, and a tenant whose refreshes each take seconds of the renderer's, the controller's and
// the API server's CPU (a ConfigMap of 88,000 keys rendered, compared and written) runs as many of
// them at once as it has Applications, while another tenant's small refreshes share those cores
// with them. So, while a tenant whose keys cost at most half as much has work (a key waiting or
// being processed in either queue, or one that ended less than `lingerMs` ago), a tenant may hold
// only as many workers as its keys' recent time fits in `inFlightMs`: a tenant whose refreshes take
// 100 ms may hold ten, one whose refreshes take 3 s one. Alone, or beside tenants as costly, a tenant
// holds as many as the queue lets it: nobody is kept waiting for an idle core. At least one key of
// every tenant with work is always running.
//
// A tenant's key time is measured from taken to done, kept as the API server's share keeps its
// requests' (kube/tenant-share.ts SlowestRecent: it rises at once to a slower key and halves with
// every 30 s without one), and never below the age of the oldest key it is running (a first key
// that runs long holds back the rest before its time is known). A tenant with no key for
// `forgetMs` (ten minutes, as the API server's share forgets its accounts) is forgotten with its
// estimate: AppProjects come and go, and by then its estimate has halved twenty times.

import { fitIn, SlowestRecent } from '../kube/tenant-share.ts';

/** What the share needs to know of a queue: its tenants with keys waiting or being processed. */
export interface SharedQueue {
  busyTenants(): Iterable<string>;
  /** Workers waiting for a key look again (the share may let one take a key now). */
  wake(): void;
}

export interface WorkShareOptions {
  /** Milliseconds of key time one tenant may hold in workers while a cheaper one has work; 0: no limit. */
  inFlightMs: number;
  /** How long a tenant counts as having work after its last key ended (default 1 s). */
  lingerMs?: number;
  /** A tenant with no key ended for this long is forgotten with its estimate (default ten minutes). */
  forgetMs?: number;
  now?: () => number;
}

export class WorkShare {
  readonly inFlightMs: number;
  readonly #lingerMs: number;
  readonly #forgetMs: number;
  readonly #now: () => number;
  readonly #queues = new Set<SharedQueue>();
  /** When each tenant's last key ended. */
  readonly #ended = new Map<string, number>();
  /** Each tenant's key time, and when its last key ended. */
  readonly #estimates = new Map<string, { time: SlowestRecent; lastEnded: number }>();
  #swept = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: WorkShareOptions) {
    this.inFlightMs = opts.inFlightMs;
    this.#lingerMs = opts.lingerMs ?? 1000;
    this.#forgetMs = opts.forgetMs ?? 10 * 60_000;
    this.#now = opts.now ?? (() => performance.now());
  }

  get clock(): () => number {
    return this.#now;
  }

  register(queue: SharedQueue): void {
    this.#queues.add(queue);
  }

  /** Tenants with work now (in any queue, or within the linger), for one take. */
  busy(): Set<string> {
    const now = this.#now();
    const out = new Set<string>();
    for (const q of this.#queues) for (const t of q.busyTenants()) out.add(t);
    for (const [t, at] of this.#ended) {
      if (now - at >= this.#lingerMs) this.#ended.delete(t);
      else out.add(t);
    }
    return out;
  }

  /** `tenant`'s key time now: its estimate, or the age of its oldest key running if longer. */
  estimate(tenant: string, oldestRunningAt: number | undefined): number {
    const now = this.#now();
    const recent = this.#estimates.get(tenant)?.time.at(now) ?? 0;
    return Math.max(recent, oldestRunningAt === undefined ? 0 : now - oldestRunningAt);
  }

  /** Most workers `tenant` may hold while a cheaper tenant has work (cheaperBusy). */
  allowed(tenant: string, oldestRunningAt: number | undefined): number {
    return fitIn(this.inFlightMs, this.estimate(tenant, oldestRunningAt));
  }

  /**
   * Whether a tenant in `busy` other than `tenant` has keys that cost at most half of `ms`: only
   * then is `tenant` held back. Tenants whose keys all cost alike (several costly ones, or keys slow
   * for latency alone: a distant cluster, a slow Git server) keep every worker the queue lets them,
   * rather than going one at a time each while nobody is the better for it.
   */
  cheaperBusy(tenant: string, ms: number, busy: ReadonlySet<string>): boolean {
    for (const other of busy) if (other !== tenant && this.estimate(other, undefined) * 2 <= ms) return true;
    return false;
  }

  /** A key of `tenant` that was taken at `takenAt` is done: its time counts, and the others look again. */
  ended(tenant: string, takenAt: number): void {
    const now = this.#now();
    const ms = Math.max(0, now - takenAt);
    let e = this.#estimates.get(tenant);
    if (!e) this.#estimates.set(tenant, (e = { time: new SlowestRecent(), lastEnded: now }));
    e.time.note(ms, now);
    e.lastEnded = now;
    this.#ended.set(tenant, now);
    if (now - this.#swept >= this.#forgetMs / 10) this.#forget(now);
    this.#wakeAll();
    this.#armLinger();
  }

  /** How many tenants' key times are remembered. */
  get remembered(): number {
    return this.#estimates.size;
  }

  /** Tenants whose last key ended `forgetMs` ago or more are dropped; a tenant with a key running ends it later, and is measured again. */
  #forget(now: number): void {
    this.#swept = now;
    for (const [t, e] of this.#estimates) if (now - e.lastEnded >= this.#forgetMs) this.#estimates.delete(t);
  }

  /**
   * When a linger is over, a tenant held back for it may take more: the queues look again then. (A
   * tenant held back always has a key running, whose end wakes them too: this only makes it sooner.)
   */
  #armLinger(): void {
    if (this.#timer) return;
    let first = Infinity;
    for (const at of this.#ended.values()) first = Math.min(first, at);
    if (first === Infinity) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.busy();
        this.#wakeAll();
        this.#armLinger();
      },
      Math.max(1, first + this.#lingerMs - this.#now()),
    );
    this.#timer.unref?.();
  }

  #wakeAll(): void {
    for (const q of this.#queues) q.wake();
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
