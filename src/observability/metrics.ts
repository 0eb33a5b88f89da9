// Prometheus metrics of the controller, in one registry (served on /metrics by health.ts).
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
  watchRestarts: Gauge<'resource'>;
  liveWatches: Gauge;
  memoryBudget: Gauge<'state'>;
  memoryBudgetWaiting: Gauge;
  memoryBudgetOldestWait: Gauge;
}

export function createMetrics(opts: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'impersync_' });
  const registers = [registry];
  return {
    registry,
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
    liveWatches: new Gauge({
      name: 'impersync_live_object_watches',
      help: 'Watches of managed objects open (one per namespace, kind and identity read).',
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
    watchRestarts: new Gauge({
      name: 'impersync_watch_restarts',
      help: 'Watch restarts (errors, silence, 410 Gone) since start, by resource.',
      labelNames: ['resource'],
      registers,
    }),
  };
}
