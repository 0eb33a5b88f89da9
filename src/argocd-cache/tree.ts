// One refresh's values for Argo CD's cache: the managed resources (ResourceDiff, from the
// comparison the refresh made) and the resource tree (controller/appcontroller.go getResourceTree):
// each managed object, then its descendants by ownerReferences (ReplicaSets, Pods, EndpointSlices,
// a Job's Pods, ...), read as the Application's identity. A kind the identity may not list is left
// out of the tree, never read with the controller's own credential: the tree is what the tenant may
// see, where Argo CD's comes from its cluster-wide cache read as itself.
import type { KubeObject } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import type { HealthAssessor, ResourceComparison } from '../sync/index.ts';
import { maskSecrets } from '../sync/normalize.ts';
import type { ResourceFilter } from '../sync/filter.ts';
import { listNamespaceObjects } from '../sync/orphans.ts';
import type { ListedObject } from '../sync/orphans.ts';
import { goJson } from './encode.ts';
import { nodeHealth, resourceNode } from './info.ts';
import type { ApplicationTree, ResourceDiff, ResourceNode } from './types.ts';

/** json.Marshal of an unstructured object (map keys sorted), or "null". */
function stateJson(o: KubeObject | null | undefined): string {
  return o ? goJson(o) : 'null';
}

/** hideSecretData's masking on a pair, then the pair as JSON. */
function maskedPair(a: KubeObject | null | undefined, b: KubeObject | null | undefined): [string, string] {
  const m = maskSecrets(a ?? null, b ?? null);
  return [stateJson(m.live), stateJson(m.predicted)];
}

/** The managed resources Argo CD's SetAppManagedResources writes, from one comparison. */
export function managedResources(resources: readonly ResourceComparison[]): ResourceDiff[] {
  return resources.map((r) => {
    const [liveState, targetState] = maskedPair(r.live, r.target);
    const [normalizedLiveState, predictedLiveState] =
      r.normalizedLive !== undefined || r.predictedLive !== undefined
        ? maskedPair(r.normalizedLive ?? null, r.predictedLive ?? null)
        : maskedPair(r.live, null);
    const resourceVersion = r.live?.metadata['resourceVersion'];
    return {
      group: r.group,
      kind: r.kind,
      namespace: r.namespace,
      name: r.name,
      targetState,
      liveState,
      normalizedLiveState,
      predictedLiveState,
      ...(typeof resourceVersion === 'string' ? { resourceVersion } : {}),
      modified: r.status === 'OutOfSync',
    };
  });
}

export interface TreeInput {
  resources: readonly ResourceComparison[];
  /** The Application's identity's client: every list of the tree is made as it. */
  client: DestinationClient;
  assessor: HealthAssessor;
  filter: { rules: ResourceFilter; cluster: string };
}

export interface TreeResult {
  tree: ApplicationTree;
  /** Collections the identity could not list: their objects are not in the tree. */
  skipped: string[];
}

const uidOf = (o: KubeObject): string => (typeof o.metadata['uid'] === 'string' ? o.metadata['uid'] : '');

function ownerUids(o: KubeObject): string[] {
  const refs = o.metadata['ownerReferences'];
  return Array.isArray(refs) ? refs.map((r) => String((r as { uid?: unknown }).uid ?? '')) : [];
}

export async function resourceTree(input: TreeInput): Promise<TreeResult> {
  const nodes: ResourceNode[] = [];
  const roots: KubeObject[] = [];
  for (const r of input.resources) {
    if (r.live) {
      roots.push(r.live);
      continue;
    }
    if (!r.target) continue;
    // Missing: Argo CD's node from the target, health Missing.
    nodes.push({
      group: r.group,
      version: r.version,
      kind: r.kind,
      namespace: r.namespace,
      name: r.name,
      health: { status: 'Missing' },
    });
  }
  // The namespaces the descendants can be in: those of the managed objects (a cluster-scoped
  // owner's namespaced children are not looked for).
  const namespaces = [...new Set(roots.map((o) => o.metadata.namespace ?? '').filter((ns) => ns !== ''))].sort();
  const listed: ListedObject[] = [];
  const skipped: string[] = [];
  for (const ns of namespaces) {
    const got = await listNamespaceObjects(input.client, ns, input.filter);
    listed.push(...got.listed);
    skipped.push(...got.skipped);
  }
  const byUid = new Map<string, KubeObject>();
  for (const l of listed) if (uidOf(l.object)) byUid.set(uidOf(l.object), l.object);
  for (const o of roots) if (uidOf(o)) byUid.set(uidOf(o), o);
  const byOwner = new Map<string, KubeObject[]>();
  for (const { object } of listed)
    for (const uid of ownerUids(object)) {
      const children = byOwner.get(uid) ?? [];
      children.push(object);
      byOwner.set(uid, children);
    }
  const parentNamespace = (child: KubeObject) => (uid: string) => {
    const parent = byUid.get(uid);
    return parent && parent.metadata.namespace === child.metadata.namespace ? (child.metadata.namespace ?? '') : '';
  };
  const seen = new Set<string>();
  const managedHealth = new Map(
    input.resources.filter((r) => r.live).map((r) => [uidOf(r.live as KubeObject), r.health] as const),
  );
  const queue: Array<{ object: KubeObject; managed: boolean }> = roots.map((object) => ({ object, managed: true }));
  while (queue.length > 0) {
    const { object, managed } = queue.shift() as { object: KubeObject; managed: boolean };
    const uid = uidOf(object);
    if (uid !== '' && seen.has(uid)) continue;
    if (uid !== '') seen.add(uid);
    const health = managed ? managedHealth.get(uid) : await input.assessor(object);
    const node = resourceNode(object, health, parentNamespace(object));
    if (managed && !node.health && health) {
      const h = nodeHealth(health);
      if (h) node.health = h;
    }
    nodes.push(node);
    for (const child of byOwner.get(uid) ?? []) queue.push({ object: child, managed: false });
  }
  return { tree: { nodes }, skipped };
}
