// Argo CD's application controller's metrics, wired to what impersync knows (docs/metrics.md):
// the Applications in the cache (argocd_app_info, _labels, _condition), the destination clusters
// it talks to and its live-object watches there (argocd_cluster_*), and, per request made while a
// work queue handles an Application, argocd_app_k8s_request_total. The counters of syncs and the
// reconcile histogram are fed where they happen (operation.ts, manager.ts) through the helpers below.
import { parseClusterSecret, type Application, type Cluster } from '../api/index.ts';
import { resolveDestination } from '../impersonation/destination.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import { currentPurpose, describeRequest, type RequestPurpose } from '../kube/request-context.ts';
import type { ResponseHook } from '../kube/transport.ts';
import { registerAppCollectors, registerClusterCollectors } from '../observability/argocd-collectors.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { ControllerCache } from './cache.ts';
import type { ControllerParams } from './cmd-params.ts';

/** The server an Application's destination resolves to now, '' when it does not (Argo CD's dest_server). */
export function destServerOf(
  cache: ControllerCache,
  raw: Record<string, unknown>,
  clusters: readonly Cluster[] = cache.clusters().clusters,
): string {
  const r = resolveDestination(raw as unknown as Pick<Application, 'spec'>, clusters);
  return r.ok ? r.cluster.server : '';
}

/** What the requests of a refresh or a sync of this Application are counted against. */
export function purposeOf(raw: Record<string, unknown>): RequestPurpose {
  const meta = (raw['metadata'] ?? {}) as { namespace?: unknown; name?: unknown };
  const spec = (raw['spec'] ?? {}) as { project?: unknown };
  const op = (raw['operation'] ?? {}) as { sync?: { dryRun?: unknown } };
  return {
    namespace: typeof meta.namespace === 'string' ? meta.namespace : '',
    name: typeof meta.name === 'string' ? meta.name : '',
    project: typeof spec.project === 'string' && spec.project !== '' ? spec.project : 'default',
    dryRun: op.sync?.dryRun === true,
  };
}

/** The destination transports' hook: impersync's count, and Argo CD's per-Application one. */
export function destinationResponseHook(metrics: Metrics): ResponseHook {
  return (code, identity, request) => {
    metrics.apiRequests.inc({ code: String(code), identity });
    const purpose = currentPurpose();
    if (!purpose) return;
    const { verb, resourceKind, resourceNamespace } = describeRequest(request.method, request.path);
    metrics.argocd.appK8sRequests.inc({
      namespace: purpose.namespace,
      name: purpose.name,
      project: purpose.project,
      server: request.server,
      response_code: String(code),
      verb,
      resource_kind: resourceKind,
      resource_namespace: resourceNamespace,
      dry_run: String(purpose.dryRun),
    });
  };
}

/** A watch event on a destination: Argo CD's argocd_cluster_events_total{server, group, kind}. */
export function countClusterEvent(metrics: Metrics, server: string, apiVersion: string, kind: string): void {
  const slash = apiVersion.lastIndexOf('/');
  metrics.argocd.clusterEvents.inc({ server, group: slash >= 0 ? apiVersion.slice(0, slash) : '', kind });
}

/**
 * Registers the collectors on the metrics' registry (again for a new controller on the same
 * registry) and starts the expiration timer; the returned function stops it.
 */
export function wireArgoCDMetrics(opts: {
  metrics: Metrics;
  cache: ControllerCache;
  factory: DestinationClientFactory;
  params: ControllerParams;
  warn: (message: string) => void;
}): () => void {
  const { metrics, cache, factory, params } = opts;
  const registry = metrics.registry;
  for (const name of [
    'argocd_app_info',
    'argocd_app_labels',
    'argocd_app_condition',
    'argocd_cluster_info',
    'argocd_cluster_api_resource_objects',
    'argocd_cluster_api_resources',
    'argocd_cluster_cache_age_seconds',
    'argocd_cluster_connection_status',
    'argocd_cluster_labels',
  ])
    registry.removeSingleMetric(name);
  registerAppCollectors(registry, {
    apps: function* () {
      // The cluster Secrets parsed once per scrape, not once per Application.
      const clusters = cache.clusters().clusters;
      for (const key of cache.appKeys()) {
        const raw = cache.app(key) as Record<string, unknown> | undefined;
        if (raw) yield { raw, destServer: destServerOf(cache, raw, clusters) };
      }
    },
    appLabels: params.metrics.applicationLabels,
    appConditions: params.metrics.applicationConditions,
    warn: opts.warn,
  });
  registerClusterCollectors(registry, {
    clusters: async () => {
      const known = new Map<string, { name: string; labels: Record<string, string> }>();
      for (const raw of cache.secrets.list()) {
        try {
          const c = parseClusterSecret(raw);
          const labels = (raw.metadata as { labels?: Record<string, string> }).labels ?? {};
          known.set(c.server, { name: c.name, labels });
        } catch {
          // A broken cluster Secret is reported where it is used; it names no cluster here.
        }
      }
      return (await factory.destinations()).map((d) => ({
        server: d.server,
        name: known.get(d.server)?.name ?? (d.server === 'https://kubernetes.default.svc' ? 'in-cluster' : ''),
        k8sVersion: d.k8sVersion,
        resourcesCount: d.objects,
        apisCount: d.resources,
        cacheSince: d.oldestWatch,
        connected: d.connected,
        labels: known.get(d.server)?.labels ?? {},
      }));
    },
    clusterLabels: params.metrics.clusterLabels,
    warn: opts.warn,
  });
  cache.apps.on((e) => {
    if (e.type !== 'DELETED') return;
    void metrics.argocd.forgetApp(e.object.metadata.namespace ?? '', e.object.metadata.name);
  });
  if (params.metrics.cacheExpirationMs <= 0) return () => undefined;
  const timer = setInterval(() => metrics.argocd.expire(), params.metrics.cacheExpirationMs);
  timer.unref();
  return () => clearInterval(timer);
}
