// The live objects one identity reads, kept by watches instead of fetched on every comparison.
//
// One list+watch per namespaced collection the identity has read (for instance the Deployments of
// namespace team-a as system:serviceaccount:team-a:deployer), started on the first read, made as
// that identity (so it sees exactly what a GET would), stopped after it goes unused. Reads are
// answered from the watch once it has listed (with `streamingList`, the list is the watch's initial
// events: one request, not two); until then, for cluster-scoped kinds, for kinds the
// identity may not list or watch (a 403 stops that watch, retried later), and for an object this
// client has just written and the watch has not yet shown, the caller GETs as before.
//
// Watch events other than the echo of our own writes are reported through `onChange`, which the
// controller turns into a refresh of the Application that tracks the object: a live edit is seen
// in seconds, not at the next periodic refresh.
import type { KubeObject } from '../api/index.ts';
import { runShared } from './request-context.ts';
import type { ResourceInfo } from './types.ts';
import type { StoreBudget } from './store-budget.ts';
import { StoreTooLargeError, Watch } from './watch.ts';
import type { WatchEvent, WatchHttpError, WatchTransport } from './watch.ts';

export interface LiveCacheOptions {
  /** A change made by someone else to a cached object (not reported for the initial list). */
  /** A change someone else made: the object now, and as it was when it was modified (absent when new or deleted). */
  onChange?: ((object: KubeObject, old: KubeObject | undefined) => void) | undefined;
  /** A watch not read for this long is stopped (default 30 min); longer than a refresh interval. */
  idleMs?: (() => number) | undefined;
  /** After a 403 or 404 on list/watch, reads of that collection go to the server for this long (default 10 min). */
  refusedRetryMs?: number | undefined;
  /** Server-side watch timeout; renewing costs one request, so it is long (default 30-60 min, random). */
  watchTimeoutSeconds?: (() => number) | undefined;
  onError?: ((collection: string, err: Error) => void) | undefined;
  /** Every watch event after the initial list, echoes of our own writes included (argocd_cluster_events_total). */
  onEvent?: ((apiVersion: string, kind: string) => void) | undefined;
  /**
   * List as the watch's initial events (sendInitialEvents): one request per collection instead of a
   * LIST and a WATCH. The first watch a server refuses it to makes this cache list the classic way.
   */
  streamingList?: boolean | undefined;
  /**
   * What the watches' objects may hold (store-budget.ts), shared by every identity's cache: a watch
   * past it ends, and its collection is read from the server, as one refused, until asked again.
   */
  storeBudget?: StoreBudget | undefined;
}

/** What the watches hold, for Argo CD's cluster metrics. */
export interface LiveCacheStats {
  objects: number;
  /** `apiVersion kind` of each resource watched. */
  resources: Set<string>;
  /** When the oldest running watch started; undefined: none runs. */
  oldestStart: number | undefined;
}

export type Lookup = { readonly hit: true; readonly object: KubeObject | null } | { readonly hit: false };

const MISS: Lookup = { hit: false };
// Our own write not yet seen by the watch: after this long, stop waiting for its echo.
const PENDING_WRITE_MS = 60_000;
// How often a read waiting for a watch's first list (or our write's echo) looks again.
const LOOKUP_POLL_MS = 10;

interface Entry {
  watch: Watch | undefined;
  startedAt?: number;
  resource?: string;
  /** The watch has been seen delivering: a pause after is a reconnect, not its first start. */
  streamed: boolean;
  lastUsed: number;
  refusedUntil: number;
}

function rvOf(o: KubeObject): string | undefined {
  const rv = o.metadata.resourceVersion;
  return typeof rv === 'string' && rv !== '' ? rv : undefined;
}

function nameOf(o: { metadata: { name: string } }): string {
  return o.metadata.name;
}

const DECIMAL = /^[1-9][0-9]*$/;

/**
 * `have` is the version `want` or a later one. kube-apiserver's resourceVersions are etcd
 * revisions, decimal and increasing; any other form is only ever equal or not. The watch can show
 * our write, and the next change someone made (a Deployment's controller updating it at once),
 * before the write's own answer is read: the object is then past our version, never at it.
 */
function atLeast(have: string | undefined, want: string): boolean {
  if (have === undefined) return false;
  if (have === want) return true;
  if (!DECIMAL.test(have) || !DECIMAL.test(want)) return false;
  return have.length !== want.length ? have.length > want.length : have > want;
}

export class LiveObjectCache {
  readonly #transport: WatchTransport;
  readonly #opts: LiveCacheOptions;
  readonly #entries = new Map<string, Entry>();
  // `${collection}/${name}` → the resourceVersion our write produced (null: we deleted it).
  readonly #pending = new Map<string, { rv: string | null; at: number }>();
  readonly #sweeper: NodeJS.Timeout;
  // Whether the server streams lists as initial events, shared by this identity's watches.
  readonly #streamingList: { supported: boolean | undefined } | undefined;
  #closed = false;

