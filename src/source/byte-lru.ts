// A map kept by bytes, least recently used first out: the renderer's remembered answers, Helm
// indexes, OCI tags and Git refs. What tenants make the renderer remember is bounded by what it
// costs, never by a count of entries that can each be as large as a server cares to make them.
// An entry costs its key and its record too, so that values counted as nothing (an empty listing
// under a URL a tenant picks) cannot pile up without bound.

/** What an entry costs besides its value's bytes and its key's characters: the Map slot and the record. */
export const ENTRY_OVERHEAD_BYTES = 128;

export class ByteLru<V> {
  readonly #maxBytes: number;
  readonly #maxEntryBytes: number;
  readonly #entries = new Map<string, { value: V; bytes: number }>();
  #bytes = 0;

  /** `maxEntryBytes`: a larger value is not kept, so that one cannot push out everything else. */
  constructor(maxBytes: number, maxEntryBytes: number = maxBytes) {
    this.#maxBytes = maxBytes;
    this.#maxEntryBytes = Math.min(maxEntryBytes, maxBytes);
  }

  get(key: string): V | undefined {
    const hit = this.#entries.get(key);
    if (!hit) return undefined;
    // Most recently used goes last (a Map keeps insertion order).
    this.#entries.delete(key);
    this.#entries.set(key, hit);
    return hit.value;
  }

  /** Whether a value of `valueBytes` under `key` may be kept at all (it is not larger than an entry may be). */
  fits(key: string, valueBytes: number): boolean {
    return valueBytes + 2 * key.length + ENTRY_OVERHEAD_BYTES <= this.#maxEntryBytes;
  }

  /** Keeps `value`, counted as `bytes`; the least recently used go until it fits. */
  set(key: string, value: V, valueBytes: number): void {
    this.delete(key);
    if (!this.fits(key, valueBytes)) return;
    const bytes = valueBytes + 2 * key.length + ENTRY_OVERHEAD_BYTES;
    for (const [k, v] of this.#entries) {
      if (this.#bytes + bytes <= this.#maxBytes) break;
      this.#entries.delete(k);
      this.#bytes -= v.bytes;
    }
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
  }

  delete(key: string): void {
    const old = this.#entries.get(key);
    if (!old) return;
    this.#entries.delete(key);
    this.#bytes -= old.bytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }
}
