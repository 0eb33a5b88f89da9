// Remembered dry-run answers of one DestinationClient. A dry-run apply's answer depends on the
// object sent, the live object it lands on and who asks; while all three are unchanged it is
// reused rather than asked again. "Who asks" is the client's identity and the Application the
// request is made for (its Impersonate-Extra, kube/attribution.ts: an admission policy may answer
// per Application), not the revision: a new commit that sends the same body gets the same answer.
// The hour bounds what none of these show (a CRD's new defaults, a webhook's new mutation).
import { createHash } from 'node:crypto';
import type { KubeObject } from '../api/index.ts';

const DRY_RUN_MEMO_MS = 3_600_000;
const DRY_RUN_MEMO_MAX = 10_000;

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

export class DryRunMemo {
  // object path → its last answer; oldest first, for eviction.
  readonly #memos = new Map<string, Memo>();

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
    const hit = this.#memos.get(path);
    if (!hit || hit.liveRv !== liveRv || hit.request !== request || Date.now() - hit.at >= DRY_RUN_MEMO_MS)
      return undefined;
    return { value: JSON.parse(hit.json) as KubeObject, warnings: hit.warnings };
  }

  remember(path: string, memo: Omit<Memo, 'at' | 'json'> & { value: KubeObject }): void {
    const { value, ...rest } = memo;
    this.#memos.delete(path);
    this.#memos.set(path, { ...rest, json: JSON.stringify(value), at: Date.now() });
    if (this.#memos.size > DRY_RUN_MEMO_MAX) {
      const oldest = this.#memos.keys().next();
      if (!oldest.done) this.#memos.delete(oldest.value);
    }
  }
}
