// Raw requests to the test API server with a client-node KubeConfig's credentials: server-side
// apply of untyped objects (client-node's typed serializer would drop unknown fields), get, list,
// delete, and discovery of resource names. Errors carry the API server's status and message.
import type { KubeConfig } from '@kubernetes/client-node';
import type https from 'node:https';
import { sendRequest } from '../../src/controlplane/http.ts';
import type { HttpResponse } from '../../src/controlplane/http.ts';
import { nodeName } from '../../src/controlplane/nodes.ts';

export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
};

export type ObjectRef = { apiVersion: string; kind: string; name: string; namespace?: string };

export type As = {
  /** Sent as Impersonate-User (the way impersync acts as a ServiceAccount). */
  asUser?: string;
};

/** A non-2xx answer from the API server. `message` is the server's own Status message. */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string | undefined;
  readonly body: unknown;
  constructor(method: string, path: string, res: HttpResponse) {
    let body: unknown = res.text;
    try {
      body = JSON.parse(res.text);
    } catch {
      // not JSON
    }
    const status = body as { message?: unknown; reason?: unknown };
    super(
      typeof status.message === 'string'
        ? status.message
        : `${method} ${path}: HTTP ${res.status} ${res.text.slice(0, 300)}`,
    );
    this.name = 'ApiError';
    this.status = res.status;
    this.reason = typeof status.reason === 'string' ? status.reason : undefined;
    this.body = body;
  }
}

export type RawRequest = As & {
  method?: string;
  path: string;
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
};

/** One request with `kc`'s server, CA and credentials; the response body parsed when it is JSON. */
export async function request(
  kc: KubeConfig,
  req: RawRequest,
): Promise<{ status: number; body: unknown; text: string }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the KubeConfig has no current cluster');
  const options: https.RequestOptions = { agent: false };
  await kc.applyToHTTPSOptions(options);
  const headers: Record<string, string> = { ...req.headers };
  if (req.asUser !== undefined) headers['impersonate-user'] = req.asUser;
  if (req.body !== undefined) headers['content-type'] = req.contentType ?? 'application/json';
  const res = await sendRequest(cluster.server, options, {
    method: req.method ?? 'GET',
    path: req.path,
    headers,
    body: req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body),
  });
  let body: unknown = undefined;
  try {
    body = res.text === '' ? undefined : JSON.parse(res.text);
  } catch {
    body = res.text;
  }
  return { status: res.status, body, text: res.text };
}

/** Like request(), but throws ApiError unless the status is 2xx, and returns the body. */
export async function requestOk(kc: KubeConfig, req: RawRequest): Promise<unknown> {
  const res = await request(kc, req);
  if (res.status < 200 || res.status > 299)
    throw new ApiError(req.method ?? 'GET', req.path, { status: res.status, headers: {}, text: res.text });
  return res.body;
}

type ApiResource = { name: string; kind: string; namespaced: boolean };
const discoveryCache = new Map<string, ApiResource[]>();

/** The resource name and scope of `apiVersion`/`kind`, from the API server's discovery. */
export async function resourceFor(kc: KubeConfig, apiVersion: string, kind: string): Promise<ApiResource> {
  const server = kc.getCurrentCluster()?.server ?? '';
  const key = `${server} ${apiVersion}`;
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  for (const fresh of [false, true]) {
    let list = fresh ? undefined : discoveryCache.get(key);
    if (!list) {
      // Any authenticated user may read discovery (ClusterRole system:discovery).
      const res = await request(kc, { path: base });
      // 404: the group/version is not served at all (e.g. a CRD that is not installed).
      if (res.status === 404) break;
      if (res.status !== 200) throw new ApiError('GET', base, { status: res.status, headers: {}, text: res.text });
      list = (res.body as { resources: ApiResource[] }).resources.filter((r) => !r.name.includes('/'));
      discoveryCache.set(key, list);
    }
    const found = list.find((r) => r.kind === kind);
    if (found) return found;
  }
  throw new Error(`the API server at ${server} serves no kind ${kind} in ${apiVersion}`);
}

