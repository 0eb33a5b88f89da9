// Remembered dry-run answers of one DestinationClient. A dry-run apply's answer depends on the
// object sent, the live object it lands on and who asks; while all three are unchanged it is
// reused rather than asked again. "Who asks" is the client's identity and the Application the
// request is made for (its Impersonate-Extra, kube/attribution.ts: an admission policy may answer
// per Application), not the revision: a new commit that sends the same body gets the same answer.
// The hour bounds what none of these show (a CRD's new defaults, a webhook's new mutation).
//
// The answers of all of a factory's clients are kept in one store, by their bytes (least recently
// used first out, no client holding more than a quarter): each answer is as large as the object a tenant renders, and a count of
// answers bounded nothing (10,000 per identity were kept before, whatever their size). A forgotten
// answer is asked again, at the cost of a request.
import { createHash } from 'node:crypto';
import type { KubeObject } from '../api/index.ts';

const DRY_RUN_MEMO_MS = 3_600_000;
/** Bytes of dry-run answers remembered by one factory's clients together, by default. */
export const DRY_RUN_MEMO_BYTES = 128 * 1024 * 1024;
/** What a remembered answer costs besides its characters: the keys, the record, the warnings' array. */
const MEMO_OVERHEAD_BYTES = 256;
/** A character beyond Latin-1: a string with none V8 keeps at one byte a character. */
const BEYOND_LATIN1 = /[\u0100-\uffff]/;

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

interface Entry {
  readonly owner: string;
  readonly path: string;
  readonly memo: Memo;
  readonly bytes: number;
}

/**
 * The answers of many clients, by client (its owner name) and object path, within `maxBytes`: no
 * owner holds more than a quarter of it (its own oldest go first), an answer over an eighth is not
 * kept, and past the whole the least recently used go, whoever's. One tenant's large or changing
 * objects so push out its own answers, not everyone's.
 */
export class DryRunMemoStore {
  readonly #maxBytes: number;
  /** Every entry, least recently used first. */
  readonly #order = new Map<Entry, true>();
  readonly #owners = new Map<string, { bytes: number; entries: Map<string, Entry> }>();
  #bytes = 0;

  constructor(maxBytes: number = DRY_RUN_MEMO_BYTES) {
    this.#maxBytes = Math.max(0, maxBytes);
  }

  get(owner: string, path: string): Memo | undefined {
    return this.#owners.get(owner)?.entries.get(path)?.memo;
  }

  /** The answer was used: it goes last, in the whole store's order and in its owner's. */
  use(owner: string, path: string): void {
    const o = this.#owners.get(owner);
    const e = o?.entries.get(path);
    if (!o || !e) return;
    this.#order.delete(e);
    this.#order.set(e, true);
    o.entries.delete(path);
    o.entries.set(path, e);
  }

  set(owner: string, path: string, memo: Memo): void {
    this.delete(owner, path);
    // V8 holds a string of Latin-1 characters at a byte each, any other at two: the answer (most of
    // the bytes) is counted as it is held, the names at two bytes a character.
    const jsonBytes = BEYOND_LATIN1.test(memo.json) ? 2 * memo.json.length : memo.json.length;
    let bytes =
      MEMO_OVERHEAD_BYTES + jsonBytes + 2 * (owner.length + path.length + memo.request.length + memo.liveRv.length);
    for (const w of memo.warnings) bytes += 2 * w.length;
    if (bytes > this.#maxBytes / 8) return;
    let o = this.#owners.get(owner);
    if (!o) {
      o = { bytes: 0, entries: new Map() };
      this.#owners.set(owner, o);
    }
    for (const e of o.entries.values()) {
      if (o.bytes + bytes <= this.#maxBytes / 4) break;
      this.#remove(e);
    }
    for (const e of this.#order.keys()) {
      if (this.#bytes + bytes <= this.#maxBytes) break;
      this.#remove(e);
    }
    // The owner's record may have gone with its last entry.
    if (!this.#owners.has(owner)) this.#owners.set(owner, o);
    const entry: Entry = { owner, path, memo, bytes };
    o.entries.set(path, entry);
    o.bytes += bytes;
    this.#order.set(entry, true);
    this.#bytes += bytes;
  }

  delete(owner: string, path: string): void {
    const e = this.#owners.get(owner)?.entries.get(path);
    if (e) this.#remove(e);
  }

  #remove(e: Entry): void {
    this.#order.delete(e);
    const o = this.#owners.get(e.owner);
    if (o && o.entries.get(e.path) === e) {
      o.entries.delete(e.path);
      o.bytes -= e.bytes;
      if (o.entries.size === 0) this.#owners.delete(e.owner);
    }
    this.#bytes -= e.bytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#order.size;
  }

  /** What `owner` holds, for tests. */
  ownerBytes(owner: string): number {
    return this.#owners.get(owner)?.bytes ?? 0;
  }
}

/** One client's view of the store: its answers, under its own owner name. */
export class DryRunMemo {
  readonly #store: DryRunMemoStore;
  readonly #owner: string;

  /** `owner`: the client's name in the store, one per credential, server and identity. */
  constructor(store: DryRunMemoStore = new DryRunMemoStore(), owner = '') {
    this.#store = store;
    this.#owner = owner;
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
    const hit = this.#store.get(this.#owner, path);
    if (!hit) return undefined;
    if (Date.now() - hit.at >= DRY_RUN_MEMO_MS) {
      this.#store.delete(this.#owner, path);
      return undefined;
    }
    if (hit.liveRv !== liveRv || hit.request !== request) return undefined;
    this.#store.use(this.#owner, path);
    return { value: JSON.parse(hit.json) as KubeObject, warnings: hit.warnings };
  }

  remember(path: string, memo: Omit<Memo, 'at' | 'json'> & { value: KubeObject }): void {
    const { value, ...rest } = memo;
    this.#store.set(this.#owner, path, { ...rest, json: JSON.stringify(value), at: Date.now() });
  }
}