  constructor(transport: WatchTransport, opts: LiveCacheOptions = {}) {
    this.#transport = transport;
    this.#opts = opts;
    this.#streamingList = opts.streamingList ? { supported: undefined } : undefined;
    this.#sweeper = setInterval(() => this.#sweep(), 60_000);
    this.#sweeper.unref();
  }

  /** Watches currently running (for metrics and tests). */
  get watchCount(): number {
    let n = 0;
    for (const e of this.#entries.values()) if (e.watch) n++;
    return n;
  }

  /** Objects held, resources covered and the age of the watches. */
  stats(): LiveCacheStats {
    const out: LiveCacheStats = { objects: 0, resources: new Set(), oldestStart: undefined };
    for (const e of this.#entries.values()) {
      if (!e.watch) continue;
      out.objects += e.watch.store.size;
      if (e.resource) out.resources.add(e.resource);
      if (e.startedAt !== undefined && (out.oldestStart === undefined || e.startedAt < out.oldestStart))
        out.oldestStart = e.startedAt;
    }
    return out;
  }

  /**
   * The live object from the cache (null: the watch knows it does not exist), or a miss: the
   * caller reads it from the server. A read also starts the collection's watch.
   */
  lookup(info: ResourceInfo, collection: string, name: string): Lookup {
    const cached = this.#peek(info, collection, name);
    if (cached === undefined) return MISS;
    return { hit: true, object: cached ? structuredClone(cached) : null };
  }

  /**
   * As `lookup`, but a miss only because the collection's watch is still making its first list,
   * or because the watch has not yet shown this client's own write, waits for it (up to `waitMs`,
   * checking every few milliseconds) instead of sending the caller to the server: the answer is
   * then as current as a GET, without the GET. A watch refused, in backoff or silent is not waited
   * for.
   */
  async lookupSoon(info: ResourceInfo, collection: string, name: string, waitMs: number): Promise<Lookup> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const first = this.lookup(info, collection, name);
      if (first.hit || !this.#worthWaiting(collection, name) || Date.now() >= deadline) return first;
      await new Promise((r) => setTimeout(r, LOOKUP_POLL_MS));
    }
  }

  #worthWaiting(collection: string, name: string): boolean {
    const entry = this.#entries.get(collection);
    if (this.#closed || !entry?.watch) return false;
    // Starting (making its first list, or listed and opening its stream), or delivering with our
    // write not yet shown. A watch that delivered before and is reconnecting is not waited for.
    if (!entry.watch.streaming) return !entry.streamed;
    return this.#pending.has(`${collection}/${name}`);
  }

  /**
   * The resourceVersion the cache holds for an object, '' when it knows the object is absent, or
   * undefined when it cannot say (no delivering watch, a write in flight). For memoised dry-runs.
   */
  resourceVersion(info: ResourceInfo, collection: string, name: string): string | undefined {
    const cached = this.#peek(info, collection, name);
    if (cached === undefined) return undefined;
    return cached ? rvOf(cached) : '';
  }

  /** The cached object itself (not a copy), null when known absent, undefined on a miss. */
  #peek(info: ResourceInfo, collection: string, name: string): KubeObject | null | undefined {
    if (this.#closed || !info.namespaced || !collection.includes('/namespaces/')) return undefined;
    if (!info.verbs.includes('list') || !info.verbs.includes('watch')) return undefined;
    const now = Date.now();
    let entry = this.#entries.get(collection);
    if (!entry) {
      entry = { watch: undefined, streamed: false, lastUsed: now, refusedUntil: 0 };
      this.#entries.set(collection, entry);
    }
    entry.lastUsed = now;
    if (!entry.watch) {
      if (now >= entry.refusedUntil) entry.watch = this.#start(collection, info, entry);
      return undefined;
    }
    // Only while a stream is delivering (which follows a complete list): a watch in backoff,
    // relisting or gone silent may be missing changes, and a stale object would compare as Synced.
    if (!entry.watch.streaming) return undefined;
    entry.streamed = true;
    const key = `${collection}/${name}`;
    const cached =
      (entry.watch.store.get(`${this.#namespaceOf(collection)}/${name}`) as KubeObject | undefined) ?? null;
    const pending = this.#pending.get(key);
    if (pending) {
      const caughtUp = pending.rv === null ? cached === null : cached !== null && atLeast(rvOf(cached), pending.rv);
      if (!caughtUp && now - pending.at < PENDING_WRITE_MS) return undefined;
      this.#pending.delete(key);
      if (!caughtUp) return undefined;
    }
    return cached;
  }

