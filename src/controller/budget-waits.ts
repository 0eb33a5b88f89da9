// "What waits for memory is visible": an Application whose refresh or operation step has waited
// longer than a threshold for memory budget (the controller's own, memory.ts, or the renderer's,
// renderer/memory.ts, as its /v1/budget tells) gets a MemoryBudgetWarning condition naming the
// budget, how long it has waited, what it needs and what holds the budget; the condition goes when
// the job has run (its own status write takes it away, or this does once it ended).
//
// The condition is written from a timer, outside every job, so writing it needs no budget. It is
// a side write (applications.ts): the job's own status write goes on top of it, not into a conflict.
import type { Logger } from 'pino';
import { CONDITION, readStatus } from '../api/index.ts';
import type { ControlClient } from '../kube/control.ts';
import type { WatchedObject } from '../kube/watch.ts';
import type { ByteBudget } from '../renderer/budget.ts';
import { formatMiB } from '../renderer/budget.ts';
import type { BudgetAnswer } from '../renderer/protocol.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError, forgetSideWrites, writeStatusBeside } from './applications.ts';
import { mergeConditions } from './status.ts';

export type JobKind = 'refresh' | 'operation';

/** One budget's state, as ByteBudget or the renderer's /v1/budget has it. */
export interface BudgetView {
  /** "the controller's memory budget", "the renderer's memory budget". */
  name: string;
  capacity: number;
  /** `tenantHeld`: the job waits for its project's share of the budget, of which its project holds this. */
  waiting: Array<{ job: string; bytes: number; waitedMs: number; tenantHeld?: number }>;
  holders: Array<{ job: string; bytes: number }>;
}

export function viewOf(name: string, budget: ByteBudget, now: number): BudgetView {
  return {
    name,
    capacity: budget.capacity,
    waiting: budget.waiting().map((w) => ({
      job: w.job,
      bytes: w.bytes,
      waitedMs: Math.max(0, now - w.since),
      ...(w.tenantHeld !== undefined ? { tenantHeld: w.tenantHeld } : {}),
    })),
    holders: budget.holders(),
  };
}

export function viewOfAnswer(name: string, a: BudgetAnswer): BudgetView {
  return { name, capacity: a.capacity, waiting: a.waiting, holders: a.holders };
}

/** The name a job of Application `key` has in either budget. */
export function jobName(key: string): string {
  return `Application ${key}`;
}

const SHOWN_HOLDERS = 5;
const CLEAR_ATTEMPTS = 5;
const CLEAR_RETRY_MS = 500;

/** The condition's message for a job waiting in `view`. */
export function waitMessage(
  kinds: readonly JobKind[],
  view: BudgetView,
  wait: { bytes: number; waitedMs: number; tenantHeld?: number | undefined },
): string {
  const what =
    kinds.length > 1 ? 'refresh and operation step' : kinds[0] === 'operation' ? 'operation step' : 'refresh';
  const held = view.holders.reduce((n, h) => n + h.bytes, 0);
  const shown = view.holders.slice(0, SHOWN_HOLDERS).map((h) => `${h.job} (${formatMiB(h.bytes)})`);
  const more = view.holders.length > SHOWN_HOLDERS ? ` and ${view.holders.length - SHOWN_HOLDERS} more` : '';
  const holders = shown.length > 0 ? `held by ${shown.join(', ')}${more}` : 'held by nothing now';
  const share =
    wait.tenantHeld !== undefined
      ? `; it waits for its project's share: while other projects have work, one project's Applications hold at most three quarters of it, and this one's hold ${formatMiB(wait.tenantHeld)}`
      : '';
  return `this Application's ${what} has waited ${Math.round(wait.waitedMs / 1000)} s for ${view.name} of ${formatMiB(view.capacity)}: it needs ${formatMiB(wait.bytes)}, and ${formatMiB(held)} of it is ${holders}${share}`;
}

export interface BudgetWaitsOptions {
  control: ControlClient;
  /** The Application as the cache has it now. */
  app: (key: string) => WatchedObject | undefined;
  /** A job waiting this long gets the condition. */
  thresholdMs: number;
  logger: Logger;
  now?: () => number;
}

