// Where an object lives on an API server: its resource (through discovery) and its URL, with the
// checks a server needs to address it. Manifests come from users, so nothing about their shape is
// trusted until checked here.
import type { KubeObject } from '../api/index.ts';
import { fail, localError, ok } from './errors.ts';
import type { KubeResult, ResourceInfo } from './types.ts';

export function collectionPath(info: ResourceInfo, namespace: string | undefined): string {
  const base = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  const ns = info.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${info.resource}`;
}

export function refOf(obj: KubeObject): { apiVersion: unknown; kind: unknown; name: unknown; namespace: unknown } {
  const meta = (obj as { metadata?: { name?: unknown; namespace?: unknown } }).metadata;
  return { apiVersion: obj.apiVersion, kind: obj.kind, name: meta?.name, namespace: meta?.namespace };
}

function describe(ref: { kind: string; name?: string | undefined; namespace?: string | undefined }): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name ?? '<unnamed>'}`;
}

/** The resource and URL of one object, checking what the server needs to address it. */
export async function locate(
  o: { apiVersion: unknown; kind: unknown; name: unknown; namespace?: unknown },
  resolve: (apiVersion: string, kind: string) => Promise<KubeResult<ResourceInfo>>,
): Promise<
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
  const found = await resolve(o.apiVersion, o.kind);
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
