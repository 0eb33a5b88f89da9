// Cluster tenancy, as Argo CD reads it from cluster Secrets. Pure.
//
// - Project-scoped clusters (a Secret's `project`): each is an implicit destination of that
//   AppProject, with namespace `*` or, for a namespace-scoped cluster, each of its namespaces
//   (util/argo/argo.go GetAppProjectByName, which the application controller's project cache uses).
//   With `permitOnlyProjectScopedClusters`, a matched destination is permitted only when one of the
//   project's own clusters has its name or its server (app_project_types.go IsDestinationPermitted).
// - Namespace-scoped clusters (a Secret's `namespaces`, `clusterResources`): only those namespaces
//   are managed, and cluster-scoped objects only with clusterResources; any other object in the
//   manifests fails the comparison before the live state is read (gitops-engine cluster.go
//   GetManagedLiveObjs, reported by controller/state.go as "Failed to load live state: ...").
import type { AppProject } from '../api/appproject.ts';
import type { ProjectDestinationEntry } from './destinations.ts';

/** What a cluster Secret says of tenancy (api/cluster.ts Cluster). */
export interface ClusterTenancy {
  name: string;
  server: string;
  namespaces?: readonly string[] | undefined;
  clusterResources?: boolean | undefined;
  project?: string | undefined;
}

/** The clusters scoped to `project` (Argo CD's GetProjectClusters: the Secret's `project` is the name). */
export function projectClusters<C extends ClusterTenancy>(clusters: readonly C[], project: string): C[] {
  return clusters.filter((c) => c.project !== undefined && c.project !== '' && c.project === project);
}

/** The destinations a project's own clusters add to it, in the order of the clusters. */
export function implicitDestinations(
  scoped: readonly ClusterTenancy[],
): Array<ProjectDestinationEntry & Record<string, unknown>> {
  return scoped.flatMap((c) =>
    c.namespaces && c.namespaces.length > 0
      ? c.namespaces.map((namespace) => ({ server: c.server, namespace }))
      : [{ server: c.server, namespace: '*' }],
  );
}

/**
 * The project as the application controller sees it: its destinations followed by those of its
 * project-scoped clusters. The same object when it has none, so nothing changes for most projects.
 */
export function withProjectClusters(project: AppProject, clusters: readonly ClusterTenancy[]): AppProject {
  const added = implicitDestinations(projectClusters(clusters, project.metadata.name));
  if (added.length === 0) return project;
  return { ...project, spec: { ...project.spec, destinations: [...(project.spec.destinations ?? []), ...added] } };
}

/**
 * `permitOnlyProjectScopedClusters` on a destination the project's destinations already matched:
 * true when the project does not set it, or one of its clusters has the destination's name or server.
 */
export function permittedAsProjectCluster(
  project: Pick<AppProject, 'spec'>,
  scoped: readonly Pick<ClusterTenancy, 'name' | 'server'>[],
  dst: { name: string; server: string },
): boolean {
  if (project.spec.permitOnlyProjectScopedClusters !== true) return true;
  return scoped.some((c) => c.name === dst.name || c.server === dst.server);
}

/** Does the cluster manage this namespace? Every namespace, unless its Secret lists some. */
export function managesNamespace(cluster: Pick<ClusterTenancy, 'namespaces'>, namespace: string): boolean {
  const listed = cluster.namespaces ?? [];
  return listed.length === 0 || listed.includes(namespace);
}

/** One object of the manifests, its namespace already defaulted (empty for a cluster-scoped object). */
export interface ManagedObject {
  kind: string;
  name: string;
  namespace: string;
}

/**
 * gitops-engine's refusal of the first object a namespace-scoped cluster does not manage, in its
 * words; undefined when the cluster manages them all (or is not namespace-scoped).
 */
export function namespacedModeRefusal(
  cluster: Pick<ClusterTenancy, 'namespaces' | 'clusterResources'>,
  objects: readonly ManagedObject[],
): string | undefined {
  if ((cluster.namespaces ?? []).length === 0) return undefined;
  for (const o of objects) {
    if (o.namespace === '' && cluster.clusterResources !== true)
      return `cluster level ${o.kind} "${o.name}" can not be managed when in namespaced mode`;
    if (o.namespace !== '' && !managesNamespace(cluster, o.namespace))
      return `namespace "${o.namespace}" for ${o.kind} "${o.name}" is not managed`;
  }
  return undefined;
}
