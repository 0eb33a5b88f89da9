// Remembered dry-run answers of one DestinationClient. A dry-run apply's answer depends on the
// object sent, the live object it lands on and who asks; while all three are unchanged it is
// reused rather than asked again. "Who asks" is the client's identity and the Application the
// request is made for (its Impersonate-Extra, kube/attribution.ts: an admission policy may answer
// per Application), not the revision: a new commit that sends the same body gets the same answer.
// The hour bounds what none of these show (a CRD's new defaults, a webhook's new mutation).
//
// The answers of all of a factory's clients are kept in one store, by their bytes (least recently
// remembered first out): each answer is as large as the object a tenant renders, and a count of
// answers bounded nothing (10,000 per identity were kept before, whatever their size). A forgotten
// answer is asked again, at the cost of a request.
import { createHash } from 'node:crypto';
import type { KubeObject } from '../api/index.ts';

const DRY_RUN_MEMO_MS = 3_600_000;
/** Bytes of dry-run answers remembered by one factory's clients together, by default. */
export const DRY_RUN_MEMO_BYTES = 128 * 1024 * 1024;
/** What a remembered answer costs besides its characters: the keys, the record, the warnings' array. */
const MEMO_OVERHEAD_BYTES = 256;

interface Memo {
  liveRv: string;
  request: string;
  at: number;
  /**
   * The answer as JSON: each lookup parses its own copy. Text is about a tenth of the memory of
   * the parsed object, and stringifying and parsing an object of 88,000 keys takes about half the
   * time of the deep copies kept before.
   */
  json: string;
  warnings: readonly string[];
}

/** The answers of many clients, by client and object path, within `maxBytes` (an answer over an eighth of it is not kept). */
export class DryRunMemoStore {
  readonly #maxBytes: number;
  readonly #memos = new Map<string, { memo: Memo; bytes: number }>();
  #bytes = 0;

  constructor(maxBytes: number = DRY_RUN_MEMO_BYTES) {
    this.#maxBytes = Math.max(0, maxBytes);
  }

  get(key: string): Memo | undefined {
    return this.#memos.get(key)?.memo;
  }

  set(key: string, memo: Memo): void {
    this.delete(key);
    // Strings are counted as two bytes a character: an answer that is not ASCII is held so.
    let bytes = MEMO_OVERHEAD_BYTES + 2 * (key.length + memo.request.length + memo.json.length + memo.liveRv.length);
    for (const w of memo.warnings) bytes += 2 * w.length;
    if (bytes > this.#maxBytes / 8) return;
    for (const [k, v] of this.#memos) {
      if (this.#bytes + bytes <= this.#maxBytes) break;
      this.#memos.delete(k);
      this.#bytes -= v.bytes;
    }
    this.#memos.set(key, { memo, bytes });
    this.#bytes += bytes;
  }

  delete(key: string): void {
    const old = this.#memos.get(key);
    if (!old) return;
    this.#memos.delete(key);
    this.#bytes -= old.bytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#memos.size;
  }
}

/** One client's view of the store: its answers, under its own prefix. */
export class DryRunMemo {
  readonly #store: DryRunMemoStore;
  readonly #prefix: string;

  constructor(store: DryRunMemoStore = new DryRunMemoStore(), prefix = '') {
    this.#store = store;
    this.#prefix = `${prefix}\n`;
  }

  /** What a dry-run of `body` with `query`, made for `scope`, would send: the memo's key. */
  static requestKey(query: Record<string, string | undefined>, body: string, scope: string): string {
    return createHash('sha256')
      .update(JSON.stringify({ ...query, dryRun: 'All' }))
      .update('\n')
      .update(scope)
      .update('\n')
      .update(body)
      .digest('base64');
  }

  /** The remembered answer for `path` when it was given to `request` on the live object at `liveRv`. */
  lookup(
    path: string,
    request: string,
    liveRv: string,
  ): { value: KubeObject; warnings: readonly string[] } | undefined {
    const key = this.#prefix + path;
    const hit = this.#store.get(key);
    if (!hit) return undefined;
    if (Date.now() - hit.at >= DRY_RUN_MEMO_MS) {
      this.#store.delete(key);
      return undefined;
    }
    if (hit.liveRv !== liveRv || hit.request !== request) return undefined;
    return { value: JSON.parse(hit.json) as KubeObject, warnings: hit.warnings };
  }

  remember(path: string, memo: Omit<Memo, 'at' | 'json'> & { value: KubeObject }): void {
    const { value, ...rest } = memo;
    this.#store.set(this.#prefix + path, { ...rest, json: JSON.stringify(value), at: Date.now() });
  }
}
