// The API server's answer to the write that started an automated sync (reconciler.ts: `operation`
// and its Running state in the comparison's own write), handed to the operation worker.
//
// The worker never starts an operation from the watch's copy of the Application, which may be
// behind what this controller itself wrote (a finished operation would run again); it reads the
// Application from the API server first, as Argo CD's controller does. The answer to the write
// that set the operation is such a read, made a moment earlier: the worker takes it instead of a
// GET while the watch shows that same version of the Application (nothing newer written by anyone
// since, as far as the watch has told) and it is at most a few seconds old. Otherwise, or when the
// watch is ahead, the worker reads as before. Any write the worker makes carries the version it
// started from, so a change meanwhile is a conflict, read again; a terminate aborts the step.
import type { RawApplication } from './applications.ts';

/** How old a handed-over Application may be for the worker to take it. */
export const HANDOFF_MAX_AGE_MS = 30_000;

export class OperationHandoff {
  readonly #byKey = new Map<string, { raw: RawApplication; at: number }>();
  readonly #maxAgeMs: number;
  readonly #now: () => number;

  constructor(opts: { maxAgeMs?: number; now?: () => number } = {}) {
    this.#maxAgeMs = opts.maxAgeMs ?? HANDOFF_MAX_AGE_MS;
    this.#now = opts.now ?? Date.now;
  }

  /** `stored`: the API server's answer to the write that set the operation of `key` (a copy is kept). */
  give(key: string, stored: RawApplication): void {
    const now = this.#now();
    // Those never taken (the Application deleted meanwhile, another worker's read first) go here.
    if (this.#byKey.size >= 64)
      for (const [k, v] of this.#byKey) if (now - v.at > this.#maxAgeMs) this.#byKey.delete(k);
    this.#byKey.delete(key);
    this.#byKey.set(key, { raw: structuredClone(stored), at: now });
  }

  /**
   * The Application handed over for `key`, when the watch's copy (`cached`) is that same version
   * and it is young enough; undefined otherwise. Taken once either way.
   */
  take(key: string, cached: { metadata: { resourceVersion?: string } } | undefined): RawApplication | undefined {
    const handed = this.#byKey.get(key);
    if (!handed) return undefined;
    this.#byKey.delete(key);
    const rv = handed.raw.metadata.resourceVersion;
    if (rv === undefined || cached?.metadata.resourceVersion !== rv) return undefined;
    if (this.#now() - handed.at > this.#maxAgeMs) return undefined;
    return handed.raw;
  }

  /** The keys whose shard went elsewhere: nothing handed over for them is taken later. */
  forget(matches: (key: string) => boolean): void {
    for (const key of [...this.#byKey.keys()]) if (matches(key)) this.#byKey.delete(key);
  }

  get size(): number {
    return this.#byKey.size;
  }
}
