// DestinationClient for one (cluster, identity) pair. When the identity is a ServiceAccount, every
// request carries `Impersonate-User` and nothing else that changes who it acts as: no groups, no
// uid (spec §5); the API server adds the ServiceAccount's groups itself. Callers cannot add
// headers, so they cannot change who the client acts as.
//
// A view made for an Application (`attributed()`) adds the Impersonate-Extra headers naming it
// (kube/attribution.ts) to every request it sends itself: discovery, reads that miss the cache,
// dry-runs, applies, deletes. The views of one identity share this client's discovery, live-object
// watches and remembered dry-runs, so an Application costs no request more than before; the
// watches serve every Application of the identity and carry no Application's extras.
import type { Attribution, KubeObject } from '../api/index.ts';
import { extraHeaders, isExtrasRefusal, requiredExtrasMessage } from './attribution.ts';
import type { ExtrasGrant } from './attribution.ts';
import type { DiscoveryCache } from './discovery.ts';
import { DryRunMemo } from './dry-run-memo.ts';
import { fail, localError, ok } from './errors.ts';
import { LiveObjectCache } from './live-cache.ts';
import { collectionPath, locate, refOf } from './locate.ts';
import type { LiveCacheOptions, LiveCacheStats } from './live-cache.ts';
import { sendJson, watchTransportOver } from './request.ts';
import type { TenantShare } from './tenant-share.ts';
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
  OpenApiDocument,
  RawRequest,
  ResourceInfo,
} from './types.ts';

export { DEFAULT_FIELD_MANAGER } from './types.ts';

/** How long a read waits for the live-object watch to list (or show our write) before it GETs. */
const LIVE_WAIT_MS = 2000;

/** The user agent of the live-object watches: shared by the Applications of one identity, they name none. */
export const LIVE_WATCH_USER_AGENT = 'impersync (live-object watch)';

/** How one view sends: the extras it adds (and whether they may be dropped), and whether reads use the cache. */
interface Caller {
  extras: Record<string, string> | undefined;
  required: boolean;
  cached: boolean;
  /** The Application, for remembered dry-runs (dry-run-memo.ts); '' without one. */
  scope: string;
  /** The tenant (AppProject) its requests count for in the API server's share (tenant-share.ts); '' for none. */
  tenant: string;
}

const PLAIN: Caller = { extras: undefined, required: false, cached: true, scope: '', tenant: '' };

export class KubeDestinationClient implements DestinationClient {
  /** The destination as the Application names it (`https://kubernetes.default.svc` included). */
  readonly server: string;
  readonly identity: Identity;
  readonly #transport: Transport;
  readonly #discovery: DiscoveryCache;
  readonly #grant: ExtrasGrant | undefined;
  /** Live objects from watches made as this identity; absent when the caller wants plain reads. */
  readonly #live: LiveObjectCache | undefined;
  /** Its remembered dry-run answers, in its factory's store (dry-run-memo.ts). */
  readonly #dryRuns: DryRunMemo;
  /** The destination's API server shared between tenants (tenant-share.ts): the views made for an Application count. */
  readonly #share: TenantShare | undefined;

  constructor(
    server: string,
    identity: Identity,
    transport: Transport,
    discovery: DiscoveryCache,
    live?: LiveCacheOptions,
    grant?: ExtrasGrant,
    share?: TenantShare,
    dryRuns: DryRunMemo = new DryRunMemo(),
  ) {
    this.server = server;
    this.#dryRuns = dryRuns;
    this.identity = Object.freeze({ ...identity });
    this.#transport = transport;
    this.#discovery = discovery;
    this.#grant = grant;
    this.#share = share;
    // The cache's lists and watches go out as this client's identity, like every other read.
    const watchHeaders = { ...this.#identityHeaders(), 'user-agent': LIVE_WATCH_USER_AGENT };
    this.#live = live ? new LiveObjectCache(watchTransportOver(transport, watchHeaders), live) : undefined;
  }

  /** Watches running for the live-object cache (0 without one). */
  get liveWatchCount(): number {
    return this.#live?.watchCount ?? 0;
  }

  /** What its live-object cache holds (undefined without one). */
  liveStats(): LiveCacheStats | undefined {
    return this.#live?.stats();
  }

  /** Stops the live-object cache's watches. */
  async close(): Promise<void> {
    await this.#live?.close();
  }

  #identityHeaders(): Record<string, string> {
    // spec §5: the user only; groups and uid are left for the API server to derive.
    return 'impersonate' in this.identity ? { 'impersonate-user': this.identity.impersonate } : {};
  }

