// A mutex per key (one per repository): git commands on one local clone run one at a time, while
// different repositories proceed in parallel.

export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  /** Whether someone holds `key` or waits for it. */
  busy(key: string): boolean {
    return this.#tails.has(key);
  }

  /** Runs `fn` once every earlier holder of `key` has finished (whether it succeeded or not). */
  async with<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => {
      release = r;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      // The last holder leaves nothing behind, so the map does not grow with every repository ever seen.
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
