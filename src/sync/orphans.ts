// AppProject orphanedResources (Argo CD's getResourceTree, controller/appcontroller.go): the objects
// in the Application's destination namespace that no Application tracks. Argo CD counts, from its
// cluster cache, the namespace's top-level objects (no ownerReferences) that are not this
// Application's, not a known default (the `default` ServiceAccount, `kube-root-ca.crt`, the
// `kubernetes` Service of `default`), not in the project's `ignore` list, permitted by the project
// and not tracked by an Application that exists; each one with its descendants by ownerReferences
// (those tracked by an existing Application, and their subtrees, left out). impersync has no
// cluster cache, so it lists every namespaced kind it may list and watch in that namespace, as the
// Application's identity, and counts the same way. Kinds the identity may not list are not counted.
import type { KubeObject } from '../api/index.ts';
import type { OrphanedResources } from '../api/appproject.ts';
import { groupOf } from '../api/manifest.ts';
import type { DestinationClient } from '../kube/types.ts';
import { globMatch } from '../impersonation/glob.ts';
import type { ResourceFilter } from './filter.ts';
import { isExcludedResource } from './filter.ts';
import type { TrackingConfig } from './tracking.ts';
import { trackedApp } from './tracking.ts';

export interface OrphanOptions {
  namespace: string;
  /** This Application's own objects, as `group/kind/namespace/name`. */
  managed: ReadonlySet<string>;
  /** The project's orphanedResources. */
  settings: OrphanedResources;
  /** The project's namespaced allow and deny lists (AppProject.IsGroupKindPermitted). */
  permitted: (group: string, kind: string) => boolean;
  /** Whether an Application with this instance name (as tracking ids carry it) exists. */
  appExists: (instanceName: string) => boolean;
  tracking: TrackingConfig;
  filter: { rules: ResourceFilter; cluster: string };
}

export interface OrphanReport {
  /** `Kind/name` of each orphaned object, sorted. */
  orphans: string[];
  /** Collections that could not be listed (counted as having none). */
  skipped: string[];
}

interface Collection {
  path: string;
  apiVersion: string;
  group: string;
  kind: string;
}

interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
  verbs?: string[];
}

export function objectKey(group: string, kind: string, namespace: string, name: string): string {
  return `${group}/${kind}/${namespace}/${name}`;
}

function ownerUids(o: KubeObject): string[] {
  const refs = o.metadata['ownerReferences'];
  return Array.isArray(refs) ? refs.map((r) => String((r as { uid?: unknown }).uid ?? '')) : [];
}

/** Argo CD's isKnownOrphanedResourceExclusion. */
export function isKnownOrphanExclusion(
  group: string,
  kind: string,
  namespace: string,
  name: string,
  settings: OrphanedResources,
): boolean {
  if (namespace === 'default' && group === '' && kind === 'Service' && name === 'kubernetes') return true;
  if (group === '' && kind === 'ServiceAccount' && name === 'default') return true;
  if (group === '' && kind === 'ConfigMap' && name === 'kube-root-ca.crt') return true;
  return (settings.ignore ?? []).some(
    (item) =>
      (!item.kind || globMatch(item.kind, kind)) &&
      globMatch(item.group ?? '', group) &&
      (!item.name || globMatch(item.name, name)),
  );
}

async function namespacedCollections(client: DestinationClient, namespace: string): Promise<Collection[]> {
  const versions = ['v1'];
  const groups = await client.request<{ groups?: Array<{ preferredVersion?: { groupVersion?: string } }> }>({
    method: 'GET',
    path: '/apis',
  });
  if (groups.ok)
    for (const g of groups.value.groups ?? [])
      if (g.preferredVersion?.groupVersion) versions.push(g.preferredVersion.groupVersion);
  const lists = await Promise.all(
    versions.map((gv) =>
      client.request<{ resources?: ApiResource[] }>({ method: 'GET', path: gv === 'v1' ? '/api/v1' : `/apis/${gv}` }),
    ),
  );
  const ns = encodeURIComponent(namespace);
  const out: Collection[] = [];
  lists.forEach((list, i) => {
    const gv = versions[i] as string;
    if (!list.ok) return;
    for (const r of list.value.resources ?? []) {
      // Subresources are not objects; Argo CD caches only what it can list and watch.
      if (!r.namespaced || r.name.includes('/') || !r.verbs?.includes('list') || !r.verbs.includes('watch')) continue;
      const base = gv === 'v1' ? '/api/v1' : `/apis/${gv}`;
      out.push({ path: `${base}/namespaces/${ns}/${r.name}`, apiVersion: gv, group: groupOf(gv), kind: r.kind });
    }
  });
  return out;
}

