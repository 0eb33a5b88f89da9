// The renderer's answers for inputs it has rendered, kept by bytes (least recently used first out):
// an unchanged Application at an unchanged commit is answered without rendering again. An answer
// kept under two keys (its commit's and its folder content's: server.ts) is counted once: the
// second key is a name of the first's entry, counted as the two names, and good only while that
// entry holds the answer it named (a name never keeps an answer in memory by itself).
import { ByteLru } from '../source/byte-lru.ts';
import type { EncodedAnswer } from './answer.ts';

type Entry = { answer: EncodedAnswer; stamp: number } | { alias: string; stamp: number };

export class AnswerCache {
  readonly #entries: ByteLru<Entry>;
  /** Each answer kept gets its own stamp: an alias names one answer, not whatever its key holds later. */
  #stamps = 0;

  constructor(maxBytes: number) {
    // One answer may not push out everything else.
    this.#entries = new ByteLru(maxBytes, maxBytes / 4);
  }

  get(key: string): EncodedAnswer | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if ('answer' in entry) return entry.answer;
    const target = this.#entries.get(entry.alias);
    return target && 'answer' in target && target.stamp === entry.stamp ? target.answer : undefined;
  }

  set(key: string, answer: EncodedAnswer): void {
    this.#entries.set(key, { answer, stamp: ++this.#stamps }, answer.body.length);
  }

  /** Keeps `key` as another name of the answer `target` holds now (nothing, when it holds none). */
  alias(key: string, target: string): void {
    const held = this.#entries.get(target);
    if (!held || !('answer' in held)) return;
    // Its own key and record are counted by the map; the value is the name it holds.
    this.#entries.set(key, { alias: target, stamp: held.stamp }, 2 * target.length);
  }

  get bytes(): number {
    return this.#entries.bytes;
  }
}
