// project/: an AppProject's own limits (spec §9), pure. Impersonation adds to them, never replaces.
//
// Contract:
// - Cluster tenancy (clusters.ts): project-scoped clusters as implicit destinations and
//   permitOnlyProjectScopedClusters; namespace-scoped clusters' refusal of objects they do not manage.
// - checkApplicationLimits(project, app, cluster, projectClusters) → violations of sourceRepos and destinations, for
//   the Application as a whole (cluster = the resolved destination: its server and name).
// - checkResourceLimits({project, cluster, destinationNamespace, objects, isNamespaced}) → violations
//   of the resource allow/deny lists and, for namespaced objects, of destinations (by the object's
//   namespace, or the destination namespace when it has none).
// - Both return [] when allowed, else every violation, each with Argo CD's message, the rule, a
//   detail naming the entry that decided, and (resources) the resource and its source location.
//   Nothing should be applied when either returns a violation.
// - The single decisions (sourceRepoDecision, destinationDecision, resourceDecision) are exported
//   for `explain`-style tooling.
export {
  checkApplicationLimits,
  checkResourceLimits,
  describeViolation,
  type ProjectViolation,
  type ProjectRule,
  type ResourceId,
  type ResolvedCluster,
  type ProjectClusters,
  type IsNamespaced,
  type ResourceLimitsInput,
} from './limits.ts';
export { sourceRepoDecision, normalizeGitURL, type RepoDecision } from './repos.ts';
export { destinationDecision, type DestinationToCheck, type DestinationDecision } from './destinations.ts';
export { resourceDecision, type ResourceDecision, type ResourceListRule } from './resources.ts';
export { pathMatch } from './pathmatch.ts';
export {
  projectClusters,
  implicitDestinations,
  withProjectClusters,
  permittedAsProjectCluster,
  managesNamespace,
  namespacedModeRefusal,
  type ClusterTenancy,
  type ManagedObject,
} from './clusters.ts';
