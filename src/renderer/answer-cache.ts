// The renderer's answers for inputs it has rendered, kept by bytes (least recently used first out):
// an unchanged Application at an unchanged commit is answered without rendering again.
import type { EncodedAnswer } from './answer.ts';

export class AnswerCache {
  readonly #maxBytes: number;
  readonly #entries = new Map<string, EncodedAnswer>();
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  get(key: string): EncodedAnswer | undefined {
    const hit = this.#entries.get(key);
    if (hit) {
      // Most recently used goes last (Map keeps insertion order).
      this.#entries.delete(key);
      this.#entries.set(key, hit);
    }
    return hit;
  }

  set(key: string, answer: EncodedAnswer): void {
    if (answer.body.length > this.#maxBytes / 4) return; // one answer may not push out everything else
    const old = this.#entries.get(key);
    if (old) {
      this.#bytes -= old.body.length;
      this.#entries.delete(key);
    }
    this.#entries.set(key, answer);
    this.#bytes += answer.body.length;
    for (const [k, v] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#entries.delete(k);
      this.#bytes -= v.body.length;
    }
  }

  get bytes(): number {
    return this.#bytes;
  }
}