/** The REST path of an object (or of its collection when `name` is omitted). */
export async function pathFor(kc: KubeConfig, ref: Omit<ObjectRef, 'name'> & { name?: string }): Promise<string> {
  const r = await resourceFor(kc, ref.apiVersion, ref.kind);
  const base = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
  if (r.namespaced && !ref.namespace)
    throw new Error(`${ref.kind} ${ref.name ?? ''} is namespaced: give metadata.namespace`);
  const ns = r.namespaced ? `/namespaces/${encodeURIComponent(ref.namespace ?? '')}` : '';
  return `${base}${ns}/${r.name}${ref.name ? `/${encodeURIComponent(ref.name)}` : ''}`;
}

export type ApplyOptions = As & {
  fieldManager?: string;
  /** Sends dryRun=All: the server validates, admits and authorises, and stores nothing. */
  dryRun?: boolean;
  /** Take over conflicting fields. Default: true. */
  force?: boolean;
  /** Unknown or duplicate fields: 'Strict' rejects them (kubectl apply --server-side's default). Default: the server's (Warn). */
  fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
};

/** Server-side apply of an untyped object, sent as JSON (valid apply-patch YAML). Returns the result. */
export async function applyRaw(kc: KubeConfig, obj: KubeObject, opts: ApplyOptions = {}): Promise<KubeObject> {
  const path = await pathFor(kc, {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.metadata.name,
    namespace: obj.metadata.namespace,
  });
  const query = new URLSearchParams({
    fieldManager: opts.fieldManager ?? 'impersync-test',
    force: String(opts.force ?? true),
  });
  if (opts.dryRun) query.set('dryRun', 'All');
  if (opts.fieldValidation) query.set('fieldValidation', opts.fieldValidation);
  return (await requestOk(kc, {
    method: 'PATCH',
    path: `${path}?${query}`,
    body: obj,
    contentType: 'application/apply-patch+yaml',
    asUser: opts.asUser,
  })) as KubeObject;
}

/**
 * Labels the simulated node of that index (startControlPlane({ nodes })). A test whose pods
 * select a label only it adds decides when they may be placed, so a wait it asserts always happens.
 */
export async function labelNode(kc: KubeConfig, index: number, labels: Record<string, string>): Promise<void> {
  await requestOk(kc, {
    method: 'PATCH',
    path: `/api/v1/nodes/${nodeName(index)}`,
    body: { metadata: { labels } },
    contentType: 'application/merge-patch+json',
  });
}

/** The object, or undefined when it does not exist (404). Other errors throw ApiError. */
export async function getRaw(kc: KubeConfig, ref: ObjectRef, opts: As = {}): Promise<KubeObject | undefined> {
  const path = await pathFor(kc, ref);
  const res = await request(kc, { path, asUser: opts.asUser });
  if (res.status === 404) return undefined;
  if (res.status !== 200) throw new ApiError('GET', path, { status: res.status, headers: {}, text: res.text });
  return res.body as KubeObject;
}

export async function listRaw(
  kc: KubeConfig,
  ref: { apiVersion: string; kind: string; namespace?: string },
  opts: As = {},
): Promise<KubeObject[]> {
  const body = (await requestOk(kc, { path: await pathFor(kc, ref), asUser: opts.asUser })) as { items: KubeObject[] };
  return body.items;
}

/** Deletes the object; true when it existed. */
export async function deleteRaw(
  kc: KubeConfig,
  ref: ObjectRef,
  opts: As & { dryRun?: boolean } = {},
): Promise<boolean> {
  const path = await pathFor(kc, ref);
  const res = await request(kc, {
    method: 'DELETE',
    path: opts.dryRun ? `${path}?dryRun=All` : path,
    asUser: opts.asUser,
  });
  if (res.status === 404) return false;
  if (res.status < 200 || res.status > 299)
    throw new ApiError('DELETE', path, { status: res.status, headers: {}, text: res.text });
  return true;
}

/**
 * A namespaced custom resource kind with no schema and no status subresource (example.com/v1
 * Widget), as a cluster admin would install it for the tests of custom-resource health and
 * comparison.
 */
export const WIDGET_CRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};
