// Fair shares of a fixed number of workers between tenants: the renderer's render slots
// (slots.ts) and the controller's work queues (controller/queue.ts) both hand out work this way.
//
// - Turns by cost: each tenant is charged the time its work takes (a render's slot time in the
//   renderer; a reconcile's time in the controller, which is its renders, parses, comparisons and
//   syncs), counting work still running as it runs. A free worker takes the next item of the
//   waiting tenant charged least so far; tenants charged alike are taken in rotation (the one that
//   waited longest first), first in first out within a tenant. So a tenant whose items each cost
//   100 times another's gets about a hundredth of the turns while both have work waiting, and a
//   tenant with 1,000 items waiting is one tenant in the rotation, not 1,000 places ahead.
// - No credit for being away: a tenant that comes back with work (none waiting, none running)
//   starts at the least any tenant still busy has been charged, never below; one that was charged
//   more keeps its debt. When nobody is busy, every account starts over.
// - Room kept free: while more than one tenant is known, none may hold more than `tenantCap` of the
//   workers, so a quarter of them (at least one) is always there for the others. Work is never
//   taken from a tenant mid-way, so without this a tenant whose items all run to their time limit
//   could hold every worker for that long; with it, another tenant's item starts at once.
// - Alone, a tenant may use every worker: there is nobody to keep room for. Idle workers are never
//   kept from a tenant for its debt: the charge only orders the tenants that have work waiting.

/** Most workers one tenant may hold while `tenants` tenants are known. */
export function tenantCap(workers: number, tenants: number): number {
  if (tenants <= 1 || workers <= 1) return workers;
  return Math.max(1, workers - Math.ceil(workers / 4));
}

/** What `take` hands out: the item, its tenant, and the call that ends its charge. */
export interface Taken<T> {
  tenant: string;
  item: T;
  /** The work on `item` ended: its time is charged to `tenant` (once; later calls do nothing). */
  finish: () => void;
}

/** Items waiting, per tenant, taken by least cost charged, then in turns. */
export class FairQueue<T> {
  // A Map keeps insertion order: the rotation. A tenant that had a turn goes to the back.
  readonly #byTenant = new Map<string, T[]>();
  readonly #now: () => number;
  /** Milliseconds charged per tenant for work that ended. */
  readonly #charged = new Map<string, number>();
  /** Start times of the work running per tenant. */
  readonly #running = new Map<string, Set<{ at: number }>>();
  #size = 0;

  /** `now` is the clock the work is charged by (tests pass their own). */
  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  get size(): number {
    return this.#size;
  }

  /** Time charged to `tenant`: its work that ended, and its work running until now. */
  charged(tenant: string): number {
    let ms = this.#charged.get(tenant) ?? 0;
    const running = this.#running.get(tenant);
    if (running) {
      const now = this.#now();
      for (const r of running) ms += now - r.at;
    }
    return ms;
  }

  /**
   * Charges `tenant` `ms` of work done for it outside the queue (the controller's watch events).
   * A tenant with no work keeps the debt above the floor it would come back at (#arrive).
   */
  charge(tenant: string, ms: number): void {
    if (ms > 0) this.#charged.set(tenant, (this.#charged.get(tenant) ?? 0) + ms);
  }

  #busy(tenant: string): boolean {
    return this.#byTenant.has(tenant) || this.#running.has(tenant);
  }

  push(tenant: string, item: T): void {
    if (!this.#busy(tenant)) this.#arrive(tenant);
    const items = this.#byTenant.get(tenant);
    if (items) items.push(item);
    else this.#byTenant.set(tenant, [item]);
    this.#size++;
  }

  /** `tenant` has work again after none: no credit below the least-charged busy tenant. */
  #arrive(tenant: string): void {
    let floor = Infinity;
    for (const t of new Set([...this.#byTenant.keys(), ...this.#running.keys()]))
      floor = Math.min(floor, this.charged(t));
    if (floor === Infinity) {
      // Nobody is busy: every account starts over (and the map holds no tenant long gone).
      this.#charged.clear();
      return;
    }
    // Accounts of tenants away at or below the floor would be lifted to it anyway: dropped.
    for (const [t, ms] of this.#charged) if (ms <= floor && !this.#busy(t)) this.#charged.delete(t);
    this.#charged.set(tenant, Math.max(this.#charged.get(tenant) ?? 0, floor));
  }

  /** The tenant `take` would take from next, and its first item, without taking it. */
  peek(atCap: (tenant: string) => boolean = () => false): { tenant: string; item: T } | undefined {
    const tenant = this.#next(atCap);
    return tenant === undefined ? undefined : { tenant, item: (this.#byTenant.get(tenant) as T[])[0] as T };
  }

  /** The first item waiting for `tenant`. */
  head(tenant: string): T | undefined {
    return this.#byTenant.get(tenant)?.[0];
  }

  #next(atCap: (tenant: string) => boolean): string | undefined {
    let best: string | undefined;
    let bestCharge = Infinity;
    for (const tenant of this.#byTenant.keys()) {
      if (atCap(tenant)) continue;
      const c = this.charged(tenant);
      if (c < bestCharge) {
        best = tenant;
        bestCharge = c;
      }
    }
    return best;
  }

  /** The next item: the least-charged tenant with items waiting, skipping those `atCap` says hold their share. */
  take(atCap: (tenant: string) => boolean = () => false): Taken<T> | undefined {
    const best = this.#next(atCap);
    if (best === undefined) return undefined;
    const tenant = best;
    const items = this.#byTenant.get(tenant) as T[];
    const item = items.shift() as T;
    this.#byTenant.delete(tenant);
    if (items.length > 0) this.#byTenant.set(tenant, items);
    this.#size--;
    const run = { at: this.#now() };
    const running = this.#running.get(tenant) ?? new Set();
    running.add(run);
    this.#running.set(tenant, running);
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      this.#charged.set(tenant, (this.#charged.get(tenant) ?? 0) + Math.max(0, this.#now() - run.at));
      running.delete(run);
      if (running.size === 0 && this.#running.get(tenant) === running) this.#running.delete(tenant);
    };
    return { tenant, item, finish };
  }

  /** Items waiting for each tenant that has any. */
  depths(): Map<string, number> {
    return new Map([...this.#byTenant].map(([t, items]) => [t, items.length]));
  }

  clear(): T[] {
    const all = [...this.#byTenant.values()].flat();
    this.#byTenant.clear();
    this.#size = 0;
    return all;
  }
}
