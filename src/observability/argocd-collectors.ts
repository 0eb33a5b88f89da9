// Argo CD's metrics that describe state rather than count events, computed at each scrape as Argo
// CD's collectors compute them (v3.6.1 controller/metrics/metrics.go appCollector,
// clustercollector.go): argocd_app_info, argocd_app_labels, argocd_app_condition for every
// Application impersync reconciles, argocd_cluster_* for every destination cluster it talks to.
//
// Label *names* come from the install's settings only (argocd-cmd-params-cm's
// controller.metrics.application.labels and .cluster.labels, normalised as Argo CD does: label_
// and every character outside [a-zA-Z0-9_] as _); an Application's or cluster's label values, its
// name, repository and conditions are label *values*, which the exposition format escapes.
import type { Registry } from 'prom-client';
import { Gauge } from 'prom-client';
import { normalizeGitURL } from '../project/repos.ts';
import { redactURL } from '../source/errors.ts';

/** One Application as the app collector reads it: its object and its resolved destination server ('' if none). */
export interface AppMetricSource {
  raw: Record<string, unknown>;
  destServer: string;
}

/** One destination cluster as the cluster collector reads it (Argo CD's cache.ClusterInfo). */
export interface ClusterMetricSource {
  server: string;
  name: string;
  k8sVersion: string;
  /** Objects held by impersync's live-object watches of that cluster. */
  resourcesCount: number;
  /** API resources (group and kind) those watches cover. */
  apisCount: number;
  /** When the oldest of those watches started (ms since epoch); undefined: none. */
  cacheSince: number | undefined;
  /** The cluster answered its last version request. */
  connected: boolean;
  labels: Record<string, string>;
}

/** Argo CD's metricsutil.NormalizeLabels. */
export function normalizeLabels(prefix: string, labels: readonly string[]): string[] {
  return labels.map((l) => `${prefix}_${l.replace(/[^a-zA-Z0-9_]/g, '_')}`);
}

/**
 * The label keys to export, in order, dropping those whose normalised name repeats an earlier
 * one's (Argo CD would refuse to start; here the first wins and `warn` names the other).
 */
