// spec §9 for the objects an Application renders: the project's resource allow and deny lists and,
// for namespaced objects, its destinations. Whether a kind is namespaced comes from the
// destination's discovery through the Application's own client (sync/scopes.ts); the
// Application-level limits (sourceRepos, destinations) are the admission gate's.
import type { AppProject, Application, Cluster, KubeObject } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import { checkResourceLimits, describeViolation } from '../project/index.ts';
import { resourceScopes } from '../sync/index.ts';
import { hasSyncOption } from '../sync/annotations.ts';

const SKIP_DRY_RUN = 'SkipDryRunOnMissingResource=true';

/** The violations, as messages; empty when every object is permitted. */
export async function objectLimitViolations(
  client: DestinationClient,
  admitted: { project: AppProject; app: Application; cluster: Cluster },
  objects: readonly KubeObject[],
): Promise<string[]> {
  return checkResourceLimits({
    project: admitted.project,
    cluster: admitted.cluster,
    destinationNamespace: admitted.app.spec.destination?.namespace,
    objects,
    isNamespaced: await resourceScopes(client, objects),
    // As the sync's dry-run skips them (sync/prepare.ts): the Application's or the operation's option, or the object's.
    unknownKindDeferred: (o) =>
      [...(admitted.app.spec.syncPolicy?.syncOptions ?? []), ...(admitted.app.operation?.sync?.syncOptions ?? [])].some(
        (x) => x.trim() === SKIP_DRY_RUN,
      ) || hasSyncOption(o, SKIP_DRY_RUN),
  }).map(describeViolation);
}