  /**
   * This identity, making every request for the Application `attribution` names. `required`
   * (argocd-cm requireExtras): a refusal of the extras fails the request instead of dropping them.
   * The controller's own credential impersonates no one and so carries no extras.
   */
  attributed(attribution: Attribution, required = false): DestinationClient {
    if (!('impersonate' in this.identity)) return this;
    return this.#view({
      extras: extraHeaders(attribution),
      required,
      cached: true,
      scope: attribution.application,
      tenant: attribution.project,
    });
  }

  #send<T>(req: RawRequest, caller: Caller): Promise<KubeResult<T>> {
    const share = this.#share;
    if (!share || caller.tenant === '') return this.#sendNow<T>(req, caller);
    return share.run(caller.tenant, () => this.#sendNow<T>(req, caller));
  }

  async #sendNow<T>(req: RawRequest, caller: Caller): Promise<KubeResult<T>> {
    const identity = this.#identityHeaders();
    if (!caller.extras || !(caller.required || (this.#grant?.offer() ?? true)))
      return sendJson<T>(this.#transport, identity, req);
    const res = await sendJson<T>(this.#transport, { ...identity, ...caller.extras }, req);
    if (res.ok || !isExtrasRefusal(res.error)) return res;
    // Refused before anything was done (the impersonation filter runs first): safe to send again.
    this.#grant?.refused(res.error);
    if (caller.required) return fail({ ...res.error, message: requiredExtrasMessage(res.error) });
    return sendJson<T>(this.#transport, identity, req);
  }

  request<T = unknown>(req: RawRequest): Promise<KubeResult<T>> {
    return this.#send<T>(req, PLAIN);
  }

  resolve(apiVersion: string, kind: string): Promise<KubeResult<ResourceInfo>> {
    return this.#resolve(apiVersion, kind, PLAIN);
  }

  resolveGroupKind(group: string, kind: string): Promise<KubeResult<ResourceInfo>> {
    return this.#discovery.resolveGroupKind((path) => this.#send({ method: 'GET', path }, PLAIN), group, kind);
  }

  #resolve(apiVersion: string, kind: string, caller: Caller): Promise<KubeResult<ResourceInfo>> {
    // Discovery and OpenAPI fetches are shared by every tenant on the destination (one fetch serves
    // all who ask at once): sent outside any tenant's share, or a quiet tenant would wait for the
    // fetch queued behind a costly tenant's requests.
    return this.#discovery.resolve((path) => this.#sendNow({ method: 'GET', path }, caller), apiVersion, kind);
  }

  openApiV3(apiVersion: string): Promise<KubeResult<OpenApiDocument>> {
    return this.#discovery.openapi.document((req) => this.#send(req, PLAIN), apiVersion);
  }

  apply(obj: KubeObject, opts: ApplyOptions = {}): Promise<KubeResult<KubeObject>> {
    return this.#apply(obj, opts, PLAIN);
  }

  create(obj: KubeObject, opts: { dryRun?: boolean } = {}): Promise<KubeResult<KubeObject>> {
    return this.#create(obj, opts, PLAIN);
  }

  get(ref: ObjectRef): Promise<KubeResult<KubeObject | null>> {
    return this.#get(ref, PLAIN);
  }

  list(apiVersion: string, kind: string, opts: ListOptions = {}): Promise<KubeResult<KubeObject[]>> {
    return this.#list(apiVersion, kind, opts, PLAIN);
  }

  delete(ref: ObjectRef, opts: DeleteOptions = {}): Promise<KubeResult<'deleted' | 'absent'>> {
    return this.#delete(ref, opts, PLAIN);
  }

  /**
   * This identity asking the API server every time (a hard refresh): reads skip the live-object
   * cache and dry-runs are sent again; what they answer is remembered as usual.
   */
  uncached(): DestinationClient {
    return this.#view({ ...PLAIN, cached: false });
  }

  #view(caller: Caller): DestinationClient {
    const view: DestinationClient = {
      server: this.server,
      identity: this.identity,
      request: (req) => this.#send(req, caller),
      resolve: (apiVersion, kind) => this.#resolve(apiVersion, kind, caller),
      resolveGroupKind: (group, kind) =>
        this.#discovery.resolveGroupKind((path) => this.#sendNow({ method: 'GET', path }, caller), group, kind),
      openApiV3: (apiVersion) => this.#discovery.openapi.document((req) => this.#sendNow(req, caller), apiVersion),
      apply: (obj, opts = {}) => this.#apply(obj, opts, caller),
      create: (obj, opts = {}) => this.#create(obj, opts, caller),
      get: (ref) => this.#get(ref, caller),
      list: (apiVersion, kind, opts = {}) => this.#list(apiVersion, kind, opts, caller),
      delete: (ref, opts = {}) => this.#delete(ref, opts, caller),
      uncached: () => (caller.cached ? this.#view({ ...caller, cached: false }) : view),
    };
    return view;
  }

  #locate(o: Parameters<typeof locate>[0], caller: Caller): ReturnType<typeof locate> {
    return locate(o, (apiVersion, kind) => this.#resolve(apiVersion, kind, caller));
  }

  async #apply(obj: KubeObject, opts: ApplyOptions, caller: Caller): Promise<KubeResult<KubeObject>> {
    const where = await this.#locate(refOf(obj), caller);
    if (!where.ok) return where;
    if (!where.value.name)
      return fail(localError('BadRequest', `${obj.kind}: metadata.name is required for server-side apply`));
    // Only its metadata may change here: the rest is sent as the caller's.
    const body: KubeObject = { ...obj, metadata: { ...obj.metadata } };
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
    const request = this.#live ? DryRunMemo.requestKey(query, text, caller.scope) : undefined;
    if (caller.cached && opts.dryRun && request !== undefined) {
      const liveRv = this.#live?.resourceVersion(info, collection, name);
      const hit = liveRv !== undefined ? this.#dryRuns.lookup(path, request, liveRv) : undefined;
      if (hit) return ok(hit.value, hit.warnings);
    }
    // JSON is YAML: the apply content type takes it, and JSON keeps every field as written.
    const res = await this.#send<KubeObject>(
      { method: 'PATCH', path, query, contentType: 'application/apply-patch+yaml', body: text },
      caller,
    );
    if (res.ok && request !== undefined) {
      // The answer says which live object it holds for: a dry-run leaves the live object's
      // resourceVersion as it was (none when it would create it), and an apply's answer is the new
      // live object, on which the same dry-run would change nothing. Either is reused while the
      // live object keeps that version.
      const rv = res.value.metadata.resourceVersion;
      this.#dryRuns.remember(path, {
        liveRv: typeof rv === 'string' ? rv : '',
        request,
        value: res.value,
        warnings: opts.dryRun ? res.warnings : [],
      });
    }
    if (res.ok && !opts.dryRun) this.#live?.noteWrite(collection, name, res.value);
    return res;
  }

  async #create(obj: KubeObject, opts: { dryRun?: boolean }, caller: Caller): Promise<KubeResult<KubeObject>> {
    const where = await this.#locate(refOf(obj), caller);
    if (!where.ok) return where;
    const body = structuredClone(obj);
    if (!where.value.info.namespaced) delete body.metadata.namespace;
    const res = await this.#send<KubeObject>(
      { method: 'POST', path: where.value.collection, query: { dryRun: opts.dryRun ? 'All' : undefined }, body },
      caller,
    );
    if (res.ok && !opts.dryRun) this.#live?.noteWrite(where.value.collection, res.value.metadata.name, res.value);
    return res;
  }

  async #get(ref: ObjectRef, caller: Caller): Promise<KubeResult<KubeObject | null>> {
    const where = await this.#locate(ref, caller);
    if (!where.ok) return where;
    const { info, collection, name, path } = where.value;
    // A watch making its first list, or not yet showing our own write, is waited for a moment: its
    // answer is as current as the GET it saves (from scratch, every object's first read).
    const live = caller.cached ? await this.#live?.lookupSoon(info, collection, name, LIVE_WAIT_MS) : undefined;
    if (live?.hit) return ok(live.object);
    const res = await this.#send<KubeObject>({ method: 'GET', path }, caller);
    if (!res.ok && res.error.code === 404) return ok(null);
    return res;
  }

  async #list(apiVersion: string, kind: string, opts: ListOptions, caller: Caller): Promise<KubeResult<KubeObject[]>> {
    const found = await this.#resolve(apiVersion, kind, caller);
    if (!found.ok) return found;
    const res = await this.#send<{ items?: KubeObject[] }>(
      {
        method: 'GET',
        path: collectionPath(found.value, opts.namespace),
        query: { labelSelector: opts.labelSelector },
      },
      caller,
    );
    if (!res.ok) return res;
    // List items come without apiVersion and kind; put them back so each item stands alone.
    const items = (res.value.items ?? []).map((i) => ({ ...i, apiVersion, kind }));
    return ok(items, res.warnings);
  }

  async #delete(ref: ObjectRef, opts: DeleteOptions, caller: Caller): Promise<KubeResult<'deleted' | 'absent'>> {
    const where = await this.#locate(ref, caller);
    if (!where.ok) return where;
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (opts.propagationPolicy) body['propagationPolicy'] = opts.propagationPolicy;
    if (opts.dryRun) body['dryRun'] = ['All'];
    const res = await this.#send({ method: 'DELETE', path: where.value.path, body }, caller);
    if (!res.ok) return res.error.code === 404 ? ok('absent') : res;
    if (!opts.dryRun) this.#live?.noteWrite(where.value.collection, where.value.name, null);
    return ok('deleted', res.warnings);
  }
}