  /** This client wrote (or deleted: null) the object; reads wait for the watch to show it. */
  noteWrite(collection: string, name: string, result: KubeObject | null): void {
    const entry = this.#entries.get(collection);
    if (!entry) return;
    const rv = result ? rvOf(result) : null;
    if (rv === undefined) return;
    // The watch may have shown it already, and what came after it.
    const held = entry.watch?.store.get(`${this.#namespaceOf(collection)}/${name}`) as KubeObject | undefined;
    if (rv !== null && held && atLeast(rvOf(held), rv)) return;
    this.#pending.set(`${collection}/${name}`, { rv, at: Date.now() });
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweeper);
    const watches = [...this.#entries.values()].map((e) => e.watch).filter((w): w is Watch => w !== undefined);
    this.#entries.clear();
    this.#pending.clear();
    await Promise.all(watches.map((w) => w.stop()));
  }

  #namespaceOf(collection: string): string {
    const m = /\/namespaces\/([^/]+)\//.exec(collection);
    return m ? decodeURIComponent(m[1] ?? '') : '';
  }

  /** The watch of `entry` ends: its collection is read from the server until asked again later. */
  #refuse(collection: string, entry: Entry, err: WatchHttpError): void {
    entry.watch = undefined;
    entry.streamed = false;
    entry.refusedUntil = Date.now() + (this.#opts.refusedRetryMs ?? 600_000);
    this.#opts.onError?.(collection, err);
  }

  #start(collection: string, info: ResourceInfo, entry: Entry): Watch {
    const timeout = this.#opts.watchTimeoutSeconds?.() ?? 1800 + Math.floor(Math.random() * 1800);
    const budget = this.#opts.storeBudget;
    // What the budget knows this watch by (the watch itself is made below).
    const owner = {};
    const evict = () => {
      if (entry.watch !== watch) return;
      const mib = (budget?.totalBytes ?? 0) / 2 ** 20;
      this.#refuse(
        collection,
        entry,
        new StoreTooLargeError(
          `watch ${collection}: ended to keep the live-object watches within ${mib.toFixed(0)} MiB together; it held the most`,
        ),
      );
      void watch.stop();
    };
    const watch = new Watch(this.#transport, {
      path: collection,
      kind: info.kind,
      apiVersion: info.apiVersion,
      watchTimeoutSeconds: timeout,
      // The API server sends a bookmark every minute: two and a half without one is a dead stream.
      livenessMs: 150_000,
      fatalStatuses: [401, 403, 404],
      ...(this.#streamingList ? { streamingList: this.#streamingList } : {}),
      ...(budget ? { bytes: { admit: (bytes: number) => budget.hold(owner, bytes, evict) } } : {}),
      // Not allowed to list or watch here (or the kind went away), or too large to keep: GET as
      // before, ask again later.
      onFatal: (err: WatchHttpError) => {
        if (entry.watch === watch) this.#refuse(collection, entry, err);
      },
      onError: (err) => this.#opts.onError?.(collection, err),
    });
    watch.on((e) => {
      if (watch.isSynced && e.type !== 'RESYNC') this.#opts.onEvent?.(info.apiVersion, info.kind);
      this.#onEvent(collection, watch, e);
    });
    entry.startedAt = Date.now();
    entry.resource = `${info.apiVersion} ${info.kind}`;
    // Shared by every Application this identity reads the collection for: its requests are no one's.
    runShared(() => watch.start());
    return watch;
  }

  #onEvent(collection: string, watch: Watch, e: WatchEvent): void {
    // The initial list is not a change; a relist after 410 is (it may carry missed edits).
    if (!watch.isSynced || e.type === 'RESYNC') return;
    const key = `${collection}/${nameOf(e.object)}`;
    const pending = this.#pending.get(key);
    if (pending) {
      const rv = rvOf(e.object as KubeObject);
      const echo = e.type === 'DELETED' ? pending.rv === null : pending.rv === rv;
      if (echo) {
        this.#pending.delete(key);
        return;
      }
      // Past our write (its echo came before we noted it): caught up, and this change is someone else's.
      if (e.type !== 'DELETED' && pending.rv !== null && atLeast(rv, pending.rv)) this.#pending.delete(key);
    }
    this.#opts.onChange?.(
      e.object as KubeObject,
      e.type === 'MODIFIED' ? (e.old as KubeObject | undefined) : undefined,
    );
  }

  #sweep(): void {
    const now = Date.now();
    const idle = this.#opts.idleMs?.() ?? 1_800_000;
    for (const [collection, entry] of this.#entries) {
      if (now - entry.lastUsed < idle) continue;
      this.#entries.delete(collection);
      void entry.watch?.stop();
    }
    for (const [key, p] of this.#pending) if (now - p.at >= PENDING_WRITE_MS) this.#pending.delete(key);
  }
}
