// The API server's answer to the write that started an automated sync (reconciler.ts: `operation`
// and its Running state in the comparison's own write), handed to the operation worker.
//
// The worker never starts an operation from the watch's copy of the Application, which may be
// behind what this controller itself wrote (a finished operation would run again); it reads the
// Application from the API server first, as Argo CD's controller does. The answer to the write
// that set the operation is such a read, made a moment earlier, and the worker takes it instead of
// a GET when all of these hold:
//
// - no operation run of the Application began or ended since the refresh took its ticket, just
//   before the write, and none that was under way then has ended since (a run that began or was
//   under way may have read the Application after the write, and finished the operation since:
//   the answer is then older than what this controller wrote);
// - no shard went elsewhere since the ticket, nor came back (a new owner may have written
//   meanwhile);
// - the watch shows that same version of the Application (nothing newer written since, as far as
//   the watch has told), and the ticket is at most HANDOFF_MAX_AGE_MS old.
//
// The age bounds what is remembered of runs (a ticket older than the runs kept cannot be checked
// against them, so it is refused) and how long the watch's word that nothing newer was written is
// trusted in place of a read: a stalled watch could hide a write made since (a terminate) for up to
// that long, and a resumed step applies before its first write carries the version. Two minutes:
// an operation queued behind a burst takes the answer rather than reading the Application again
// (at 1,000 Applications on two cores the last wait about a minute; at 30 s, 313 of them read it).
//
// Every run takes what was handed over for its Application, or nothing, once, at its start, and
// spends what was handed over since at its end. The clock is monotonic. Any write the worker
// makes carries the version it started from, so a change meanwhile is a conflict that is read
// again, and a terminate aborts the step.
import type { RawApplication } from './applications.ts';

/** How old a ticket may be for what was handed over under it to be taken. */
export const HANDOFF_MAX_AGE_MS = 120_000;

/** Taken by the refresh just before the write that sets an operation. */
export interface HandoffTicket {
  readonly n: number;
  readonly at: number;
}

export class OperationHandoff {
  readonly #byKey = new Map<string, { raw: RawApplication; ticket: HandoffTicket }>();
  /** When each Application's last operation run began (the clock's count and the time). */
  readonly #runs = new Map<string, HandoffTicket>();
  #clock = 0;
  #lastForget = 0;
  readonly #maxAgeMs: number;
  readonly #now: () => number;

  constructor(opts: { maxAgeMs?: number; now?: () => number } = {}) {
    this.#maxAgeMs = opts.maxAgeMs ?? HANDOFF_MAX_AGE_MS;
    this.#now = opts.now ?? (() => performance.now());
  }

  /** Before the write that sets an operation. */
  ticket(): HandoffTicket {
    return { n: ++this.#clock, at: this.#now() };
  }

  /** `stored`: the API server's answer to that write (a copy is kept), unless the ticket is spent. */
  give(key: string, stored: RawApplication, ticket: HandoffTicket): void {
    const now = this.#now();
    this.#sweep(now);
    if (!this.#valid(key, ticket, now)) return;
    this.#byKey.set(key, { raw: structuredClone(stored), ticket });
  }

  /**
   * At the start of every operation run of `key`: what was handed over for it, when the watch's
   * copy (`cached`) is that same version and its ticket still holds; undefined otherwise (read the
   * Application). Either way, later gives under older tickets are refused.
   */
  take(key: string, cached: { metadata: { resourceVersion?: string } } | undefined): RawApplication | undefined {
    const now = this.#now();
    const handed = this.#byKey.get(key);
    this.#byKey.delete(key);
    const valid = handed !== undefined && this.#valid(key, handed.ticket, now);
    // Kept in the order runs began (the sweep stops at the first young one).
    this.#runs.delete(key);
    this.#runs.set(key, { n: ++this.#clock, at: now });
    if (!valid) return undefined;
    const rv = handed.raw.metadata.resourceVersion;
    if (rv === undefined || cached?.metadata.resourceVersion !== rv) return undefined;
    return handed.raw;
  }

  /**
   * At the end of every operation run of `key`, whatever its outcome: what was handed over while
   * it ran is spent (it may have read the Application after that write, and finished the
   * operation), and so is every ticket taken before.
   */
  ended(key: string): void {
    this.#byKey.delete(key);
    this.#runs.delete(key);
    this.#runs.set(key, { n: ++this.#clock, at: this.#now() });
  }

  /** A shard went elsewhere (or its handlers ended): nothing handed over is taken, nor given under an earlier ticket. */
  forget(matches: (key: string) => boolean): void {
    this.#lastForget = ++this.#clock;
    for (const key of [...this.#byKey.keys()]) if (matches(key)) this.#byKey.delete(key);
  }

  get size(): number {
    return this.#byKey.size + this.#runs.size;
  }

  #valid(key: string, ticket: HandoffTicket, now: number): boolean {
    if (now - ticket.at > this.#maxAgeMs || ticket.n < this.#lastForget) return false;
    const run = this.#runs.get(key);
    return run === undefined || run.n < ticket.n;
  }

  /**
   * Runs and handoffs older than the age limit refuse and give nothing any more: a ticket older
   * than a run that old is refused by its age alone.
   */
  #sweep(now: number): void {
    for (const [k, v] of this.#runs) {
      if (now - v.at <= this.#maxAgeMs) break;
      this.#runs.delete(k);
    }
    if (this.#byKey.size < 64) return;
    for (const [k, v] of this.#byKey) if (now - v.ticket.at > this.#maxAgeMs) this.#byKey.delete(k);
  }
}
