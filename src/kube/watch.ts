// A list+watch loop with a local cache, made to survive what client-node's informers do not:
// list, then watch from the list's resourceVersion with bookmarks; reconnect with jittered
// exponential backoff; relist on 410 Gone ("too old resource version"); restart a watch that has
// been silent longer than the liveness limit; re-emit every cached object periodically (resync).
// With `streamingList`, the first list (and a relist after 410) is a watch asking for its initial
// events (Kubernetes' WatchList: sendInitialEvents=true, resourceVersionMatch=NotOlderThan), one
// request instead of a LIST and a WATCH; the bookmark the server marks `k8s.io/initial-events-end`
// is where that list ends. A server that refuses the parameters (400, 422: the feature gate off) or
// ignores them (a bookmark without that mark, or no end within the list's time limit) is then
// listed and watched the classic way.
// It runs over any WatchTransport: the controller's own connection (control.ts) or a
// DestinationClient's identity (live-cache.ts).
import { HeldEstimate, heldBy } from './store-budget.ts';

/** What a Watch needs from a connection: one GET answered whole, and one GET read as a stream. */
export interface WatchTransport {
  get(pathAndQuery: string, signal: AbortSignal): Promise<{ status: number; body: unknown; text: string }>;
  stream(pathAndQuery: string, signal: AbortSignal): Promise<WatchStream>;
}

export interface WatchStream {
  status: number;
  chunks: AsyncIterable<Uint8Array | string>;
  /** Throws the rest of the body away (a refused watch). */
  discard(): void;
}

/** A list or watch the server refused with an HTTP status (403, 404...). */
export class WatchHttpError extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.name = 'WatchHttpError';
    this.status = status;
  }
}

/**
 * The watch's objects would hold more than its bytes allow (WatchOptions.bytes): the watch ends for
 * good (a fatal status, 413 as the API server names a body too large) and its objects are dropped.
 */
export class StoreTooLargeError extends WatchHttpError {
  constructor(message: string) {
    super(message, 413);
    this.name = 'StoreTooLargeError';
  }
}

export interface WatchedObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; [k: string]: unknown };
  [k: string]: unknown;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'RESYNC';

export interface WatchEvent {
  type: WatchEventType;
  object: WatchedObject;
  /** The cached object this event replaces (MODIFIED, DELETED). */
  old?: WatchedObject;
}

export interface WatchOptions {
  /** Collection path, e.g. /apis/argoproj.io/v1alpha1/namespaces/argocd/applications. */
  path: string;
  /** Kind of the items (lists return items without kind). */
  kind: string;
  apiVersion: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** No event nor bookmark for this long → the watch is restarted (default 330 s). */
  livenessMs?: number;
  /** Server-side watch timeout, renewed without relisting (default 300 s). */
  watchTimeoutSeconds?: number;
  /** Re-emit all cached objects this often; 0 disables (default 0). */
  resyncMs?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** Page size for the list. */
  pageSize?: number;
  onError?: (err: Error) => void;
  /**
   * Statuses that end the watch for good instead of being retried (a 403: the identity may not
   * list or watch). The loop stops and `onFatal` is called.
   */
  fatalStatuses?: readonly number[];
  onFatal?: (err: WatchHttpError) => void;
  /**
   * Make the list part of a watch (sendInitialEvents) while `supported` is not false; the watch
   * sets it to false when the server refuses or ignores that, and lists the classic way. Shared by
   * the watches of one connection, so that only the first finds out.
   */
  streamingList?: { supported: boolean | undefined };
  /**
   * What the objects may hold, in bytes as store-budget.ts heldBy estimates them: `admit` is asked
   * before the store (or a list being read, beside the store it will replace) grows, and told
   * when it shrinks; false ends the watch with StoreTooLargeError. Told 0 once the watch ends.
   */
  bytes?: { admit(bytes: number): boolean };
}

/** The annotation on the bookmark that ends a watch's initial events (sendInitialEvents). */
export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';
// A list streamed as initial events that has not ended after this long is given up (as a LIST is).
const INITIAL_EVENTS_MS = 60_000;

export function objectStoreKey(o: { metadata: { name: string; namespace?: string } }): string {
  return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
}

/** Raised inside the loop for 410 Gone: the resourceVersion has been compacted away. */
class GoneError extends Error {}
/**
 * The server refused or ignored sendInitialEvents (`lasting`: from now on, list the classic way),
 * or its initial events did not end in time (list the classic way this once).
 */
