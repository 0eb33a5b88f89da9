// DestinationClient for one (cluster, identity) pair. When the identity is a ServiceAccount, every
// request carries `Impersonate-User` and nothing else of the impersonation family: no groups, no
// uid (spec §5); the API server adds the ServiceAccount's groups itself. Callers cannot add
// headers, so they cannot change who the client acts as.
import { createHash } from 'node:crypto';
import type { KubeObject } from '../api/index.ts';
import type { DiscoveryCache } from './discovery.ts';
import { fail, localError, ok } from './errors.ts';
import { LiveObjectCache } from './live-cache.ts';
import type { LiveCacheOptions } from './live-cache.ts';
import { sendJson, watchTransportOver } from './request.ts';
import type { Transport } from './transport.ts';
import { DEFAULT_FIELD_MANAGER } from './types.ts';
import type {
  ApplyOptions,
  DeleteOptions,
  DestinationClient,
  Identity,
  KubeResult,
  ListOptions,
  ObjectRef,
  RawRequest,
  ResourceInfo,
} from './types.ts';

export { DEFAULT_FIELD_MANAGER } from './types.ts';

function collectionPath(info: ResourceInfo, namespace: string | undefined): string {
  const base = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  const ns = info.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${info.resource}`;
}

// Manifests come from users: nothing about their shape is trusted until checked.
function refOf(obj: KubeObject): { apiVersion: unknown; kind: unknown; name: unknown; namespace: unknown } {
  const meta = (obj as { metadata?: { name?: unknown; namespace?: unknown } }).metadata;
  return { apiVersion: obj.apiVersion, kind: obj.kind, name: meta?.name, namespace: meta?.namespace };
}

function describe(ref: { kind: string; name?: string | undefined; namespace?: string | undefined }): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name ?? '<unnamed>'}`;
}

// A dry-run apply's answer depends on the object sent and the live object it lands on; while both
// are unchanged it is reused rather than asked again. The hour bounds what it cannot see (a CRD's
// new defaults, a webhook's new mutation).
const DRY_RUN_MEMO_MS = 3_600_000;
const DRY_RUN_MEMO_MAX = 10_000;

interface DryRunMemo {
  liveRv: string;
  request: string;
  at: number;
  value: KubeObject;
  warnings: readonly string[];
}

export class KubeDestinationClient implements DestinationClient {
  /** The destination as the Application names it (`https://kubernetes.default.svc` included). */
  readonly server: string;
  readonly identity: Identity;
  readonly #transport: Transport;
  readonly #discovery: DiscoveryCache;
  /** Live objects from watches made as this identity; absent when the caller wants plain reads. */
  readonly #live: LiveObjectCache | undefined;
  readonly #dryRuns = new Map<string, DryRunMemo>();

  constructor(
    server: string,
    identity: Identity,
    transport: Transport,
    discovery: DiscoveryCache,
    live?: LiveCacheOptions,
  ) {
    this.server = server;
    this.identity = Object.freeze({ ...identity });
    this.#transport = transport;
    this.#discovery = discovery;
    // The cache's lists and watches go out as this client's identity, like every other read.
    this.#live = live ? new LiveObjectCache(watchTransportOver(transport, this.#identityHeaders()), live) : undefined;
  }

  /** Watches running for the live-object cache (0 without one). */
  get liveWatchCount(): number {
    return this.#live?.watchCount ?? 0;
  }

  /** Stops the live-object cache's watches. */
  async close(): Promise<void> {
    await this.#live?.close();
  }

