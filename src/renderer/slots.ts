// The renderer's render slots, shared fairly between tenants (fair.ts): requests wait in a bounded
// queue, taken by the least slot time charged to their tenant (each tenant is charged the time it
// holds a slot), then tenant by tenant, and no tenant holds more than its share of the slots while others
// are about. A tenant counts as about for ten minutes after its last request: the controller
// refreshes every Application at least that often, so a quiet tenant keeps its room.
import { FairQueue, tenantCap } from './fair.ts';

const SEEN_MS = 10 * 60_000;

export interface SlotStats {
  running: number;
  queued: number;
}

export class RenderSlots {
  readonly #max: number;
  readonly #maxQueued: number;
  readonly #now: () => number;
  readonly #waiting: FairQueue<(release: () => void) => void>;
  readonly #running = new Map<string, number>();
  readonly #seen = new Map<string, number>();
  #total = 0;

  constructor(max: number, maxQueued: number, now: () => number = Date.now) {
    this.#max = max;
    this.#maxQueued = maxQueued;
    this.#now = now;
    this.#waiting = new FairQueue(now);
  }

  /** Milliseconds of slot time charged to `tenant`. */
  charged(tenant: string): number {
    return this.#waiting.charged(tenant);
  }

  get stats(): SlotStats {
    return { running: this.#total, queued: this.#waiting.size };
  }

  /** Waits for a slot; the function that gives it back, or undefined when the queue is full. */
  async acquire(tenant: string): Promise<(() => void) | undefined> {
    this.#seen.set(tenant, this.#now());
    if (this.#waiting.size >= this.#maxQueued) return undefined;
    // In the queue, then handed out in turn: at once when a slot is free for this tenant.
    const granted = new Promise<() => void>((resolve) => this.#waiting.push(tenant, resolve));
    this.#pump();
    return granted;
  }

  /** A slot for `tenant`, counted at once; the function that gives it back. */
  #grant(tenant: string, finish: () => void): () => void {
    this.#total++;
    this.#running.set(tenant, (this.#running.get(tenant) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      finish();
      this.#total--;
      const n = (this.#running.get(tenant) ?? 1) - 1;
      if (n > 0) this.#running.set(tenant, n);
      else this.#running.delete(tenant);
      this.#pump();
    };
  }

  #atCap(tenant: string): boolean {
    return (this.#running.get(tenant) ?? 0) >= tenantCap(this.#max, this.#tenantsAbout());
  }

  #tenantsAbout(): number {
    const since = this.#now() - SEEN_MS;
    for (const [t, at] of this.#seen) if (at < since && !this.#running.has(t)) this.#seen.delete(t);
    return this.#seen.size;
  }

  #pump(): void {
    while (this.#total < this.#max) {
      const next = this.#waiting.take((t) => this.#atCap(t));
      if (!next) return;
      next.item(this.#grant(next.tenant, next.finish));
    }
  }
}
