// The vocabulary of talking to a destination cluster, as types only: sync/ and controller/ import
// these (`import type`) and never the code that holds a credential (ARCHITECTURE.md, the identity rule).
import type { Attribution, KubeObject } from '../api/index.ts';

/**
 * Who a DestinationClient acts as. `impersonate` is a full user name
 * (`system:serviceaccount:<ns>:<name>`, spec §5); `controller` is the controller's own credential,
 * used only when impersonation is disabled or falls back (spec §5's table).
 */
export type Identity = { readonly impersonate: string } | { readonly controller: true };

/**
 * What a client's requests are made for, named in their Impersonate-Extra headers
 * (api/attribution.ts, kube/attribution.ts).
 */
export interface MadeFor extends Attribution {
  /**
   * argocd-cm `impersync.impersonation.requireExtras`: when the API server refuses the extras, the
   * request fails instead of being sent again without them.
   */
  requireExtras?: boolean | undefined;
}

/** The identity as a person reads it: the ServiceAccount user, or the controller's own credential. */
export function describeIdentity(identity: Identity): string {
  return 'impersonate' in identity ? identity.impersonate : "controller's own credential";
}

/**
 * A failed request, as a value. `code` is the HTTP status (0 when no response arrived), `reason`
 * the API server's Status reason (`Forbidden`, `NotFound`, `Invalid`, ...) and `message` the API
 * server's message verbatim: a 403 names the ServiceAccount that was refused.
 */
export interface KubeError {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
  /** The Status object the server returned, when it returned one. */
  readonly status?: Record<string, unknown>;
}

export type KubeResult<T> =
  | { readonly ok: true; readonly value: T; readonly warnings: readonly string[] }
  | { readonly ok: false; readonly error: KubeError };

/** Enough to find one object: apiVersion (or group + version) and kind, name, namespace. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string | undefined;
}

/** What discovery knows about a kind on one cluster. */
export interface ResourceInfo {
  /** `apps/v1`, `v1`. */
  apiVersion: string;
  group: string;
  version: string;
  kind: string;
  /** The plural resource name used in URLs (`deployments`). */
  resource: string;
  namespaced: boolean;
  verbs: readonly string[];
}

/** The field manager of every apply (kube/client.ts's default, and the one takeovers hand fields to). */
export const DEFAULT_FIELD_MANAGER = 'impersync';

/** One OpenAPI v3 group-version document as the server sent it; `url` names its content (a hash). */
export interface OpenApiDocument {
  readonly url: string;
  readonly document: unknown;
}

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

export interface ApplyOptions {
  dryRun?: boolean;
  /** Defaults to `impersync`. */
  fieldManager?: string;
  /** Take over fields other managers own; defaults to true (Argo CD forces conflicts too). */
  force?: boolean;
  /** `Strict` rejects unknown or duplicate fields; absent leaves the API server's default. */
  fieldValidation?: FieldValidation;
}

export interface DeleteOptions {
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  dryRun?: boolean;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
}

export interface RawRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute API path, such as `/api/v1/namespaces/x/configmaps/y`. */
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal | undefined;
  /** No answer within this long is a ConnectionError (default: the transport's 60 s for headers). */
  timeoutMs?: number | undefined;
  /**
   * Another user agent than `impersync`, for a request made for no one Application (the shared
   * reads of docs/impersonation.md §11), so that an audit pipeline can tell it apart.
   */
  userAgent?: string | undefined;
}

/**
 * One (cluster, identity) pair. Every request it makes carries that identity; nothing else in the
 * process can make it act as anyone else. Methods never throw for API or network errors: they
 * return a KubeResult.
 */
export interface DestinationClient {
  readonly server: string;
  readonly identity: Identity;
  request<T = unknown>(req: RawRequest): Promise<KubeResult<T>>;
  /** Discovery: the resource for an apiVersion + kind (refreshed once on a miss). */
  resolve(apiVersion: string, kind: string): Promise<KubeResult<ResourceInfo>>;
  /** Discovery by group + kind at the server's preferred version (for inventory entries). */
  resolveGroupKind(group: string, kind: string): Promise<KubeResult<ResourceInfo>>;
  /**
   * The destination's OpenAPI v3 document for `apiVersion`'s group-version (cached per cluster,
   * read again when the server's index names a new one); a 404 when it publishes none.
   */
  openApiV3(apiVersion: string): Promise<KubeResult<OpenApiDocument>>;
  /** Raw server-side apply: the object's JSON goes to the server unchanged, unknown fields included. */
  apply(obj: KubeObject, opts?: ApplyOptions): Promise<KubeResult<KubeObject>>;
  create(obj: KubeObject, opts?: { dryRun?: boolean }): Promise<KubeResult<KubeObject>>;
  /** The live object, or null when the server says 404. */
  get(ref: ObjectRef): Promise<KubeResult<KubeObject | null>>;
  list(apiVersion: string, kind: string, opts?: ListOptions): Promise<KubeResult<KubeObject[]>>;
  /** `deleted` when the server accepted the delete, `absent` when there was nothing to delete. */
  delete(ref: ObjectRef, opts?: DeleteOptions): Promise<KubeResult<'deleted' | 'absent'>>;
  /**
   * The same identity, asking the API server every time: reads skip the live-object cache and
   * dry-runs are sent again rather than reused. What a hard refresh compares through.
   */
  uncached(): DestinationClient;
}

/**
 * The API server refused to let the credential impersonate a user extra: the 403 of its
 * impersonation filter, whose Status names the kind `userextras` of `authentication.k8s.io`.
 */
export function isExtrasRefusal(error: KubeError): boolean {
  if (error.code !== 403) return false;
  const details = error.status?.['details'] as { kind?: unknown; group?: unknown } | undefined;
  return details?.kind === 'userextras' && details.group === 'authentication.k8s.io';
}
