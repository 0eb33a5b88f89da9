// Desired objects made ready to send: namespaced kinds get the destination namespace when they name
// none, cluster-scoped ones lose theirs, every object carries its tracking id, Skip hooks are
// dropped. Kinds are looked up through discovery as the identity; a kind whose CRD is in the same
// set, or that SkipDryRunOnMissingResource=true covers (as the object's sync option or the
// Application's), is accepted before the server knows it, its dry-run skipped (gitops-engine's
// task.skipDryRun): it is applied at its wave, when whatever brings its CRD has run.
import type { KubeObject } from '../api/index.ts';
import { groupOf, objectKey } from '../api/index.ts';
import type { DestinationClient, KubeError } from '../kube/types.ts';
import { hasSyncOption, isHook, isSkipped } from './annotations.ts';
import type { ResourceFilter } from './filter.ts';
import { excludedMessage, isExcludedResource } from './filter.ts';
import type { TrackingConfig } from './tracking.ts';
import { withTrackingId } from './tracking.ts';

export interface PrepareOptions {
  /** The name objects are tracked by (Argo CD's app instance name). */
  appName: string;
  /** spec.destination.namespace; may be empty. */
  namespace: string;
  /** argocd-cm's tracking method and label key; default: the tracking-id annotation. */
  tracking?: TrackingConfig | undefined;
  /** argocd-cm's resource.exclusions / inclusions, for the destination `cluster` (its server URL). */
  filter?: { rules: ResourceFilter; cluster: string } | undefined;
  /** The sync's (else the Application's) syncOptions: SkipDryRunOnMissingResource=true for every object. */
  syncOptions?: readonly string[] | undefined;
  appSyncOptions?: readonly string[] | undefined;
}

export interface PreparedObject {
  key: string;
  /** The object as given (same reference), so a caller can find what it knew about it. */
  source: KubeObject;
  target: KubeObject;
  hook: boolean;
  /** The kind's CRD is part of this set and the server does not serve it yet. */
  pendingCrd: boolean;
  /** Why this object cannot be sent (unknown kind, missing namespace). */
  error?: KubeError;
}

export interface Prepared {
  objects: PreparedObject[];
  /** Non-fatal findings about the set as a whole (an object listed twice). */
  warnings: string[];
  /** Argo CD's ExcludedResourceWarning messages: desired objects of excluded kinds, left out. */
  excluded: string[];
}

/** `group/Kind` → scope, for the CRDs in the set. */
function crdsIn(desired: readonly KubeObject[]): Map<string, 'Namespaced' | 'Cluster'> {
  const out = new Map<string, 'Namespaced' | 'Cluster'>();
  for (const o of desired) {
    if (o.kind !== 'CustomResourceDefinition' || groupOf(o.apiVersion) !== 'apiextensions.k8s.io') continue;
    const spec = o['spec'] as { group?: unknown; scope?: unknown; names?: { kind?: unknown } } | undefined;
    if (typeof spec?.group === 'string' && typeof spec.names?.kind === 'string') {
      out.set(`${spec.group}/${spec.names.kind}`, spec.scope === 'Cluster' ? 'Cluster' : 'Namespaced');
    }
  }
  return out;
}

export async function prepareDesired(
  client: DestinationClient,
  desired: readonly KubeObject[],
  opts: PrepareOptions,
): Promise<Prepared> {
  const crds = crdsIn(desired);
  const skipAll = (opts.syncOptions ?? opts.appSyncOptions ?? []).some(
    (o) => o.trim() === 'SkipDryRunOnMissingResource=true',
  );
  const objects: PreparedObject[] = [];
  const warnings: string[] = [];
  const excluded: string[] = [];
  const seen = new Map<string, number>();
  for (const original of desired) {
    if (isSkipped(original)) continue;
    if (
      opts.filter &&
      isExcludedResource(opts.filter.rules, groupOf(original.apiVersion), original.kind, opts.filter.cluster)
    ) {
      excluded.push(excludedMessage(groupOf(original.apiVersion), original.kind, original.metadata.name));
      continue;
    }
    // Only its namespace is set here, and withTrackingId its marks: both copy the metadata alone, so
    // the target shares the rest (spec, data) with the rendered object, which nothing edits in place.
    const obj: KubeObject = { ...original, metadata: { ...original.metadata } };
    let pendingCrd = false;
    let error: KubeError | undefined;
    const info = await client.resolve(obj.apiVersion, obj.kind);
    let namespaced: boolean;
    if (info.ok) {
      namespaced = info.value.namespaced;
    } else {
      const scope = crds.get(`${groupOf(obj.apiVersion)}/${obj.kind}`);
      if (info.error.code === 404 && scope !== undefined) {
        pendingCrd = true;
        namespaced = scope === 'Namespaced';
      } else if (info.error.code === 404 && (skipAll || hasSyncOption(original, 'SkipDryRunOnMissingResource=true'))) {
        // Its scope is not known: given the destination namespace when it names none, as
        // gitops-engine does for every task; the apply at its wave finds the kind's real scope.
        pendingCrd = true;
        namespaced = true;
      } else {
        namespaced = Boolean(obj.metadata.namespace);
        error = info.error;
      }
    }
    if (namespaced) {
      if (!obj.metadata.namespace) {
        if (opts.namespace) obj.metadata.namespace = opts.namespace;
        else
          error ??= {
            code: 0,
            reason: 'Invalid',
            message: `Namespace for ${obj.metadata.name} ${obj.apiVersion}, Kind=${obj.kind} is missing.`,
          };
      }
    } else {
      delete obj.metadata.namespace;
    }
    const target = withTrackingId(obj, opts.appName, opts.namespace, opts.tracking);
    const key = objectKey(target);
    const hook = isHook(target);
    // Only hooks may be named by generateName (sync names them); anything else needs a name to be applied.
    if (!hook && !obj.metadata.name)
      error ??= {
        code: 0,
        reason: 'Invalid',
        message: `${obj.apiVersion}, Kind=${obj.kind}: metadata.name is required`,
      };
    if (!hook) {
      const count = (seen.get(key) ?? 0) + 1;
      seen.set(key, count);
      if (count > 1) {
        // Argo CD warns and keeps going; the first definition is the one used.
        warnings.push(`Resource ${key} appeared ${count} times among application resources.`);
        continue;
      }
    }
    objects.push({ key, source: original, target, hook, pendingCrd, ...(error ? { error } : {}) });
  }
  return { objects, warnings, excluded };
}