  #identityHeaders(): Record<string, string> {
    // spec §5: the user only; groups and uid are left for the API server to derive.
    return 'impersonate' in this.identity ? { 'impersonate-user': this.identity.impersonate } : {};
  }

  request<T = unknown>(req: RawRequest): Promise<KubeResult<T>> {
    return sendJson<T>(this.#transport, this.#identityHeaders(), req);
  }

  #fetch = (path: string) => this.request({ method: 'GET', path });

  resolve(apiVersion: string, kind: string): Promise<KubeResult<ResourceInfo>> {
    return this.#discovery.resolve(this.#fetch, apiVersion, kind);
  }

  resolveGroupKind(group: string, kind: string): Promise<KubeResult<ResourceInfo>> {
    return this.#discovery.resolveGroupKind(this.#fetch, group, kind);
  }

  /** The resource and URL of one object, checking what the server needs to address it. */
  async #locate(o: {
    apiVersion: unknown;
    kind: unknown;
    name: unknown;
    namespace?: unknown;
  }): Promise<
    KubeResult<{ info: ResourceInfo; path: string; collection: string; name: string; namespace: string | undefined }>
  > {
    if (typeof o.apiVersion !== 'string' || o.apiVersion === '')
      return fail(
        localError('BadRequest', `${String(o.kind ?? 'object')} ${String(o.name ?? '')}: apiVersion is required`),
      );
    if (typeof o.kind !== 'string' || o.kind === '')
      return fail(localError('BadRequest', `object ${String(o.name ?? '')}: kind is required`));
    const name = typeof o.name === 'string' ? o.name : '';
    const namespace = typeof o.namespace === 'string' && o.namespace !== '' ? o.namespace : undefined;
    const found = await this.resolve(o.apiVersion, o.kind);
    if (!found.ok) return found;
    const info = found.value;
    if (info.namespaced && !namespace) {
      return fail(
        localError(
          'BadRequest',
          `${describe({ kind: o.kind, name })}: metadata.namespace is required (${o.kind} is namespaced)`,
        ),
      );
    }
    const collection = collectionPath(info, namespace);
    return ok({
      info,
      collection,
      path: name ? `${collection}/${encodeURIComponent(name)}` : collection,
      name,
      namespace: info.namespaced ? namespace : undefined,
    });
  }

  apply(obj: KubeObject, opts: ApplyOptions = {}): Promise<KubeResult<KubeObject>> {
    return this.#apply(obj, opts, true);
  }

  get(ref: ObjectRef): Promise<KubeResult<KubeObject | null>> {
    return this.#get(ref, true);
  }

  /**
   * This identity asking the API server every time (a hard refresh): reads skip the live-object
   * cache and dry-runs are sent again; what they answer is remembered as usual.
   */
  uncached(): DestinationClient {
    const view: DestinationClient = {
      server: this.server,
      identity: this.identity,
      request: (req) => this.request(req),
      resolve: (apiVersion, kind) => this.resolve(apiVersion, kind),
      resolveGroupKind: (group, kind) => this.resolveGroupKind(group, kind),
      apply: (obj, opts = {}) => this.#apply(obj, opts, false),
      create: (obj, opts) => this.create(obj, opts),
      get: (ref) => this.#get(ref, false),
      list: (apiVersion, kind, opts) => this.list(apiVersion, kind, opts),
      delete: (ref, opts) => this.delete(ref, opts),
      uncached: () => view,
    };
    return view;
  }

  async #apply(obj: KubeObject, opts: ApplyOptions, reuse: boolean): Promise<KubeResult<KubeObject>> {
    const where = await this.#locate(refOf(obj));
    if (!where.ok) return where;
    if (!where.value.name)
      return fail(localError('BadRequest', `${obj.kind}: metadata.name is required for server-side apply`));
    const body = structuredClone(obj);
    // A cluster-scoped object carries no namespace (Argo CD fills in the destination on all of them).
    if (!where.value.info.namespaced) delete body.metadata.namespace;
    const query = {
      fieldManager: opts.fieldManager ?? DEFAULT_FIELD_MANAGER,
      force: String(opts.force ?? true),
      dryRun: opts.dryRun ? 'All' : undefined,
      fieldValidation: opts.fieldValidation,
    };
    const text = JSON.stringify(body);
    const { info, collection, path, name } = where.value;
    // What a dry-run of this body would send: the memo's key, whichever way its answer was learnt.
    const request = this.#live
      ? createHash('sha256')
          .update(JSON.stringify({ ...query, dryRun: 'All' }))
          .update(text)
          .digest('base64')
      : undefined;
    if (reuse && opts.dryRun && request !== undefined) {
      const liveRv = this.#live?.resourceVersion(info, collection, name);
      const hit = this.#dryRuns.get(path);
      if (
        liveRv !== undefined &&
        hit &&
        hit.liveRv === liveRv &&
        hit.request === request &&
        Date.now() - hit.at < DRY_RUN_MEMO_MS
      ) {
        return ok(structuredClone(hit.value), hit.warnings);
      }
    }
    // JSON is YAML: the apply content type takes it, and JSON keeps every field as written.
    const res = await this.request<KubeObject>({
      method: 'PATCH',
      path,
      query,
      contentType: 'application/apply-patch+yaml',
      body: text,
    });
    if (res.ok && request !== undefined) {
      // The answer says which live object it holds for: a dry-run leaves the live object's
      // resourceVersion as it was (none when it would create it), and an apply's answer is the new
      // live object, on which the same dry-run would change nothing. Either is reused while the
      // live object keeps that version.
      const rv = res.value.metadata.resourceVersion;
      this.#remember(path, {
        liveRv: typeof rv === 'string' ? rv : '',
        request,
        at: Date.now(),
        value: structuredClone(res.value),
        warnings: opts.dryRun ? res.warnings : [],
      });
    }
    if (res.ok && !opts.dryRun) this.#live?.noteWrite(collection, name, res.value);
    return res;
  }

  #remember(key: string, memo: DryRunMemo): void {
    this.#dryRuns.delete(key);
    this.#dryRuns.set(key, memo);
    if (this.#dryRuns.size > DRY_RUN_MEMO_MAX) {
      const oldest = this.#dryRuns.keys().next();
      if (!oldest.done) this.#dryRuns.delete(oldest.value);
    }
  }

  async create(obj: KubeObject, opts: { dryRun?: boolean } = {}): Promise<KubeResult<KubeObject>> {
    const where = await this.#locate(refOf(obj));
    if (!where.ok) return where;
    const body = structuredClone(obj);
    if (!where.value.info.namespaced) delete body.metadata.namespace;
    const res = await this.request<KubeObject>({
      method: 'POST',
      path: where.value.collection,
      query: { dryRun: opts.dryRun ? 'All' : undefined },
      body,
    });
    if (res.ok && !opts.dryRun) this.#live?.noteWrite(where.value.collection, res.value.metadata.name, res.value);
    return res;
  }

  async #get(ref: ObjectRef, cached: boolean): Promise<KubeResult<KubeObject | null>> {
    const where = await this.#locate(ref);
    if (!where.ok) return where;
    const live = cached ? this.#live?.lookup(where.value.info, where.value.collection, where.value.name) : undefined;
    if (live?.hit) return ok(live.object);
    const res = await this.request<KubeObject>({ method: 'GET', path: where.value.path });
    if (!res.ok && res.error.code === 404) return ok(null);
    return res;
  }

  async list(apiVersion: string, kind: string, opts: ListOptions = {}): Promise<KubeResult<KubeObject[]>> {
    const found = await this.resolve(apiVersion, kind);
    if (!found.ok) return found;
    const res = await this.request<{ items?: KubeObject[] }>({
      method: 'GET',
      path: collectionPath(found.value, opts.namespace),
      query: { labelSelector: opts.labelSelector },
    });
    if (!res.ok) return res;
    // List items come without apiVersion and kind; put them back so each item stands alone.
    const items = (res.value.items ?? []).map((i) => ({ ...i, apiVersion, kind }));
    return ok(items, res.warnings);
  }

  async delete(ref: ObjectRef, opts: DeleteOptions = {}): Promise<KubeResult<'deleted' | 'absent'>> {
    const where = await this.#locate(ref);
    if (!where.ok) return where;
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (opts.propagationPolicy) body['propagationPolicy'] = opts.propagationPolicy;
    if (opts.dryRun) body['dryRun'] = ['All'];
    const res = await this.request({ method: 'DELETE', path: where.value.path, body });
    if (!res.ok) return res.error.code === 404 ? ok('absent') : res;
    if (!opts.dryRun) this.#live?.noteWrite(where.value.collection, where.value.name, null);
    return ok('deleted', res.warnings);
  }
}
