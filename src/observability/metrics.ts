// Prometheus metrics of the controller, in one registry (served on /metrics by health.ts):
// impersync's own (impersync_*), and Argo CD's application controller's under its names, types,
// help texts, label names and buckets (Argo CD v3.6.1 controller/metrics/metrics.go), so that its
// dashboards and alerts keep working (docs/metrics.md lists each and where it is served). No metric
// name is made of anything an Application says; tenant content only ever becomes a label *value*,
// which the text format escapes.
import { hostname } from 'node:os';
import { Registry, Histogram, Counter, Gauge, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  reconcileDuration: Histogram<'result'>;
  syncs: Counter<'phase'>;
  identityDecisions: Counter<'outcome'>;
  apiRequests: Counter<'code' | 'identity'>;
  queueDepth: Gauge<'queue'>;
  queueLatency: Histogram<'queue'>;
  tenantQueueDepth: Gauge<'queue' | 'tenant'>;
  tenantQueueProcessing: Gauge<'queue' | 'tenant'>;
  tenantQueueWait: Histogram<'queue' | 'tenant'>;
  /** Time a request made as a ServiceAccount waited for its tenant's share of the API server (kube/tenant-share.ts). */
  tenantApiWait: Histogram<'tenant'>;
  watchRestarts: Gauge<'resource'>;
  liveWatches: Gauge;
  liveObjectBytes: Gauge;
  /** Kubernetes Events queued or being written (controller/events.ts BackgroundEvents). */
  eventsPending: Gauge;
  /** Kubernetes Events dropped because the queue was full, by reason. */
  eventsDropped: Counter<'reason'>;
  /** Argo CD's application controller's metrics (per-Application ones are added by argocd-apps.ts). */
  argocd: ArgoCDMetrics;
  memoryBudget: Gauge<'state'>;
  memoryBudgetWaiting: Gauge;
  memoryBudgetOldestWait: Gauge;
  /** Requests to the install's renderer, by the replica (its URL) routed to; with --renderer only. */
  rendererRequests: Counter<'replica' | 'request' | 'outcome'>;
  /** The renderer replicas known now (given, or resolved from a headless Service's name). */
  rendererReplicas: Gauge;
}

type AppLabel = 'namespace' | 'name' | 'project';

export interface ArgoCDMetrics {
  info: Gauge<'version'>;
  appSync: Counter<AppLabel | 'dest_server' | 'phase' | 'dry_run'>;
  appSyncDuration: Counter<AppLabel | 'dest_server'>;
  appK8sRequests: Counter<
    AppLabel | 'server' | 'response_code' | 'verb' | 'resource_kind' | 'resource_namespace' | 'dry_run'
  >;
  orphanedResources: Gauge<AppLabel>;
  reconcile: Histogram<'namespace' | 'dest_server'>;
  clusterEvents: Counter<'server' | 'group' | 'kind'>;
  /** For a Redis client (none in the controller yet): hostname, initiator, command, failed. */
  redisRequests: Counter<'hostname' | 'initiator' | 'command' | 'failed'>;
  redisRequestDuration: Histogram<'hostname' | 'initiator'>;
  /** controller-runtime's workqueue depth, under Argo CD's queue names (app_reconciliation_queue, app_operation_processing_queue). */
  workqueueDepth: Gauge<'name'>;
  /** This process's host name, as Argo CD's hostname label says it. */
  hostname: string;
  /** Clears what Argo CD clears when controller.metrics.cache.expiration passes. */
  expire(): void;
  /**
   * Drops a deleted Application's series (Argo CD keeps them until the expiration): Applications
   * come and go with tenants, and their names must not grow the controller's memory without end.
   */
  forgetApp(namespace: string, name: string): Promise<void>;
}

/** Argo CD's names of its two application queues (controller/appcontroller.go). */
export const ARGOCD_QUEUE_NAMES = { refresh: 'app_reconciliation_queue', operation: 'app_operation_processing_queue' };

/** The Argo CD version impersync stands in for (argocd_info's version label). */
export const ARGOCD_VERSION = 'v3.6.1+impersync';

/**
 * The routed renderer client's hooks into the metrics: each request counted by its replica, and
 * the replicas known. A replica gone (a Pod replaced gets a new address) takes its series with it,
 * so that months of Pod churn do not grow the controller's metrics.
 */
