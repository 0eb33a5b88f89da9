// What the live-object watches may hold, together and each (kube/live-cache.ts). A watch lists
// every object of its kind in its namespace, not only those an Application manages, and whoever
// may write there (a tenant, or a Job its Application runs) decides how many and how large: 2,000
// ConfigMaps of 1 MB in one namespace would be 2 GB in the controller. So what the watches' objects
// take in memory is estimated from their JSON as it arrives, before it is kept (heldBy), and:
// - one watch may hold at most `perWatchBytes`: past that it ends, and its objects are read one by
//   one from the server when a comparison needs them, as for a kind the identity may not watch;
// - all together at most `totalBytes`: a watch that would take them past it ends the largest
//   watches first (itself, when it is the largest), so one tenant's large namespaces give way
//   before another's small ones.
// A watch that ended is asked again later (live-cache.ts, as after a refusal).

/**
 * What V8 holds for each object, list, element and field a JSON text opens (each `{`, `[`, `,`
 * and `:` outside its strings), beyond the text itself. Parsed, a list of 300,000 empty objects
 * takes 21 times its JSON and a ConfigMap of 100,000 empty values 6.9 times, where a Deployment
 * takes 1.8 times and a long string once (twice, with a character past Latin-1, which the
 * estimate counts twice): with 32, the estimate is 1.0-5.0 times what the heap holds for each of
 * them (test/kube/store-budget.test.ts).
 */
export const HELD_PER_STRUCTURE = 32;

/** Estimates what parsing a JSON text fed in chunks will hold (HELD_PER_STRUCTURE). */
export class HeldEstimate {
  #bytes = 0;
  #inString = false;
  #escaped = false;

  get bytes(): number {
    return this.#bytes;
  }

  /** Adds `chunk` (the text's next part); returns the estimate so far. */
  add(chunk: string): number {
    let opened = 0;
    // A string with any character past Latin-1 is kept two bytes a character.
    let wide = 0;
    let inString = this.#inString;
    let escaped = this.#escaped;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (c > 0xff) wide++;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 92) escaped = true;
        else if (c === 34) inString = false;
      } else if (c === 34) inString = true;
      else if (c === 123 || c === 91 || c === 44 || c === 58) opened++;
    }
    this.#inString = inString;
    this.#escaped = escaped;
    this.#bytes += chunk.length + wide + HELD_PER_STRUCTURE * opened;
    return this.#bytes;
  }
}

/** What parsing the whole JSON text `text` will hold, by HeldEstimate. */
export function heldBy(text: string): number {
  return new HeldEstimate().add(text);
}

export interface StoreBudgetOptions {
  totalBytes: number;
  /** Default: a quarter of `totalBytes`. */
  perWatchBytes?: number;
}

export class StoreBudget {
  readonly totalBytes: number;
  readonly perWatchBytes: number;
  readonly #held = new Map<object, { bytes: number; evict: () => void }>();
  #used = 0;

  constructor(opts: StoreBudgetOptions) {
    this.totalBytes = Math.max(1, Math.floor(opts.totalBytes));
    this.perWatchBytes = Math.max(1, Math.floor(opts.perWatchBytes ?? this.totalBytes / 4));
  }

  /** Bytes held by all watches now. */
  get used(): number {
    return this.#used;
  }

  /** Watches holding any bytes. */
  get watches(): number {
    return this.#held.size;
  }

  /**
   * `owner` would hold `bytes` now. False, and nothing held for it: past its own bound, or it is
   * the largest of what would pass the total. Otherwise the largest other watches are ended
   * (`evict`) until it fits. 0 releases what `owner` holds.
   */
  hold(owner: object, bytes: number, evict: () => void): boolean {
    this.release(owner);
    if (bytes <= 0) return true;
    if (bytes > this.perWatchBytes) return false;
    while (this.#used + bytes > this.totalBytes) {
      let largest: [object, { bytes: number; evict: () => void }] | undefined;
      for (const entry of this.#held) if (!largest || entry[1].bytes > largest[1].bytes) largest = entry;
      if (!largest || largest[1].bytes <= bytes) return false;
      this.release(largest[0]);
      largest[1].evict();
    }
    this.#held.set(owner, { bytes, evict });
    this.#used += bytes;
    return true;
  }

  release(owner: object): void {
    const held = this.#held.get(owner);
    if (!held) return;
    this.#used -= held.bytes;
    this.#held.delete(owner);
  }
}
