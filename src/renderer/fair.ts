// Fair shares of a fixed number of workers between tenants: the renderer's render slots
// (server.ts) and the controller's work queues (controller/queue.ts) both hand out work this way.
//
// - Turns: a free worker takes the next item of the tenant that has waited longest for a turn
//   (tenants in rotation), first in first out within a tenant. A tenant with 1,000 items waiting
//   is one tenant in the rotation, not 1,000 places ahead of everyone else.
// - Room kept free: while more than one tenant is known, none may hold more than `tenantCap` of the
//   workers, so a quarter of them (at least one) is always there for the others. Work is never
//   taken from a tenant mid-way, so without this a tenant whose items all run to their time limit
//   could hold every worker for that long; with it, another tenant's item starts at once.
// - Alone, a tenant may use every worker: there is nobody to keep room for.

/** Most workers one tenant may hold while `tenants` tenants are known. */
export function tenantCap(workers: number, tenants: number): number {
  if (tenants <= 1 || workers <= 1) return workers;
  return Math.max(1, workers - Math.ceil(workers / 4));
}

/** Items waiting, per tenant, taken in turns. */
export class FairQueue<T> {
  // A Map keeps insertion order: the rotation. A tenant that had a turn goes to the back.
  readonly #byTenant = new Map<string, T[]>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(tenant: string, item: T): void {
    const items = this.#byTenant.get(tenant);
    if (items) items.push(item);
    else this.#byTenant.set(tenant, [item]);
    this.#size++;
  }

  /** The next item, tenants in turn, skipping those `atCap` says hold their share already. */
  take(atCap: (tenant: string) => boolean = () => false): { tenant: string; item: T } | undefined {
    for (const [tenant, items] of this.#byTenant) {
      if (atCap(tenant)) continue;
      const item = items.shift() as T;
      this.#byTenant.delete(tenant);
      if (items.length > 0) this.#byTenant.set(tenant, items);
      this.#size--;
      return { tenant, item };
    }
    return undefined;
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