class NoStreamingListError extends Error {
  readonly lasting: boolean;
  constructor(message: string, lasting: boolean) {
    super(message);
    this.lasting = lasting;
  }
}

export class Watch {
  readonly store = new Map<string, WatchedObject>();
  /** Watch (re)starts after the first: errors, liveness expiry, 410. For metrics. */
  restarts = 0;
  relists = 0;
  isSynced = false;
  /**
   * A watch stream is open and delivering: the cache is as fresh as the server's last event. False
   * during a relist, a reconnect's backoff, or once a stream has ended or gone silent.
   */
  streaming = false;
  readonly synced: Promise<void>;
  private resolveSynced!: () => void;
  private readonly handlers: Array<(e: WatchEvent) => void> = [];
  private readonly opts: Required<
    Omit<
      WatchOptions,
      'labelSelector' | 'fieldSelector' | 'onError' | 'fatalStatuses' | 'onFatal' | 'streamingList' | 'bytes'
    >
  > &
    WatchOptions;
  private readonly transport: WatchTransport;
  private stopped = false;
  private abort: AbortController | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private resourceVersion = '';
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  /** While a streamed list runs: the objects of its initial events so far. */
  private initial: Map<string, WatchedObject> | undefined;
  /** A streamed list was asked for and its end has not arrived. */
  private initialPending = false;
  /** What each object held takes by heldBy's estimate (WatchOptions.bytes), their sum, and a list being read's. */
  private readonly sizes = new Map<string, number>();
  private storeBytes = 0;
  private initialSizes = new Map<string, number>();
  private listBytes = 0;

  constructor(transport: WatchTransport, opts: WatchOptions) {
    this.transport = transport;
    this.opts = {
      livenessMs: 330_000,
      watchTimeoutSeconds: 300,
      resyncMs: 0,
      backoffInitialMs: 200,
      backoffMaxMs: 30_000,
      pageSize: 500,
      ...opts,
    };
    this.synced = new Promise((resolve) => {
      this.resolveSynced = resolve;
    });
  }

  on(handler: (e: WatchEvent) => void): void {
    this.handlers.push(handler);
  }

  list(): WatchedObject[] {
    return [...this.store.values()];
  }

  get(key: string): WatchedObject | undefined {
    return this.store.get(key);
  }

  start(): void {
    if (this.loopDone) return;
    this.loopDone = this.loop();
    if (this.opts.resyncMs > 0) {
      this.resyncTimer = setInterval(() => {
        for (const object of this.store.values()) this.emit({ type: 'RESYNC', object });
      }, this.opts.resyncMs);
      this.resyncTimer.unref();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.abort?.abort();
    this.wake?.();
    await this.loopDone;
  }

  private emit(e: WatchEvent): void {
    for (const h of this.handlers) {
      try {
        h(e);
      } catch (err) {
        this.opts.onError?.(err as Error);
      }
    }
  }

  private query(extra: Record<string, string>): string {
    const q = new URLSearchParams();
    if (this.opts.labelSelector) q.set('labelSelector', this.opts.labelSelector);
    if (this.opts.fieldSelector) q.set('fieldSelector', this.opts.fieldSelector);
    for (const [k, v] of Object.entries(extra)) q.set(k, v);
    return `${this.opts.path}?${q.toString()}`;
  }

  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
    this.wake = undefined;
  }

  private async loop(): Promise<void> {
    try {
      await this.loopUntilStopped();
    } finally {
      this.admit(0);
    }
  }

  /**
   * Tells the bound what the objects hold now. A stopped watch (ended by the bound for another's
   * sake, or idle) holds nothing, whatever its teardown still has: it must not take bytes back.
   */
  private admit(bytes: number): boolean {
    return !this.opts.bytes || this.opts.bytes.admit(this.stopped ? 0 : bytes);
  }

  /** Grows what the objects hold to `bytes` (the store and a list being read), or ends the watch. */
  private grow(bytes: number): void {
    if (!this.opts.bytes || (!this.stopped && this.admit(bytes))) return;
    const mib = (bytes / 2 ** 20).toFixed(1);
    throw new StoreTooLargeError(`watch ${this.opts.path}: its objects would hold ${mib} MiB, more than it may keep`);
  }

