// The renderer's answers for inputs it has rendered, kept by bytes (least recently used first out):
// an unchanged Application at an unchanged commit is answered without rendering again.
import { ByteLru } from '../source/byte-lru.ts';
import type { EncodedAnswer } from './answer.ts';

export class AnswerCache {
  readonly #entries: ByteLru<EncodedAnswer>;

  constructor(maxBytes: number) {
    // One answer may not push out everything else.
    this.#entries = new ByteLru(maxBytes, maxBytes / 4);
  }

  get(key: string): EncodedAnswer | undefined {
    return this.#entries.get(key);
  }

  set(key: string, answer: EncodedAnswer): void {
    this.#entries.set(key, answer, answer.body.length);
  }

  get bytes(): number {
    return this.#entries.bytes;
  }
}
