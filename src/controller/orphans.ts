// The OrphanedResourceWarning of one refresh (AppProject orphanedResources, Argo CD's
// getResourceTree): looked for only when the project sets orphanedResources, in the Application's
// destination namespace, as the Application's identity; the condition only when `warn` is not
// false (Argo CD's IsWarn: absent means warn).
import type { AppCondition, AppProject, Application } from '../api/index.ts';
import { CONDITION } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import { resourceDecision } from '../project/resources.ts';
import type { ResourceComparison } from '../sync/index.ts';
import { appInstanceName } from '../sync/index.ts';
import { findOrphans, objectKey, orphanedMessage } from '../sync/orphans.ts';
import type { ApplicationSemantics } from './semantics.ts';

export interface OrphanInput {
  app: Application;
  project: AppProject;
  resources: readonly ResourceComparison[];
  semantics: ApplicationSemantics;
  /** Every Application the controller sees, for "tracked by an Application that exists". */
  applications: ReadonlyArray<{ metadata: { name: string; namespace?: string | undefined } }>;
  controllerNamespace: string;
  /** Told how many orphans were found (0 when none were looked for): argocd_app_orphaned_resources_count. */
  onCount?: ((count: number) => void) | undefined;
}

export async function orphanedCondition(
  client: DestinationClient,
  input: OrphanInput,
): Promise<AppCondition | undefined> {
  const settings = input.project.spec.orphanedResources;
  const namespace = input.app.spec.destination?.namespace ?? '';
  // warn: false: Argo CD still lists them for its UI; impersync has none to show them in, so none are looked for.
  if (!settings || settings.warn === false || namespace === '') {
    input.onCount?.(0);
    return undefined;
  }
  const instances = new Set(input.applications.map((a) => appInstanceName(a, input.controllerNamespace)));
  const report = await findOrphans(client, {
    namespace,
    managed: new Set(input.resources.map((r) => objectKey(r.group, r.kind, r.namespace, r.name))),
    settings,
    permitted: (group, kind) => resourceDecision(input.project.spec, group, kind, '', true).permitted,
    appExists: (name) => instances.has(name),
    tracking: input.semantics.tracking,
    filter: input.semantics.filter,
    respectRBAC: input.semantics.settings.respectRBAC,
  });
  // Argo CD's cluster cache failed to sync: the live state did not load (controller/state.go).
  if (report.error)
    return {
      type: CONDITION.ComparisonError,
      message: `Failed to load live state: failed to get cluster info for "${input.semantics.filter.cluster}": error synchronizing cache state : ${report.error}`,
    };
  input.onCount?.(report.orphans.length);
  if (report.orphans.length === 0) return undefined;
  return { type: CONDITION.OrphanedResourceWarning, message: orphanedMessage(report.orphans.length) };
}
