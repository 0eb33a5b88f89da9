// What one refresh hands Argo CD's cache writer (argocd-cache/writer.ts): the Application's
// instance name, how to build its tree and managed resources from the comparison (as its
// identity, later, off the refresh), and its destination's cluster info when due.
import type { Logger } from 'pino';
import { applicationKey } from '../api/index.ts';
import type { KubeObject } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import type { HealthAssessor, ResourceComparison } from '../sync/index.ts';
import { appInstanceName } from '../sync/index.ts';
import type { ResourceFilter } from '../sync/filter.ts';
import { managedResources, resourceTree } from '../argocd-cache/tree.ts';
import type { AppCacheWrite } from '../argocd-cache/writer.ts';
import type { ClusterInfo } from '../argocd-cache/types.ts';
import type { DestinationVersions } from './capabilities.ts';
import type { Admitted } from './comparison.ts';
import type { ReconcilerDeps } from './reconciler.ts';

export interface CacheInputs {
  resources: readonly ResourceComparison[];
  client: DestinationClient;
  assessor: HealthAssessor;
  filter: { rules: ResourceFilter; cluster: string };
  capabilities: () => Promise<DestinationVersions>;
  log: Logger;
}

/** metav1.Time: whole seconds, UTC. */
const metaTime = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

export function argoCacheWrite(d: ReconcilerDeps, ctx: Admitted, input: CacheInputs): AppCacheWrite {
  const instance = appInstanceName(ctx.app, d.cache.namespace);
  const server = ctx.cluster.server;
  const safeAssessor: HealthAssessor = async (o: KubeObject) => {
    try {
      return await input.assessor(o);
    } catch {
      return null;
    }
  };
  const key = applicationKey(ctx.app);
  return {
    instance,
    exists: () => d.cache.app(key) !== undefined,
    build: async () => {
      const { tree, skipped } = await resourceTree({ ...input, assessor: safeAssessor });
      if (skipped.length > 0)
        input.log.debug({ skipped }, "Argo CD's cache: the identity may not list these; they are not in the tree");
      return { tree, managed: managedResources(input.resources) };
    },
    ...(d.argoCache?.clusterDue(server)
      ? {
          cluster: {
            server,
            info: async (): Promise<ClusterInfo> => {
              const v = await input.capabilities();
              const now = metaTime(new Date());
              const apps = d.cache.apps.list().filter((a) => {
                const dest = (a as { spec?: { destination?: { server?: string; name?: string } } }).spec?.destination;
                return dest?.server === server || (dest?.name !== undefined && dest.name === ctx.cluster.name);
              }).length;
              const kinds = (v.apiVersions ?? []).filter(
                (s) => s.split('/').length >= 2 && /^[A-Z]/.test(s.split('/').pop() ?? ''),
              ).length;
              return {
                connectionState: v.kubeVersion
                  ? { status: 'Successful', message: '', attemptedAt: now }
                  : {
                      status: 'Failed',
                      message: 'the destination version could not be read as the Application identity',
                      attemptedAt: now,
                    },
                ...(v.kubeVersion ? { serverVersion: v.kubeVersion } : {}),
                cacheInfo: { ...(kinds > 0 ? { apisCount: kinds } : {}), lastCacheSyncTime: now },
                applicationsCount: apps,
                ...(v.apiVersions ? { apiVersions: v.apiVersions } : {}),
              };
            },
          },
        }
      : {}),
  };
}