/** An object listed in a namespace, with its API group. */
export interface ListedObject {
  group: string;
  object: KubeObject;
}

/**
 * Every object of the namespace that `client` may list and watch, kind by kind (resource.exclusions
 * left out); the collections it may not list are `skipped`. Shared by the orphan count and the
 * resource tree Argo CD's cache holds (argocd-cache/tree.ts).
 */
export async function listNamespaceObjects(
  client: DestinationClient,
  namespace: string,
  filter: { rules: ResourceFilter; cluster: string },
): Promise<{ listed: ListedObject[]; skipped: string[] }> {
  const skipped: string[] = [];
  const collections = (await namespacedCollections(client, namespace)).filter(
    (c) => !isExcludedResource(filter.rules, c.group, c.kind, filter.cluster),
  );
  const listed: ListedObject[] = [];
  // A few lists at a time: one namespace has a few dozen kinds.
  for (let i = 0; i < collections.length; i += 4) {
    const batch = collections.slice(i, i + 4);
    const answers = await Promise.all(
      batch.map((c) => client.request<{ items?: KubeObject[] }>({ method: 'GET', path: c.path })),
    );
    answers.forEach((answer, j) => {
      const c = batch[j] as Collection;
      if (!answer.ok) {
        skipped.push(c.path);
        return;
      }
      for (const item of answer.value.items ?? [])
        listed.push({ group: c.group, object: { ...item, apiVersion: c.apiVersion, kind: c.kind } });
    });
  }
  return { listed, skipped };
}

/** The orphaned objects of the namespace, as Argo CD counts them for OrphanedResourceWarning. */
export async function findOrphans(client: DestinationClient, opts: OrphanOptions): Promise<OrphanReport> {
  const { listed, skipped } = await listNamespaceObjects(client, opts.namespace, opts.filter);
  const byOwner = new Map<string, Array<{ group: string; object: KubeObject }>>();
  for (const entry of listed)
    for (const uid of ownerUids(entry.object)) {
      const children = byOwner.get(uid) ?? [];
      children.push(entry);
      byOwner.set(uid, children);
    }
  const ofAnotherApp = (o: KubeObject): boolean => {
    const app = trackedApp(o, opts.tracking);
    return app !== null && opts.appExists(app);
  };
  const orphans: string[] = [];
  const seen = new Set<string>();
  const visit = (entry: { group: string; object: KubeObject }): void => {
    const { object, group } = entry;
    const own = object.metadata['uid'];
    const uid = typeof own === 'string' ? own : `${group}/${object.kind}/${object.metadata.name}`;
    if (seen.has(uid) || ofAnotherApp(object) || !opts.permitted(group, object.kind)) return;
    seen.add(uid);
    orphans.push(`${object.kind}/${object.metadata.name}`);
    for (const child of byOwner.get(uid) ?? []) visit(child);
  };
  for (const entry of listed) {
    const { object, group } = entry;
    const name = object.metadata.name;
    if (ownerUids(object).length > 0) continue;
    if (opts.managed.has(objectKey(group, object.kind, opts.namespace, name))) continue;
    if (isKnownOrphanExclusion(group, object.kind, opts.namespace, name, opts.settings)) continue;
    visit(entry);
  }
  return { orphans: orphans.sort(), skipped };
}

/** Argo CD's condition message (controller/appcontroller.go getResourceTree). */
export function orphanedMessage(count: number): string {
  return `Application has ${count} orphaned resources`;
}
