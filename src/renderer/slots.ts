// The renderer's render slots, shared fairly between tenants (fair.ts): requests wait in a bounded
// queue, taken by the least slot time charged to their tenant (each tenant is charged the time it
// holds a slot), then tenant by tenant, and no tenant holds more than its share of the slots while others
// are about. A tenant counts as about for ten minutes after its last request: the controller
// refreshes every Application at least that often, so a quiet tenant keeps its room.
//
// With a memory budget (memory.ts), a slot is handed out with the bytes its request may hold, in
// the same turn: the request whose turn it is starts once its bytes fit, and nobody passes it
// meanwhile (so none waits forever), and while others are about no tenant holds so much that one
// more request of the largest kind would not fit beside it (room kept free, as for the slots).
// Requests waiting for memory hold no slot.
import type { ByteBudget } from './budget.ts';
import { FairQueue, tenantCap } from './fair.ts';

const SEEN_MS = 10 * 60_000;

export interface SlotStats {
  running: number;
  queued: number;
}

/** What a slot's request may hold of the memory budget, and its name there (`Application <key>`). */
export interface SlotNeed {
  job: string;
  bytes: number;
}

export interface SlotMemory {
  budget: ByteBudget;
  /** The largest request's bytes: kept free for the other tenants while more than one is about. */
  largest: number;
}

interface Waiting {
  grant: (release: () => void) => void;
  need: SlotNeed | undefined;
  /** When it was first the one whose turn it was but its bytes did not fit. */
  memorySince?: number;
}

export class RenderSlots {
  readonly #max: number;
  readonly #maxQueued: number;
  readonly #now: () => number;
  readonly #memory: SlotMemory | undefined;
  readonly #waiting: FairQueue<Waiting>;
  readonly #running = new Map<string, number>();
  /** Bytes held per tenant. */
  readonly #held = new Map<string, number>();
  readonly #seen = new Map<string, number>();
  #total = 0;

  constructor(max: number, maxQueued: number, now: () => number = Date.now, memory?: SlotMemory) {
    this.#max = max;
    this.#maxQueued = maxQueued;
    this.#now = now;
    this.#memory = memory;
    this.#waiting = new FairQueue(now);
  }

  /** Milliseconds of slot time charged to `tenant`. */
  charged(tenant: string): number {
    return this.#waiting.charged(tenant);
  }

  get stats(): SlotStats {
    return { running: this.#total, queued: this.#waiting.size };
  }

  /** The request waiting for memory (its turn came, its bytes do not fit), with its bytes and since when. */
  waitingForMemory(): Array<{ job: string; bytes: number; since: number }> {
    const next = this.#waiting.peek((t) => this.#atCap(t));
    const since = next?.item.memorySince;
    return next?.item.need && since !== undefined ? [{ ...next.item.need, since }] : [];
  }

  /**
   * Waits for a slot (and, with a memory budget, for `need`'s bytes); the function that gives both
   * back, or undefined when the queue is full. A need larger than the whole budget must be refused
   * before (memory.ts): it would wait for ever.
   */
  async acquire(tenant: string, need?: SlotNeed): Promise<(() => void) | undefined> {
    this.#seen.set(tenant, this.#now());
    if (this.#waiting.size >= this.#maxQueued) return undefined;
    // In the queue, then handed out in turn: at once when a slot is free for this tenant.
    const granted = new Promise<() => void>((resolve) => this.#waiting.push(tenant, { grant: resolve, need }));
    this.#pump();
    return granted;
  }

  /** A slot for `tenant`, counted at once; the function that gives it back. */
  #grant(tenant: string, need: SlotNeed | undefined, finish: () => void): (() => void) | undefined {
    const giveBack = need && this.#memory ? this.#memory.budget.tryAcquire(need.job, need.bytes) : () => undefined;
    if (!giveBack) return undefined;
    const bytes = need && this.#memory ? need.bytes : 0;
    this.#total++;
    this.#running.set(tenant, (this.#running.get(tenant) ?? 0) + 1);
    this.#held.set(tenant, (this.#held.get(tenant) ?? 0) + bytes);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      finish();
      giveBack();
      this.#total--;
      const n = (this.#running.get(tenant) ?? 1) - 1;
      if (n > 0) this.#running.set(tenant, n);
      else this.#running.delete(tenant);
      const left = (this.#held.get(tenant) ?? 0) - bytes;
      if (left > 0) this.#held.set(tenant, left);
      else this.#held.delete(tenant);
      this.#pump();
    };
  }

  #atCap(tenant: string): boolean {
    const about = this.#tenantsAbout();
    if ((this.#running.get(tenant) ?? 0) >= tenantCap(this.#max, about)) return true;
    // Room kept free in memory too: one more of the largest requests fits beside this tenant's.
    const m = this.#memory;
    const held = this.#held.get(tenant) ?? 0;
    if (!m || about <= 1 || held === 0 || m.budget.capacity < 2 * m.largest) return false;
    const next = this.#waiting.head(tenant)?.need?.bytes ?? 0;
    return held + next > m.budget.capacity - m.largest;
  }

  #tenantsAbout(): number {
    const since = this.#now() - SEEN_MS;
    for (const [t, at] of this.#seen) if (at < since && !this.#running.has(t)) this.#seen.delete(t);
    return this.#seen.size;
  }

  #pump(): void {
    while (this.#total < this.#max) {
      const atCap = (t: string) => this.#atCap(t);
      const next = this.#waiting.peek(atCap);
      if (!next) return;
      const need = next.item.need;
      // Its turn, but not its memory yet: nobody passes it.
      if (need && this.#memory && this.#memory.budget.used + need.bytes > this.#memory.budget.capacity) {
        next.item.memorySince ??= this.#now();
        return;
      }
      const taken = this.#waiting.take(atCap) as NonNullable<ReturnType<FairQueue<Waiting>['take']>>;
      const release = this.#grant(taken.tenant, taken.item.need, taken.finish);
      if (!release) throw new Error('render slots: memory admitted by peek was refused');
      taken.item.grant(release);
    }
  }
}