export class BudgetWaits {
  readonly #o: BudgetWaitsOptions;
  /** Jobs under way per Application. */
  readonly #inflight = new Map<string, JobKind[]>();
  /** Applications this wrote the condition on, and when (not written again within a threshold). */
  readonly #marked = new Map<string, number>();
  /** Writes per Application, one after another. */
  readonly #chains = new Map<string, Promise<void>>();

  constructor(o: BudgetWaitsOptions) {
    this.#o = o;
  }

  /** Runs `fn` as a `kind` job of `key`; once it ended, a condition it left is taken away. */
  async run<T>(key: string, kind: JobKind, fn: () => Promise<T>): Promise<T> {
    const kinds = this.#inflight.get(key) ?? [];
    kinds.push(kind);
    this.#inflight.set(key, kinds);
    try {
      return await fn();
    } finally {
      kinds.splice(kinds.indexOf(kind), 1);
      if (kinds.length === 0) {
        this.#inflight.delete(key);
        if (this.#marked.has(key)) this.#chain(key, () => this.#clear(key));
        else forgetSideWrites(this.#o.control, key);
      }
    }
  }

  /** Whether any job is under way (the renderer is asked only then). */
  get busy(): boolean {
    return this.#inflight.size > 0;
  }

  /** Marks the Applications whose jobs wait in one of `views` longer than the threshold. */
  observe(views: readonly BudgetView[]): void {
    const now = (this.#o.now ?? Date.now)();
    for (const [key, kinds] of this.#inflight) {
      const at = this.#marked.get(key);
      if (at !== undefined && now - at < this.#o.thresholdMs) continue;
      for (const view of views) {
        const wait = view.waiting.find((w) => w.job === jobName(key));
        if (!wait || wait.waitedMs < this.#o.thresholdMs) continue;
        const app = this.#o.app(key);
        const present = (readStatus(app ?? {})?.conditions ?? []).some((c) => c.type === CONDITION.MemoryBudgetWarning);
        if (present && at !== undefined) break;
        this.#marked.set(key, now);
        const message = waitMessage([...kinds], view, wait);
        this.#chain(key, () => this.#set(key, message));
        break;
      }
    }
  }

  /** Writes in flight have ended (tests). */
  async settled(): Promise<void> {
    await Promise.all([...this.#chains.values()]);
  }

  #chain(key: string, write: () => Promise<void>): void {
    const next = (this.#chains.get(key) ?? Promise.resolve())
      .then(write)
      .catch((err: unknown) =>
        this.#o.logger.debug({ application: key, err: (err as Error).message }, 'memory-budget condition not written'),
      );
    this.#chains.set(key, next);
    void next.then(() => {
      if (this.#chains.get(key) === next) this.#chains.delete(key);
    });
  }

  async #set(key: string, message: string): Promise<void> {
    const raw = this.#o.app(key);
    if (!raw || !this.#inflight.has(key)) return;
    const prev = readStatus(raw);
    const now = new Date((this.#o.now ?? Date.now)()).toISOString();
    const others = (prev?.conditions ?? []).filter((c) => c.type !== CONDITION.MemoryBudgetWarning);
    const conditions = mergeConditions(
      prev?.conditions,
      [...others, { type: CONDITION.MemoryBudgetWarning, message }],
      now,
    );
    await writeStatusBeside(this.#o.control, raw, { ...prev, conditions });
    this.#o.logger.info({ application: key }, message);
  }

  async #clear(key: string): Promise<void> {
    this.#marked.delete(key);
    try {
      // A conflict is the job's own write (or another) not in the cache yet: asked again once it is.
      for (let attempt = 0; attempt < CLEAR_ATTEMPTS; attempt++) {
        if (this.#inflight.has(key)) return;
        const raw = this.#o.app(key);
        const prev = raw ? readStatus(raw) : undefined;
        if (!raw || !prev?.conditions?.some((c) => c.type === CONDITION.MemoryBudgetWarning)) return;
        const conditions = prev.conditions.filter((c) => c.type !== CONDITION.MemoryBudgetWarning);
        try {
          await writeStatusBeside(this.#o.control, raw, { ...prev, conditions });
          return;
        } catch (err) {
          if (!(err instanceof ConflictError) || attempt === CLEAR_ATTEMPTS - 1) throw err;
          await sleep(CLEAR_RETRY_MS);
        }
      }
    } finally {
      if (!this.#inflight.has(key)) forgetSideWrites(this.#o.control, key);
    }
  }
}