export function rendererRequestMetrics(m: Metrics): {
  onRequest: (replica: string, request: string, outcome: string) => void;
  onChange: (replicas: readonly string[]) => void;
} {
  let known: readonly string[] = [];
  return {
    onRequest: (replica, request, outcome) => m.rendererRequests.inc({ replica, request, outcome }),
    onChange: (replicas) => {
      for (const gone of known.filter((r) => !replicas.includes(r)))
        for (const request of ['render', 'resolve'])
          for (const outcome of ['ok', 'error', 'unreachable'])
            m.rendererRequests.remove({ replica: gone, request, outcome });
      known = [...replicas];
      m.rendererReplicas.set(replicas.length);
    },
  };
}

export function createMetrics(opts: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'impersync_' });
  const registers = [registry];
  if (opts.defaultMetrics) {
    // The process metrics Argo CD's dashboard reads of the controller (process_cpu_seconds_total,
    // process_start_time_seconds) under their unprefixed names too: prom-client's are the same
    // metrics (CPU seconds, start time) as Go's process collector.
    collectDefaultMetrics({ register: registry, prefix: '', eventLoopMonitoringPrecision: 100 });
  }
  return {
    registry,
    argocd: createArgoCDMetrics(registers),
    reconcileDuration: new Histogram({
      name: 'impersync_reconcile_duration_seconds',
      help: 'Time to reconcile one Application, by result (ok, error).',
      labelNames: ['result'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    syncs: new Counter({
      name: 'impersync_syncs_total',
      help: 'Sync operations finished, by phase.',
      labelNames: ['phase'],
      registers,
    }),
    identityDecisions: new Counter({
      name: 'impersync_identity_decisions_total',
      help: 'Identity decisions, by outcome: impersonate, controller (disabled), fallback, deny, error.',
      labelNames: ['outcome'],
      registers,
    }),
    apiRequests: new Counter({
      name: 'impersync_api_requests_total',
      help: 'Kubernetes API requests, by HTTP code and identity kind (controller, serviceaccount).',
      labelNames: ['code', 'identity'],
      registers,
    }),
    queueDepth: new Gauge({
      name: 'impersync_queue_depth',
      help: 'Keys waiting in a work queue.',
      labelNames: ['queue'],
      registers,
    }),
    queueLatency: new Histogram({
      name: 'impersync_queue_latency_seconds',
      help: 'Time a key waited in a work queue before a worker took it.',
      labelNames: ['queue'],
      buckets: [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 60],
      registers,
    }),
    tenantQueueDepth: new Gauge({
      name: 'impersync_tenant_queue_depth',
      help: 'Keys waiting in a work queue, per tenant (AppProject; namespace:<ns> for Applications no project admits).',
      labelNames: ['queue', 'tenant'],
      registers,
    }),
    tenantQueueProcessing: new Gauge({
      name: 'impersync_tenant_queue_processing',
      help: 'Keys a work queue is processing, per tenant.',
      labelNames: ['queue', 'tenant'],
      registers,
    }),
    tenantQueueWait: new Histogram({
      name: 'impersync_tenant_queue_wait_seconds',
      help: 'Time a key waited in a work queue before a worker took it, per tenant.',
      labelNames: ['queue', 'tenant'],
      buckets: [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
      registers,
    }),
    tenantApiWait: new Histogram({
      name: 'impersync_tenant_api_wait_seconds',
      help: "Time a request made as a ServiceAccount waited for its tenant's share of the destination's API server (--tenant-api-share-ms), per tenant; requests that did not wait are not counted.",
      labelNames: ['tenant'],
      buckets: [0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
      registers,
    }),
    liveWatches: new Gauge({
      name: 'impersync_live_object_watches',
      help: 'Watches of managed objects open (one per namespace, kind and identity read).',
      registers,
    }),
    liveObjectBytes: new Gauge({
      name: 'impersync_live_object_bytes',
      help: "What the live-object watches hold, in bytes by an estimate from the objects' JSON (state=used), and what they may hold together (capacity) and each (per_watch); a watch past them ends and its objects are read one by one.",
      labelNames: ['state'],
      registers,
    }),
    eventsPending: new Gauge({
      name: 'impersync_events_pending',
      help: 'Kubernetes Events recorded and not yet written to the API server (queued, or being written).',
      registers,
    }),
    eventsDropped: new Counter({
      name: 'impersync_events_dropped_total',
      help: 'Kubernetes Events not written because the queue of Events to write was full, by reason.',
      labelNames: ['reason'],
      registers,
    }),
    memoryBudget: new Gauge({
      name: 'impersync_memory_budget_bytes',
      help: 'The memory budget of refreshes and operation steps (state=capacity), the bytes admitted (used) and the bytes waited for (waiting).',
      labelNames: ['state'],
      registers,
    }),
    memoryBudgetWaiting: new Gauge({
      name: 'impersync_memory_budget_waiting_jobs',
      help: 'Refreshes and operation steps waiting for memory budget.',
      registers,
    }),
    memoryBudgetOldestWait: new Gauge({
      name: 'impersync_memory_budget_oldest_wait_seconds',
      help: 'How long the job waiting longest for memory budget has waited.',
      registers,
    }),
    rendererRequests: new Counter({
      name: 'impersync_renderer_requests_total',
      help: 'Requests to the renderer, by replica (its address), request (render, resolve) and outcome (ok, error: answered; unreachable: the next replica was asked).',
      labelNames: ['replica', 'request', 'outcome'],
      registers,
    }),
    rendererReplicas: new Gauge({
      name: 'impersync_renderer_replicas',
      help: 'Renderer replicas the controller routes requests to (given, or resolved from the headless Service).',
      registers,
    }),
    watchRestarts: new Gauge({
      name: 'impersync_watch_restarts',
      help: 'Watch restarts (errors, silence, 410 Gone) since start, by resource.',
      labelNames: ['resource'],
      registers,
    }),
  };
}

function createArgoCDMetrics(registers: Registry[]): ArgoCDMetrics {
  const app = ['namespace', 'name', 'project'] as const;
  const info = new Gauge({
    name: 'argocd_info',
    help: 'ArgoCD version information',
    labelNames: ['version'],
    registers,
  });
  info.set({ version: ARGOCD_VERSION }, 1);
  const m = {
    info,
    appSync: new Counter({
      name: 'argocd_app_sync_total',
      help: 'Number of application syncs.',
      labelNames: [...app, 'dest_server', 'phase', 'dry_run'],
      registers,
    }),
    appSyncDuration: new Counter({
      name: 'argocd_app_sync_duration_seconds_total',
      help: 'Application sync performance in seconds total.',
      labelNames: [...app, 'dest_server'],
      registers,
    }),
    appK8sRequests: new Counter({
      name: 'argocd_app_k8s_request_total',
      help: 'Number of kubernetes requests executed during application reconciliation.',
      labelNames: [...app, 'server', 'response_code', 'verb', 'resource_kind', 'resource_namespace', 'dry_run'],
      registers,
    }),
    orphanedResources: new Gauge({
      name: 'argocd_app_orphaned_resources_count',
      help: 'Number of orphaned resources per application',
      labelNames: [...app],
      registers,
    }),
    reconcile: new Histogram({
      name: 'argocd_app_reconcile',
      help: 'Application reconciliation performance in seconds.',
      labelNames: ['namespace', 'dest_server'],
      buckets: [0.25, 0.5, 1, 2, 4, 8, 16],
      registers,
    }),
    clusterEvents: new Counter({
      name: 'argocd_cluster_events_total',
      help: 'Number of processes k8s resource events.',
      labelNames: ['server', 'group', 'kind'],
      registers,
    }),
    redisRequests: new Counter({
      name: 'argocd_redis_request_total',
      help: 'Number of redis requests executed during application reconciliation.',
      labelNames: ['hostname', 'initiator', 'command', 'failed'],
      registers,
    }),
    redisRequestDuration: new Histogram({
      name: 'argocd_redis_request_duration',
      help: 'Redis requests duration.',
      labelNames: ['hostname', 'initiator'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    }),
    workqueueDepth: new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers,
    }),
    hostname: hostname(),
  };
  return {
    ...m,
    expire: () => {
      // Argo CD's list (metrics.go SetExpiration), less the kubectl and batch metrics impersync has not.
      m.appSync.reset();
      m.appSyncDuration.reset();
      m.orphanedResources.reset();
      m.appK8sRequests.reset();
      m.clusterEvents.reset();
      m.redisRequests.reset();
      m.reconcile.reset();
      m.redisRequestDuration.reset();
    },
    forgetApp: async (namespace, name) => {
      for (const metric of [m.appSync, m.appSyncDuration, m.appK8sRequests, m.orphanedResources] as const) {
        const { values } = await (metric as Counter<AppLabel> | Gauge<AppLabel>).get();
        for (const v of values)
          if (v.labels['namespace'] === namespace && v.labels['name'] === name)
            (metric as Counter<string>).remove(v.labels as Record<string, string>);
      }
    },
  };
}

/** Argo CD's argocd_redis_request_* for a Redis client of the controller: call once per command. */
export function observeRedisRequest(m: ArgoCDMetrics, command: string, failed: boolean, seconds: number): void {
  const initiator = 'argocd-application-controller';
  m.redisRequests.inc({ hostname: m.hostname, initiator, command, failed: String(failed) });
  m.redisRequestDuration.observe({ hostname: m.hostname, initiator }, seconds);
}
