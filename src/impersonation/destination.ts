// Resolving an Application's destination to a cluster (spec §6): `server` is looked up as written,
// `name` goes through the cluster Secrets' names; `in-cluster` / https://kubernetes.default.svc is
// built in unless a cluster Secret redefines it. The resolved server is what §3 matches against.
// argocd-cm `cluster.inClusterEnabled: "false"` takes that server away, Secret or not, with Argo
// CD's errors (util/db/cluster.go GetCluster, GetClusterServersByName).
import { IN_CLUSTER, type Application, type Cluster } from '../api/index.ts';

export type DestinationResult = { ok: true; cluster: Cluster } | { ok: false; field: string; error: string };

/** The known clusters: the Secrets given, plus the built-in in-cluster one unless a Secret has its server. */
export function knownClusters(clusters: readonly Cluster[]): Cluster[] {
  return clusters.some((c) => c.server === IN_CLUSTER.server) ? [...clusters] : [IN_CLUSTER, ...clusters];
}

export function resolveDestination(
  app: Pick<Application, 'spec'>,
  clusters: readonly Cluster[],
  opts: { inClusterEnabled?: boolean } = {},
): DestinationResult {
  const destination = app.spec.destination ?? {};
  const server = destination.server ?? '';
  const name = destination.name ?? '';
  const inCluster = opts.inClusterEnabled !== false;
  const all = inCluster ? knownClusters(clusters) : clusters.filter((c) => c.server !== IN_CLUSTER.server);
  if (server !== '' && name !== '') {
    return {
      ok: false,
      field: 'spec.destination',
      error: `application destination can't have both name and server defined: ${name} ${server}`,
    };
  }
  if (server !== '' && !inCluster && server.replace(/\/+$/, '') === IN_CLUSTER.server) {
    const error = `cluster "${IN_CLUSTER.server}" is disabled`;
    return {
      ok: false,
      field: 'spec.destination.server',
      error: `error getting cluster by server "${server}": rpc error: code = NotFound desc = ${error}`,
    };
  }
  if (server !== '') {
    const cluster = all.find((c) => c.server === server);
    if (!cluster)
      return {
        ok: false,
        field: 'spec.destination.server',
        error: `destination cluster server '${server}' not found: no cluster Secret has that server`,
      };
    return { ok: true, cluster };
  }
  if (name !== '') {
    const found = all.filter((c) => c.name === name);
    if (found.length === 0 && !inCluster && knownClusters(clusters).some((c) => c.name === name))
      return { ok: false, field: 'spec.destination.name', error: `there are no clusters with this name: ${name}` };
    if (found.length === 0)
      return {
        ok: false,
        field: 'spec.destination.name',
        error: `destination cluster name '${name}' not found: no cluster Secret has that name`,
      };
    if (found.length > 1) {
      return {
        ok: false,
        field: 'spec.destination.name',
        error: `destination cluster name '${name}' is ambiguous: ${found.length} clusters have it [${found.map((c) => c.server).join(' ')}]`,
      };
    }
    return { ok: true, cluster: found[0] as Cluster };
  }
  return { ok: false, field: 'spec.destination', error: 'application destination has neither server nor name' };
}
