// What a comparison or a sync of the rendered objects asks the API server to let its identity do,
// per object: the verbs the requests of sync/ need (docs/impersonation.md §12). Pure; the
// RightsCheck (rights.ts) asks the API server which of them the identity holds.
//
// - a managed object is read (`get`) and dry-run applied, then applied (`patch`, server-side
//   apply); when it does not exist (or its read was refused, so nobody knows), the apply creates
//   it, which the API server authorises as `create` too;
// - a hook (sync only) is read, applied (`patch`, `create`: it is made afresh) and deleted by its
//   delete policy (every hook has one: BeforeHookCreation by default);
// - an object to prune (a sync with prune) is deleted;
// - CreateNamespace=true reads and applies the destination namespace.
// Objects with `argocd.argoproj.io/hook: Skip` are never sent.
import type { KubeObject, ResourceRef, ResourceStatus } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import type { ResourceComparison } from '../sync/index.ts';
import { isHook, isSkipped } from '../sync/annotations.ts';
import { parseSyncOptions } from '../sync/options.ts';

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

/** The order verbs are named in, whatever order they were needed in. */
export const VERB_ORDER: readonly Verb[] = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/** What one object needs; `namespace` is absent for an object that names none (cluster-scoped, or the destination's). */
export interface ObjectNeed {
  group: string;
  /** The apiVersion the object was written with, when known (else the group's preferred one is used). */
  apiVersion?: string | undefined;
  kind: string;
  namespace?: string | undefined;
  verbs: readonly Verb[];
}

/** Whether an object exists, as the comparison saw it: true, false, or undefined (not read, or refused). */
export type LiveLookup = (ref: ResourceRef) => boolean | undefined;

type Located = { group?: string | undefined; kind: string; name: string; namespace?: string | undefined };

/** The entry of `list` for `ref`; a ref without a namespace is in `defaultNamespace`, or cluster-scoped. */
function findIn<T extends Located>(list: readonly T[], ref: ResourceRef, defaultNamespace: string): T | undefined {
  return list.find(
    (r) =>
      (r.group ?? '') === (ref.group ?? '') &&
      r.kind === ref.kind &&
      r.name === ref.name &&
      (ref.namespace !== undefined
        ? (r.namespace ?? '') === ref.namespace
        : (r.namespace ?? '') === defaultNamespace || (r.namespace ?? '') === ''),
  );
}

/**
 * Whether each object exists, from what a comparison read as the identity, else from what the
 * last comparison recorded (`inventory`, status.resources: a resource Synced, or whose health is
 * not Missing, existed then, so a read refused now does not make it look new). An object written without a
 * namespace was compared in `defaultNamespace` (the destination's), or at cluster scope.
 */
export function liveFrom(
  resources: readonly ResourceComparison[],
  defaultNamespace: string,
  inventory: readonly ResourceStatus[] = [],
): LiveLookup {
  return (ref) => {
    const found = findIn(resources, ref, defaultNamespace);
    if (found && found.live !== undefined) return found.live !== null;
    const recorded = findIn(inventory, ref, defaultNamespace);
    // Kinds without a health check (ConfigMaps) record none: Synced says it existed too.
    if (recorded?.status === 'Synced') return true;
    const health = recorded?.health?.status;
    return health === undefined ? undefined : health !== 'Missing';
  };
}

function refOf(o: KubeObject): ResourceRef {
  return {
    group: groupOf(o.apiVersion),
    kind: o.kind,
    name: o.metadata.name,
    ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
  };
}

function managedNeed(o: KubeObject, live: LiveLookup): ObjectNeed {
  const exists = live(refOf(o)) === true;
  return {
    group: groupOf(o.apiVersion),
    apiVersion: o.apiVersion,
    kind: o.kind,
    namespace: o.metadata.namespace,
    verbs: exists ? ['get', 'patch'] : ['get', 'create', 'patch'],
  };
}

/** What comparing `objects` needs: the managed objects' reads and dry-runs (hooks are not compared). */
export function comparisonNeeds(objects: readonly KubeObject[], live: LiveLookup): ObjectNeed[] {
  return objects.filter((o) => !isHook(o) && !isSkipped(o)).map((o) => managedNeed(o, live));
}

export interface SyncNeedOptions {
  live: LiveLookup;
  /** The inventory entries the sync would prune (a sync with prune). */
  prune?: readonly ResourceRef[];
  /** CreateNamespace=true: the destination namespace. */
  createNamespace?: string | undefined;
}

/** What syncing `objects` needs: the comparison's, the hooks', the prunes' and the namespace's. */
export function syncNeeds(objects: readonly KubeObject[], opts: SyncNeedOptions): ObjectNeed[] {
  const out = comparisonNeeds(objects, opts.live);
  for (const o of objects.filter((x) => isHook(x)))
    out.push({
      group: groupOf(o.apiVersion),
      apiVersion: o.apiVersion,
      kind: o.kind,
      namespace: o.metadata.namespace,
      verbs: ['get', 'create', 'patch', 'delete'],
    });
  for (const p of opts.prune ?? [])
    out.push({ group: p.group ?? '', kind: p.kind, namespace: p.namespace, verbs: ['delete'] });
  if (opts.createNamespace)
    out.push({ group: '', apiVersion: 'v1', kind: 'Namespace', verbs: ['get', 'create', 'patch'] });
  return out;
}

/**
 * What the sync of `objects` needed, from the comparison it started from (`resources`): what
 * existed, what it would prune (with `prune`), and the namespace it creates (CreateNamespace=true
 * among `syncOptions`) in `destination`.
 */
export function syncNeedsAfter(
  objects: readonly KubeObject[],
  resources: readonly ResourceComparison[],
  opts: {
    destination: string;
    prune: boolean;
    syncOptions: readonly string[];
    inventory?: readonly ResourceStatus[] | undefined;
  },
): ObjectNeed[] {
  return syncNeeds(objects, {
    live: liveFrom(resources, opts.destination, opts.inventory),
    prune: opts.prune
      ? resources
          .filter((r) => r.requiresPruning)
          .map((r) => ({ group: r.group, kind: r.kind, name: r.name, namespace: r.namespace }))
      : [],
    createNamespace: parseSyncOptions(opts.syncOptions).createNamespace ? opts.destination : undefined,
  });
}
