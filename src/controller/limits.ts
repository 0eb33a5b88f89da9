// spec §9 for the objects an Application renders: the project's resource allow and deny lists and,
// for namespaced objects, its destinations. Whether a kind is namespaced comes from the
// destination's discovery through the Application's own client (sync/scopes.ts); the
// Application-level limits (sourceRepos, destinations) are the admission gate's. And a
// namespace-scoped cluster's refusal of objects it does not manage (project/clusters.ts).
import type { AppProject, Application, Cluster, KubeObject } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import { checkResourceLimits, describeViolation, namespacedModeRefusal } from '../project/index.ts';
import { resourceScopes } from '../sync/index.ts';
import { hasSyncOption } from '../sync/annotations.ts';

const SKIP_DRY_RUN = 'SkipDryRunOnMissingResource=true';

type Limited = { project: AppProject; app: Application; cluster: Cluster; projectClusters?: readonly Cluster[] };

/** The violations, as messages; empty when every object is permitted. */
export async function objectLimitViolations(
  client: DestinationClient,
  admitted: Limited,
  objects: readonly KubeObject[],
): Promise<string[]> {
  return checkResourceLimits({
    project: admitted.project,
    cluster: admitted.cluster,
    destinationNamespace: admitted.app.spec.destination?.namespace,
    objects,
    isNamespaced: await resourceScopes(client, objects),
    projectClusters: admitted.projectClusters,
    // As the sync's dry-run skips them (sync/prepare.ts): the Application's or the operation's option, or the object's.
    unknownKindDeferred: (o) =>
      [...(admitted.app.spec.syncPolicy?.syncOptions ?? []), ...(admitted.app.operation?.sync?.syncOptions ?? [])].some(
        (x) => x.trim() === SKIP_DRY_RUN,
      ) || hasSyncOption(o, SKIP_DRY_RUN),
  }).map(describeViolation);
}

/**
 * Argo CD's ComparisonError when the destination is a namespace-scoped cluster that does not
 * manage one of the objects, before anything is read; undefined otherwise. A kind discovery does
 * not know counts as namespaced, as in Argo CD (IsNamespacedOrUnknown).
 */
export async function unmanagedObjectRefusal(
  client: DestinationClient,
  admitted: Limited,
  objects: readonly KubeObject[],
): Promise<string | undefined> {
  if ((admitted.cluster.namespaces ?? []).length === 0) return undefined;
  const isNamespaced = await resourceScopes(client, objects);
  const destination = admitted.app.spec.destination?.namespace ?? '';
  const refusal = namespacedModeRefusal(
    admitted.cluster,
    objects.map((o) => ({
      kind: o.kind,
      name: o.metadata.name,
      namespace: isNamespaced(groupOf(o.apiVersion), o.kind) === false ? '' : o.metadata.namespace || destination,
    })),
  );
  return refusal === undefined ? undefined : `Failed to load live state: ${refusal}`;
}