  private async loopUntilStopped(): Promise<void> {
    let failures = 0;
    let needList = true;
    let classicOnce = false;
    while (!this.stopped) {
      try {
        const streamList =
          needList &&
          !classicOnce &&
          this.opts.streamingList !== undefined &&
          this.opts.streamingList.supported !== false;
        if (needList && !streamList) await this.relist();
        needList = false;
        classicOnce = false;
        const began = Date.now();
        try {
          await this.watchOnce(streamList);
        } catch (err) {
          // A streamed list that failed before its end has listed nothing: the next try lists again.
          if (streamList && this.initialPending) needList = true;
          if (!(err instanceof NoStreamingListError)) throw err;
          if (err.lasting && this.opts.streamingList) this.opts.streamingList.supported = false;
          else classicOnce = true;
          this.opts.onError?.(err);
          continue;
        }
        failures = 0;
        // A server that closes watches at once must not make this loop spin.
        if (Date.now() - began < 1000) await this.sleep(this.opts.backoffInitialMs);
      } catch (err) {
        if (this.stopped) break;
        this.restarts++;
        if (err instanceof GoneError) {
          needList = true;
          continue;
        }
        if (
          err instanceof StoreTooLargeError ||
          (err instanceof WatchHttpError && this.opts.fatalStatuses?.includes(err.status))
        ) {
          this.store.clear();
          this.sizes.clear();
          this.storeBytes = 0;
          this.opts.onFatal?.(err);
          break;
        }
        this.opts.onError?.(err as Error);
        failures++;
        // Full jitter over an exponential ceiling, so many watches do not reconnect in step.
        const ceiling = Math.min(this.opts.backoffMaxMs, this.opts.backoffInitialMs * 2 ** Math.min(failures - 1, 20));
        await this.sleep(ceiling / 2 + Math.random() * (ceiling / 2));
      }
    }
  }

  /** List all pages, replace the cache and emit the differences as events. */
  private async relist(): Promise<void> {
    this.listBytes = 0;
    try {
      const { items, rv, bytes } = await this.listPages();
      // The pages' estimate shared by their items, not each object's own.
      const each = items.length ? bytes / items.length : 0;
      this.replaceAll(items, rv, new Map(this.opts.bytes ? items.map((o) => [objectStoreKey(o), each]) : []));
    } finally {
      this.listBytes = 0;
      this.admit(this.storeBytes);
    }
  }

  private async listPages(): Promise<{ items: WatchedObject[]; rv: string; bytes: number }> {
    const items: WatchedObject[] = [];
    let cont = '';
    let rv = '';
    for (;;) {
      const extra: Record<string, string> = { limit: String(this.opts.pageSize) };
      if (cont) extra['continue'] = cont;
      // Abortable, so that stop() does not wait for a slow list.
      const ac = new AbortController();
      this.abort = ac;
      const timer = setTimeout(() => ac.abort(new Error(`list ${this.opts.path}: no response after 60 s`)), 60_000);
      let res: { status: number; body: unknown; text: string; held?: number };
      try {
        res = this.opts.bytes
          ? await this.boundedGet(this.query(extra), ac)
          : await this.transport.get(this.query(extra), ac.signal);
      } finally {
        clearTimeout(timer);
      }
      if (res.status === 410) {
        // The continue token expired mid-list: start the list over (a `continue` in a do-while
        // would have tested the emptied token and ended the list with nothing in it).
        cont = '';
        rv = '';
        items.length = 0;
        this.listBytes = 0;
        continue;
      }
      if (res.status !== 200)
        throw new WatchHttpError(
          `list ${this.opts.path}: ${res.status} ${(res.body as { message?: string } | undefined)?.message ?? res.text.slice(0, 200)}`,
          res.status,
        );
      const body = res.body as { metadata?: { resourceVersion?: string; continue?: string }; items?: WatchedObject[] };
      // Read beside the store it replaces: both are held until then.
      if (this.opts.bytes) this.listBytes += res.held ?? heldBy(res.text);
      this.grow(this.storeBytes + this.listBytes);
      for (const it of body.items ?? []) items.push({ apiVersion: this.opts.apiVersion, kind: this.opts.kind, ...it });
      cont = body.metadata?.continue ?? '';
      rv = body.metadata?.resourceVersion ?? '';
      if (!cont) break;
    }
    return { items, rv, bytes: this.listBytes };
  }