function distinctLabels(keys: readonly string[], reserved: readonly string[], warn: (m: string) => void): string[] {
  const seen = new Set(reserved);
  const out: string[] = [];
  for (const k of keys) {
    const [n] = normalizeLabels('label', [k]);
    if (seen.has(n as string)) {
      warn(`metrics label '${k}' is left out: its Prometheus name '${n}' is already taken`);
      continue;
    }
    seen.add(n as string);
    out.push(k);
  }
  return out;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The repository URL argocd_app_info names: Argo CD's NormalizeGitURL of the first source, its password hidden. */
export function appRepo(spec: Record<string, unknown>): string {
  const source = obj(spec['source']);
  const sources = Array.isArray(spec['sources']) ? (spec['sources'] as unknown[]) : [];
  const repoURL = str(source['repoURL']) || str(obj(sources[0])['repoURL']);
  return repoURL === '' ? '' : normalizeGitURL(redactURL(repoURL));
}

const APP_INFO_LABELS = [
  'namespace',
  'name',
  'project',
  'autosync_enabled',
  'repo',
  'dest_server',
  'dest_namespace',
  'sync_status',
  'health_status',
  'hydrator_status',
  'operation',
  'phase',
] as const;

type AppInfoLabels = Record<(typeof APP_INFO_LABELS)[number], string>;

/** The label values of argocd_app_info for one Application (Argo CD's collectApps). */
export function appInfoLabels(a: AppMetricSource): AppInfoLabels {
  const meta = obj(a.raw['metadata']);
  const spec = obj(a.raw['spec']);
  const status = obj(a.raw['status']);
  const operationObj = obj(a.raw['operation']);
  const automated = obj(spec['syncPolicy'])['automated'];
  // Argo CD's IsAutomatedSyncEnabled: automated set, and its `enabled` not false.
  const autosync = automated !== undefined && automated !== null && obj(automated)['enabled'] !== false;
  let operation = '';
  if (meta['deletionTimestamp']) operation = 'delete';
  else if (a.raw['operation'] && operationObj['sync']) operation = 'sync';
  const hydrator = spec['sourceHydrator'] ? str(obj(obj(status['sourceHydrator'])['currentOperation'])['phase']) : '';
  return {
    namespace: str(meta['namespace']),
    name: str(meta['name']),
    project: str(spec['project']) || 'default',
    autosync_enabled: String(autosync),
    repo: appRepo(spec),
    dest_server: a.destServer,
    dest_namespace: str(obj(spec['destination'])['namespace']),
    sync_status: str(obj(status['sync'])['status']) || 'Unknown',
    health_status: str(obj(status['health'])['status']) || 'Unknown',
    hydrator_status: spec['sourceHydrator'] ? hydrator || 'Unknown' : '',
    operation,
    phase: str(obj(status['operationState'])['phase']),
  };
}

export interface AppCollectorOptions {
  apps: () => Iterable<AppMetricSource>;
  /** controller.metrics.application.labels: Application labels to export as argocd_app_labels. */
  appLabels?: readonly string[];
  /** controller.metrics.application.conditions: condition types to count as argocd_app_condition. */
  appConditions?: readonly string[];
  warn?: (message: string) => void;
}

export function registerAppCollectors(registry: Registry, opts: AppCollectorOptions): void {
  const warn = opts.warn ?? (() => undefined);
  const registers = [registry];
  const base = ['namespace', 'name', 'project'];
  new Gauge({
    name: 'argocd_app_info',
    help: 'Information about application.',
    labelNames: [...APP_INFO_LABELS],
    registers,
    collect() {
      this.reset();
      for (const a of opts.apps()) this.set(appInfoLabels(a), 1);
    },
  });
  const labelKeys = distinctLabels(opts.appLabels ?? [], base, warn);
  if (labelKeys.length > 0) {
    const names = normalizeLabels('label', labelKeys);
    new Gauge({
      name: 'argocd_app_labels',
      help: 'Argo Application labels converted to Prometheus labels',
      labelNames: [...base, ...names],
      registers,
      collect() {
        this.reset();
        for (const a of opts.apps()) {
          const info = appInfoLabels(a);
          const labels = obj(obj(a.raw['metadata'])['labels']);
          const values: Record<string, string> = { namespace: info.namespace, name: info.name, project: info.project };
          labelKeys.forEach((k, i) => (values[names[i] as string] = str(labels[k])));
          this.set(values, 1);
        }
      },
    });
  }
  const conditions = new Set(opts.appConditions ?? []);
  if (conditions.size > 0) {
    new Gauge({
      name: 'argocd_app_condition',
      help: 'Report application conditions.',
      labelNames: [...base, 'condition'],
      registers,
      collect() {
        this.reset();
        for (const a of opts.apps()) {
          const info = appInfoLabels(a);
          const counts = new Map<string, number>();
          const list = obj(a.raw['status'])['conditions'];
          for (const c of Array.isArray(list) ? list : []) {
            const type = str(obj(c)['type']);
            if (conditions.has(type)) counts.set(type, (counts.get(type) ?? 0) + 1);
          }
          for (const [condition, n] of counts)
            this.set({ namespace: info.namespace, name: info.name, project: info.project, condition }, n);
        }
      },
    });
  }
}

export interface ClusterCollectorOptions {
  /** The clusters at this scrape (may refresh what it knows first). */
  clusters: () => Promise<readonly ClusterMetricSource[]>;
  /** controller.metrics.cluster.labels: cluster Secret labels to export as argocd_cluster_labels. */
  clusterLabels?: readonly string[];
  now?: () => number;
  warn?: (message: string) => void;
}

export function registerClusterCollectors(registry: Registry, opts: ClusterCollectorOptions): void {
  const registers = [registry];
  const now = opts.now ?? Date.now;
  // One refresh per scrape, shared by the five gauges (prom-client collects them one by one).
  let pending: { at: number; rows: Promise<readonly ClusterMetricSource[]> } | undefined;
  const rows = (): Promise<readonly ClusterMetricSource[]> => {
    const t = now();
    if (!pending || t - pending.at > 1000) pending = { at: t, rows: opts.clusters().catch(() => []) };
    return pending.rows;
  };
  const gauge = (
    name: string,
    help: string,
    labelNames: string[],
    fill: (g: Gauge<string>, c: ClusterMetricSource) => void,
  ): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      async collect() {
        const list = await rows();
        this.reset();
        for (const c of list) fill(this, c);
      },
    });
  };
  gauge('argocd_cluster_info', 'Information about cluster.', ['server', 'k8s_version', 'name'], (g, c) =>
    g.set({ server: c.server, k8s_version: c.k8sVersion, name: c.name }, 1),
  );
  gauge('argocd_cluster_api_resource_objects', 'Number of k8s resource objects in the cache.', ['server'], (g, c) =>
    g.set({ server: c.server }, c.resourcesCount),
  );
  gauge('argocd_cluster_api_resources', 'Number of monitored kubernetes API resources.', ['server'], (g, c) =>
    g.set({ server: c.server }, c.apisCount),
  );
  gauge('argocd_cluster_cache_age_seconds', 'Cluster cache age in seconds.', ['server'], (g, c) =>
    g.set({ server: c.server }, c.cacheSince === undefined ? -1 : Math.floor((now() - c.cacheSince) / 1000)),
  );
  gauge(
    'argocd_cluster_connection_status',
    'The k8s cluster current connection status.',
    ['server', 'k8s_version'],
    (g, c) => g.set({ server: c.server, k8s_version: c.k8sVersion }, c.connected ? 1 : 0),
  );
  const warn = opts.warn ?? (() => undefined);
  const labelKeys = distinctLabels(opts.clusterLabels ?? [], ['server', 'name'], warn);
  if (labelKeys.length > 0) {
    const names = normalizeLabels('label', labelKeys);
    gauge(
      'argocd_cluster_labels',
      'Argo Cluster labels converted to Prometheus labels',
      ['server', 'name', ...names],
      (g, c) => {
        const values: Record<string, string> = { server: c.server, name: c.name };
        labelKeys.forEach((k, i) => (values[names[i] as string] = c.labels[k] ?? ''));
        g.set(values, 1);
      },
    );
  }
}