  /**
   * A page of a list read as it arrives, its bytes admitted as they come (WatchOptions.bytes): a
   * page of 500 objects of a megabyte each is refused at the bound, not read whole first.
   */
  private async boundedGet(
    pathAndQuery: string,
    ac: AbortController,
  ): Promise<{ status: number; body: unknown; text: string; held: number }> {
    const res = await this.transport.stream(pathAndQuery, ac.signal);
    const decoder = new TextDecoder();
    const held = new HeldEstimate();
    let text = '';
    try {
      for await (const chunk of res.chunks) {
        const part = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
        text += part;
        if (res.status === 200) this.grow(this.storeBytes + this.listBytes + held.add(part));
        else if (text.length > 4096) {
          // A refusal's message is all it is read for.
          res.discard();
          break;
        }
      }
    } catch (err) {
      ac.abort();
      throw err;
    }
    text += decoder.decode();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: res.status, body, text, held: held.bytes };
  }

  /** The cache becomes `items` (a complete list at `rv`); the differences are emitted as events. */
  private replaceAll(items: Iterable<WatchedObject>, rv: string, sizes: Map<string, number>): void {
    this.relists++;
    this.sizes.clear();
    this.storeBytes = 0;
    for (const [key, size] of sizes) {
      this.sizes.set(key, size);
      this.storeBytes += size;
    }
    // The list read beside the store is the store now.
    this.admit(this.storeBytes);
    const seen = new Set<string>();
    for (const object of items) {
      const key = objectStoreKey(object);
      seen.add(key);
      const old = this.store.get(key);
      this.store.set(key, object);
      if (!old) this.emit({ type: 'ADDED', object });
      else if (old.metadata.resourceVersion !== object.metadata.resourceVersion)
        this.emit({ type: 'MODIFIED', object, old });
    }
    for (const [key, old] of [...this.store]) {
      if (!seen.has(key)) {
        this.store.delete(key);
        this.emit({ type: 'DELETED', object: old, old });
      }
    }
    this.resourceVersion = rv;
    if (!this.isSynced) {
      this.isSynced = true;
      this.resolveSynced();
    }
  }

  /**
   * One watch request, until the server closes it (normal), it fails, or it goes silent. With
   * `streamList`, it starts with the collection's current objects as initial events: the cache is
   * replaced by them at the bookmark that ends them.
   */
  private async watchOnce(streamList = false): Promise<void> {
    const abort = new AbortController();
    this.abort = abort;
    // stop() during the list aborted the list's controller, not this one.
    if (this.stopped) return;
    let silent = false;
    let liveness: NodeJS.Timeout | undefined;
    let listTimer: NodeJS.Timeout | undefined;
    let listTimedOut = false;
    this.initialPending = streamList;
    if (streamList) {
      this.initial = new Map();
      this.initialSizes = new Map();
      this.listBytes = 0;
      listTimer = setTimeout(() => {
        if (!this.initialPending) return;
        listTimedOut = true;
        abort.abort();
      }, INITIAL_EVENTS_MS);
    }
    const kick = () => {
      if (liveness) clearTimeout(liveness);
      liveness = setTimeout(() => {
        silent = true;
        abort.abort();
      }, this.opts.livenessMs);
    };
    kick();
    try {
      const path = this.query(
        streamList
          ? {
              watch: '1',
              sendInitialEvents: 'true',
              resourceVersionMatch: 'NotOlderThan',
              allowWatchBookmarks: 'true',
              timeoutSeconds: String(this.opts.watchTimeoutSeconds),
            }
          : {
              watch: '1',
              resourceVersion: this.resourceVersion,
              allowWatchBookmarks: 'true',
              timeoutSeconds: String(this.opts.watchTimeoutSeconds),
            },
      );
      let res: WatchStream;
      try {
        res = await this.transport.stream(path, abort.signal);
      } catch (err) {
        if (listTimedOut) throw new NoStreamingListError(`watch ${this.opts.path}: no answer in time`, false);
        if (silent) throw new Error(`watch ${this.opts.path}: no event for ${this.opts.livenessMs} ms`, { cause: err });
        throw err;
      }
      if (streamList && (res.status === 400 || res.status === 422)) {
        res.discard();
        throw new NoStreamingListError(`watch ${this.opts.path}: sendInitialEvents refused (${res.status})`, true);
      }
      if (res.status === 410) {
        res.discard();
        throw new GoneError();
      }
      if (res.status !== 200) {
        let text = '';
        for await (const c of res.chunks) text += typeof c === 'string' ? c : Buffer.from(c).toString('utf8');
        throw new WatchHttpError(`watch ${this.opts.path}: ${res.status} ${text.slice(0, 200)}`, res.status);
      }
      // A streamed list is live from the bookmark that ends its initial events (handleLine).
      if (!streamList) this.streaming = true;
      let buf = '';
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.chunks) {
          kick();
          buf += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (line) this.handleLine(line);
          }
        }
      } catch (err) {
        if (this.stopped) return;
        if (listTimedOut && this.initialPending)
          throw new NoStreamingListError(`watch ${this.opts.path}: initial events did not end in time`, false);
        if (silent) throw new Error(`watch ${this.opts.path}: no event for ${this.opts.livenessMs} ms`);
        throw err;
      }
      if (silent) throw new Error(`watch ${this.opts.path}: no event for ${this.opts.livenessMs} ms`);
      // Ended before its initial events did (the server's timeout, a dropped connection): list again.
      if (this.initialPending) throw new Error(`watch ${this.opts.path}: ended before its initial events did`);
    } finally {
      this.streaming = false;
      this.initial = undefined;
      this.initialSizes = new Map();
      if (this.listBytes) this.admit(this.storeBytes);
      this.listBytes = 0;
      if (liveness) clearTimeout(liveness);
      if (listTimer) clearTimeout(listTimer);
    }
  }

  private handleLine(line: string): void {
    const ev = JSON.parse(line) as { type: string; object: WatchedObject & { code?: number; message?: string } };
    const obj = ev.object;
    if (ev.type === 'ERROR') {
      if (obj.code === 410) throw new GoneError(obj.message ?? 'Gone');
      throw new Error(`watch ${this.opts.path}: ${obj.message ?? line.slice(0, 200)}`);
    }
    const rv = obj.metadata?.resourceVersion;
    const initial = this.initial;
    if (initial) {
      // A streamed list: collect until the bookmark that ends it, then replace the cache at once.
      if (ev.type === 'BOOKMARK') {
        const annotations = obj.metadata?.annotations as Record<string, string> | undefined;
        // A bookmark without the mark: the server ignored sendInitialEvents (it predates WatchList).
        if (annotations?.[INITIAL_EVENTS_END] !== 'true')
          throw new NoStreamingListError(`watch ${this.opts.path}: sendInitialEvents ignored`, true);
        this.initial = undefined;
        this.initialPending = false;
        this.replaceAll(initial.values(), rv ?? '', this.initialSizes);
        this.listBytes = 0;
        this.streaming = true;
        return;
      }
      const object: WatchedObject = { apiVersion: this.opts.apiVersion, kind: this.opts.kind, ...obj };
      const key = objectStoreKey(object);
      this.listBytes -= this.initialSizes.get(key) ?? 0;
      this.initialSizes.delete(key);
      if (ev.type === 'DELETED') initial.delete(key);
      else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') {
        const size = this.opts.bytes ? heldBy(line) : 0;
        this.grow(this.storeBytes + this.listBytes + size);
        initial.set(key, object);
        this.initialSizes.set(key, size);
        this.listBytes += size;
      }
      return;
    }
    if (rv) this.resourceVersion = rv;
    if (ev.type === 'BOOKMARK') return;
    const object: WatchedObject = { apiVersion: this.opts.apiVersion, kind: this.opts.kind, ...obj };
    const key = objectStoreKey(object);
    const old = this.store.get(key);
    if (ev.type === 'DELETED') {
      this.store.delete(key);
      this.resize(key, undefined);
      this.emit({ type: 'DELETED', object, ...(old ? { old } : {}) });
    } else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') {
      this.resize(key, this.opts.bytes ? heldBy(line) : 0);
      this.store.set(key, object);
      this.emit(old ? { type: 'MODIFIED', object, old } : { type: 'ADDED', object });
    }
  }

  /** The object at `key` now holds `size` bytes (undefined: gone); growth is admitted first (grow). */
  private resize(key: string, size: number | undefined): void {
    const bytes = this.storeBytes - (this.sizes.get(key) ?? 0) + (size ?? 0);
    if (bytes > this.storeBytes) this.grow(bytes);
    else this.admit(bytes);
    this.storeBytes = bytes;
    if (size === undefined) this.sizes.delete(key);
    else this.sizes.set(key, size);
  }
}
