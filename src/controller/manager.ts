// Wires the watches to the queues and the queues to the reconciler, as Argo CD's application
// controller does: a refresh queue (comparison and status, `--status-processors` workers) and an
// operation queue (sync and deletion, `--operation-processors` workers). Level-based: a key in,
// the reconciler re-reads everything from the caches. Both queues share their workers fairly
// between tenants (tenants.ts: the AppProject), with per-tenant depth and wait metrics.
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { parseAppProject, parseClusterSecret } from '../api/index.ts';
import type { AppProject, Cluster } from '../api/index.ts';
import { readImpersonationSettings } from '../impersonation/settings.ts';
import { matchingGlobalProjects } from '../impersonation/global-projects.ts';
import type { Metrics } from '../observability/metrics.ts';
import { ARGOCD_QUEUE_NAMES } from '../observability/metrics.ts';
import { runFor } from '../kube/request-context.ts';
import { destServerOf, purposeOf } from './argocd-metrics.ts';
import type { KubeObject } from '../api/index.ts';
import { trackedApp } from '../sync/tracking.ts';
import type { Semantics } from './semantics.ts';
import { worthRefresh } from './update-filter.ts';
import { GPG_KEYS_CM } from './cache.ts';
import type { ControllerCache } from './cache.ts';
import { WorkQueue } from './queue.ts';
import { ConflictError } from './applications.ts';
import {
  appsAffectedByCluster,
  appsAffectedByGPGKeys,
  appsAffectedByKnownHosts,
  appsAffectedByProject,
  appsAffectedByRepository,
  appsAffectedBySettings,
  appsAffectedByTLSCerts,
} from './requeue.ts';
import { SSH_KNOWN_HOSTS_CM, SSH_KNOWN_HOSTS_KEY, TLS_CERTS_CM, parseRepositorySecret } from '../api/repository.ts';
import type { RepositoryConfig } from '../api/repository.ts';
import type { AppIndexEntry } from './requeue.ts';
import type { ReconcileResult, Workers } from './reconcile.ts';
import { appChangeNeedsRefresh, appIndexEntry, hasOperationWork, skipsReconcile } from './triggers.ts';
import { tenantOf } from './tenants.ts';
import { WorkShare } from './work-share.ts';
import type { WatchEvent, WatchedObject } from '../kube/watch.ts';
import { objectStoreKey } from '../kube/watch.ts';

/**
 * The fields of Argo CD's "Requesting app refresh caused by object update" log line
 * (controller/appcontroller.go), and the resourceVersion, so a log names the change it weighed.
 */
function objectFields(app: string, o: KubeObject): Record<string, string> {
  return {
    app,
    namespace: o.metadata.namespace ?? '(cluster-scoped)',
    name: o.metadata.name,
    'api-version': o.apiVersion,
    kind: o.kind,
    resourceVersion: String(o.metadata.resourceVersion ?? ''),
  };
}

export interface ManagerOptions {
  cache: ControllerCache;
  /** argocd-cm's tracking and ignored updates, for live-object changes (default: annotation tracking). */
  semantics?: Semantics;
  workers: Workers;
  logger: Logger;
  metrics?: Metrics;
  statusProcessors?: number;
  operationProcessors?: number;
  /** Application key → the repositories its charts' dependencies came from (the last render's). */
  dependencies?: ReadonlyMap<string, readonly string[]>;
  /** An Application was deleted (its values leave Argo CD's cache). */
  onAppDeleted?: (app: { metadata: { name: string; namespace?: string | undefined } }) => void;
  /**
   * Whether this replica acts on the Application now (shards.ts: it holds the key's shard). Keys
   * it does not own are dropped as they come off the queues. Default: every key (one replica).
   */
  owns?: (key: string) => boolean;
  /**
   * `--tenant-work-share-ms`: the milliseconds of key time one tenant may hold in the workers while
   * a cheaper tenant has work (work-share.ts); 0 turns the limit off.
   */
  workShareMs?: number;
}

/** `--tenant-work-share-ms` when not given. */
export const DEFAULT_WORK_SHARE_MS = 1000;

export class Manager {
  readonly refreshQueue: WorkQueue;
  readonly operationQueue: WorkQueue;
  private readonly workShare: WorkShare;
  private readonly opts: ManagerOptions;
  private readonly log: Logger;
  private metricsTimer: NodeJS.Timeout | undefined;
  private tenantCount: { at: number; count: number } | undefined;
  /** Handlers running, by key (up to two per key: a refresh and an operation), for drop(). */
  private readonly inFlight = new Map<Promise<void>, string>();

  constructor(opts: ManagerOptions) {
    this.opts = opts;
    this.log = opts.logger;
    // Both queues in one share: a tenant with an operation running has work for the refreshes' share too.
    this.workShare = new WorkShare({ inFlightMs: opts.workShareMs ?? DEFAULT_WORK_SHARE_MS });
    const fair = {
      tenantOf: (k: string) => this.tenantOfKey(k),
      tenants: () => this.tenants(),
      share: this.workShare,
    };
    this.refreshQueue = new WorkQueue(fair);
    this.operationQueue = new WorkQueue(fair);
    if (opts.metrics) {
      const m = opts.metrics;
      for (const [queue, q] of [
        ['refresh', this.refreshQueue],
        ['operation', this.operationQueue],
      ] as const)
        q.onTake = (_k, ms, tenant) => {
          m.queueLatency.observe({ queue }, ms / 1000);
          m.tenantQueueWait.observe({ queue, tenant }, ms / 1000);
        };
    }
  }

  /** The tenant whose share an Application's work takes (tenants.ts). */
  tenantOfKey(key: string): string {
    const raw = this.opts.cache.app(key);
    const namespace = key.slice(0, key.indexOf('/'));
    if (!raw) return `namespace:${namespace}`;
    return tenantOf(raw, (name) => this.opts.cache.project(name), this.opts.cache.namespace);
  }

  /** Tenants with Applications, counted at most once a second (each take of a key asks). */
  private tenants(): number {
    const now = Date.now();
    if (this.tenantCount && now - this.tenantCount.at < 1000) return this.tenantCount.count;
    const projects = new Map(this.opts.cache.allProjects().map((p) => [p.metadata.name, p]));
    const seen = new Set<string>();
    for (const key of this.opts.cache.appKeys()) {
      const raw = this.opts.cache.app(key);
      if (raw) seen.add(tenantOf(raw, (name) => projects.get(name), this.opts.cache.namespace));
    }
    this.tenantCount = { at: now, count: seen.size };
    return seen.size;
  }

  private appIndex(): AppIndexEntry[] {
    const out: AppIndexEntry[] = [];
    for (const key of this.opts.cache.appKeys()) {
      const raw = this.opts.cache.app(key);
      if (raw) out.push(appIndexEntry(key, raw, this.opts.dependencies?.get(key)));
    }
    return out;
  }

  /** The refresh interval from argocd-cm (timeout.reconciliation), in ms. */
  refreshIntervalMs(): number {
    return readImpersonationSettings(this.opts.cache.settingsConfigMap()).reconciliationTimeoutSeconds * 1000;
  }

  private inheritsFrom(): (project: string) => string[] {
    const settings = readImpersonationSettings(this.opts.cache.settingsConfigMap());
    const all = this.opts.cache.allProjects();
    return (name: string) => {
      const p = all.find((x) => x.metadata.name === name);
      return p ? matchingGlobalProjects(p, all, settings.globalProjects).projects.map((g) => g.metadata.name) : [];
    };
  }

  private onApp(e: WatchEvent): void {
    const key = objectStoreKey(e.object);
    const ns = e.object.metadata.namespace ?? '';
    if (!this.opts.cache.watchesNamespace(ns)) return;
    // argocd.argoproj.io/skip-reconcile: out of the controller's hands (Argo CD's canProcessApp).
    if (e.type !== 'DELETED' && skipsReconcile(e.object)) return;
    if (e.type === 'DELETED') {
      this.refreshQueue.forget(key);
      this.operationQueue.forget(key);
      this.opts.onAppDeleted?.(e.object);
      return;
    }
    if (e.type === 'RESYNC' || appChangeNeedsRefresh(e.old, e.object)) this.refreshQueue.add(key);
    // Our own status writes (operationState) must not re-trigger the operation: only a new or
    // changed operation, a deletion, or a (re)list after a restart does (the worker re-reads the
    // Application from the API server before acting, never from this cache).
    const opChanged =
      e.type !== 'MODIFIED' ||
      !isDeepStrictEqual(e.old?.['operation'], e.object['operation']) ||
      (e.old?.metadata as { deletionTimestamp?: string } | undefined)?.deletionTimestamp !==
        (e.object.metadata as { deletionTimestamp?: string }).deletionTimestamp;
    if (opChanged && hasOperationWork(e.object)) this.operationQueue.add(key);
    const phase = (e.object['status'] as { operationState?: { phase?: string } } | undefined)?.operationState?.phase;
    if (phase === 'Terminating' && !this.opts.workers.terminate?.(key)) this.operationQueue.add(key);
  }

  private onProject(e: WatchEvent): void {
    if (e.type === 'RESYNC') return;
    const name = e.object.metadata.name;
    const keys = appsAffectedByProject(this.appIndex(), name, this.inheritsFrom());
    // A change of labels can also move a project out of a global project's reach: use the old labels too.
    if (e.old) {
      try {
        const oldProject: AppProject = parseAppProject(e.old);
        const settings = readImpersonationSettings(this.opts.cache.settingsConfigMap());
        const all = this.opts.cache.allProjects();
        const oldGlobals = matchingGlobalProjects(oldProject, all, settings.globalProjects).projects.map(
          (g) => g.metadata.name,
        );
        for (const k of appsAffectedByProject(this.appIndex(), name, () => oldGlobals)) keys.push(k);
      } catch {
        // the old project did not parse: the new one decides
      }
    }
    this.requeue(keys, `AppProject ${name} changed`);
  }

  private onSettings(e: WatchEvent): void {
    if (e.type === 'RESYNC') return;
    this.requeue(appsAffectedBySettings(this.appIndex()), 'argocd-cm changed');
  }

  private onSecret(e: WatchEvent): void {
    if (e.type === 'RESYNC') return;
    const parse = (o: WatchedObject | undefined): Cluster | undefined => {
      if (!o) return undefined;
      try {
        return parseClusterSecret(o);
      } catch (err) {
        this.log.warn({ secret: objectStoreKey(o), err: (err as Error).message }, 'cluster Secret cannot be read');
        return undefined;
      }
    };
    const before = e.type === 'ADDED' ? undefined : parse(e.old);
    const after = e.type === 'DELETED' ? undefined : parse(e.object);
    this.requeue(
      appsAffectedByCluster(this.appIndex(), before, after),
      `cluster Secret ${e.object.metadata.name} changed`,
    );
  }

  /** A repository Secret or credential template changed: exactly the Applications reading a repository it matches. */
  private onRepositorySecret(e: WatchEvent): void {
    if (e.type === 'RESYNC') return;
    const parse = (o: WatchedObject | undefined): RepositoryConfig | undefined => {
      if (!o) return undefined;
      try {
        return parseRepositorySecret(o);
      } catch (err) {
        this.log.warn({ secret: objectStoreKey(o), err: (err as Error).message }, 'repository Secret cannot be read');
        return undefined;
      }
    };
    const before = e.type === 'ADDED' ? undefined : parse(e.old);
    const after = e.type === 'DELETED' ? undefined : parse(e.object);
    this.requeue(
      appsAffectedByRepository(this.appIndex(), before, after),
      `repository Secret ${e.object.metadata.name} changed`,
    );
  }

  private onKnownHosts(e: WatchEvent): void {
    if (e.type === 'RESYNC') return;
    const hosts = (o: WatchedObject | undefined): string =>
      ((o?.['data'] as Record<string, string> | undefined)?.[SSH_KNOWN_HOSTS_KEY] as string | undefined) ?? '';
    const before = e.type === 'ADDED' ? '' : hosts(e.old);
    const after = e.type === 'DELETED' ? '' : hosts(e.object);
    this.requeue(appsAffectedByKnownHosts(this.appIndex(), before, after), `${SSH_KNOWN_HOSTS_CM} changed`);
  }

  private onGPGKeys(e: WatchEvent): void {
    if (e.type === 'RESYNC') return;
    const data = (o: WatchedObject | undefined): unknown => (o as { data?: unknown } | undefined)?.data ?? {};
    if (e.type === 'MODIFIED' && isDeepStrictEqual(data(e.old), data(e.object))) return;
    const all = this.opts.cache.allProjects();
    const verifies = (name: string): boolean => {
      const p = all.find((x) => x.metadata.name === name);
      return !!p && ((p.spec.signatureKeys ?? []).length > 0 || p.spec.sourceIntegrity !== undefined);
    };
    this.requeue(appsAffectedByGPGKeys(this.appIndex(), verifies, this.inheritsFrom()), `${GPG_KEYS_CM} changed`);
  }

  private onTLSCerts(e: WatchEvent): void {
    if (e.type === 'RESYNC') return;
    const certs = (o: WatchedObject | undefined): Record<string, string> =>
      (o?.['data'] as Record<string, string> | undefined) ?? {};
    const before = e.type === 'ADDED' ? {} : certs(e.old);
    const after = e.type === 'DELETED' ? {} : certs(e.object);
    this.requeue(appsAffectedByTLSCerts(this.appIndex(), before, after), `${TLS_CERTS_CM} changed`);
  }

  /**
   * Someone changed an object an Application manages (a live-object watch saw it): refresh that
   * Application now rather than at the next periodic refresh, as Argo CD does. Its tracking id
   * names it: `<name>` in the control namespace, `<namespace>_<name>` elsewhere.
   */
  managedObjectChanged(object: KubeObject, old?: KubeObject): void {
    const settings = this.opts.semantics?.settings(this.opts.cache.settingsConfigMap());
    const app = trackedApp(object, settings?.tracking);
    if (!app) return;
    const key = this.appKey(app);
    const raw = this.opts.cache.app(key);
    if (!raw) return;
    const queue = this.queueFor(raw);
    // Already waiting: the run to come reads this change too, and the filter need not weigh it.
    if (settings && old && !queue.waiting(key)) {
      // argocd-cm's ignored updates (and, by default, ignored differences): a change only there is no refresh.
      // The filter's time is charged to the tenant, as its keys' time is: it reads the tenant's objects.
      const spent = { ms: 0 };
      void worthRefresh(settings, old, object, this.opts.semantics?.jq, spent)
        .catch((err: unknown) => {
          // A filter that cannot decide is a refresh: the comparison reads the change and says what fails.
          this.log.warn({ ...objectFields(app, object), err: String(err) }, 'cannot weigh the change; refreshing');
          return true;
        })
        .then((worth) => {
          queue.charge(this.tenantOfKey(key), spent.ms);
          if (!worth) {
            const why = 'Ignoring change of object because none of the watched resource fields have changed';
            this.log.debug(objectFields(app, object), why);
            return;
          }
          this.log.debug(objectFields(app, object), 'Requesting app refresh caused by object update');
          this.changed(app);
        });
      return;
    }
    this.log.debug(objectFields(app, object), 'Requesting app refresh caused by object update');
    this.changed(app);
  }

  /** The key of the Application a tracking id names: `<name>` in the control namespace, `<namespace>_<name>` elsewhere. */
  private appKey(app: string): string {
    const sep = app.indexOf('_');
    return sep < 0 ? `${this.opts.cache.namespace}/${app}` : `${app.slice(0, sep)}/${app.slice(sep + 1)}`;
  }

  /**
   * While an operation runs, what it applied changing (a Deployment's rollout, a hook Job ending)
   * is what its next step waits for; a refresh would only cost a conflicting status write, and the
   * refresh after the operation sees all.
   */
  private queueFor(raw: WatchedObject): WorkQueue {
    return hasOperationWork(raw) ? this.operationQueue : this.refreshQueue;
  }

  private changed(app: string): void {
    const key = this.appKey(app);
    const raw = this.opts.cache.app(key);
    if (!raw) return;
    this.queueFor(raw).add(key);
  }

  /** Every Application refreshed, and those with operation work put on the operation queue too. */
  requeueAll(why: string): void {
    const keys = this.opts.cache.appKeys();
    this.requeue(keys, why);
    for (const k of keys) {
      const raw = this.opts.cache.app(k);
      if (raw && hasOperationWork(raw)) this.operationQueue.add(k);
    }
  }

  private requeue(keys: string[], why: string): void {
    const unique = [...new Set(keys)];
    if (unique.length > 0) this.log.debug({ count: unique.length, why }, 'requeue');
    for (const k of unique) this.refreshQueue.add(k);
  }

  /**
   * The next periodic refresh, as Argo CD's application informer resyncs: every
   * `timeout.reconciliation` (or `timeout.hard.reconciliation` when that is shorter), each delayed
   * by a random part of `timeout.reconciliation.jitter` to spread the load.
   */
  private scheduleRefresh(key: string): void {
    const settings = readImpersonationSettings(this.opts.cache.settingsConfigMap());
    let interval = settings.reconciliationTimeoutSeconds * 1000;
    const hard = settings.hardReconciliationTimeoutSeconds * 1000;
    if (hard > 0 && hard < interval) interval = hard;
    if (interval <= 0) return;
    const jitter = Math.random() * settings.reconciliationJitterSeconds * 1000;
    this.refreshQueue.addAfter(key, interval + jitter);
  }

  private owns(key: string): boolean {
    return this.opts.owns?.(key) ?? true;
  }

  /**
   * A shard came to this replica: its Applications are refreshed, and their operations (one
   * another replica left Running is resumed from its recorded state, operation-machine.ts).
   */
  adopt(matches: (key: string) => boolean): void {
    for (const key of this.opts.cache.appKeys()) {
      if (!matches(key)) continue;
      const raw = this.opts.cache.app(key);
      if (!raw || skipsReconcile(raw)) continue;
      this.refreshQueue.add(key);
      if (hasOperationWork(raw)) this.operationQueue.add(key);
    }
  }

  /**
   * A shard left this replica (owns() already says no for its keys, so nothing new starts): waits
   * for the handlers of its keys still running. Queued keys stay queued and are dropped when taken.
   */
  async drop(matches: (key: string) => boolean): Promise<void> {
    const running = [...this.inFlight].filter(([, key]) => matches(key)).map(([p]) => p);
    await Promise.all(running);
  }

  private handle(kind: 'refresh' | 'operation', key: string): Promise<void> {
    // Not this replica's (sharded, and another holds the key's shard): dropped here, before any read.
    if (!this.owns(key)) return Promise.resolve();
    const run = this.handleOwned(kind, key);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight.set(settled, key);
    void settled.then(() => this.inFlight.delete(settled));
    return run;
  }

  private async handleOwned(kind: 'refresh' | 'operation', key: string): Promise<void> {
    const started = performance.now();
    const before = this.opts.cache.app(key) as Record<string, unknown> | undefined;
    const work = () => (kind === 'refresh' ? this.opts.workers.refresh(key) : this.opts.workers.operate(key));
    // The requests made for this Application are counted against it (argocd_app_k8s_request_total).
    const observeArgoCD = () => {
      if (kind !== 'refresh' || !before || !this.opts.metrics) return;
      const ns = (before['metadata'] as { namespace?: string } | undefined)?.namespace ?? '';
      this.opts.metrics.argocd.reconcile.observe(
        { namespace: ns, dest_server: destServerOf(this.opts.cache, before) },
        (performance.now() - started) / 1000,
      );
    };
    let result: ReconcileResult;
    try {
      result = await (before ? runFor(purposeOf(before), work) : work());
      this.opts.metrics?.reconcileDuration.observe({ result: 'ok' }, (performance.now() - started) / 1000);
      observeArgoCD();
    } catch (err) {
      this.opts.metrics?.reconcileDuration.observe({ result: 'error' }, (performance.now() - started) / 1000);
      observeArgoCD();
      throw err;
    }
    if (!this.opts.cache.app(key) || !this.owns(key)) return;
    if (result.operation) this.operationQueue.add(key);
    if (kind === 'operation' && !result.operationCleared && !result.operationRunning) this.refreshQueue.add(key);
    if (result.requeueAfterMs !== undefined)
      (kind === 'refresh' ? this.refreshQueue : this.operationQueue).addAfter(key, result.requeueAfterMs);
    if (kind === 'refresh') this.scheduleRefresh(key);
  }

  async start(): Promise<void> {
    const { cache } = this.opts;
    cache.apps.on((e) => this.onApp(e));
    cache.projects.on((e) => this.onProject(e));
    cache.configMaps.on((e) => this.onSettings(e));
    cache.secrets.on((e) => this.onSecret(e));
    cache.repoSecrets.on((e) => this.onRepositorySecret(e));
    cache.knownHostsCM.on((e) => this.onKnownHosts(e));
    cache.tlsCertsCM.on((e) => this.onTLSCerts(e));
    cache.gpgKeysCM.on((e) => this.onGPGKeys(e));
    cache.start();
    await cache.synced();
    const onError = (kind: string) => (key: string, err: unknown) => {
      // A conflict only means the cache was behind the API server: routine, retried at once-ish.
      const level = err instanceof ConflictError ? 'debug' : 'error';
      this.log[level](
        { application: key, queue: kind, err: err instanceof Error ? err.message : String(err) },
        'reconcile failed; retrying with backoff',
      );
    };
    this.refreshQueue.run(this.opts.statusProcessors ?? 20, (k) => this.handle('refresh', k), onError('refresh'));
    this.operationQueue.run(
      this.opts.operationProcessors ?? 10,
      (k) => this.handle('operation', k),
      onError('operation'),
    );
    for (const k of cache.appKeys()) this.refreshQueue.add(k);
    if (this.opts.metrics) {
      const m = this.opts.metrics;
      this.metricsTimer = setInterval(() => {
        m.queueDepth.set({ queue: 'refresh' }, this.refreshQueue.length);
        m.queueDepth.set({ queue: 'operation' }, this.operationQueue.length);
        m.argocd.workqueueDepth.set({ name: ARGOCD_QUEUE_NAMES.refresh }, this.refreshQueue.length);
        m.argocd.workqueueDepth.set({ name: ARGOCD_QUEUE_NAMES.operation }, this.operationQueue.length);
        // Reset first: a tenant with nothing queued any more shows no stale depth.
        m.tenantQueueDepth.reset();
        m.tenantQueueProcessing.reset();
        for (const [queue, q] of [
          ['refresh', this.refreshQueue],
          ['operation', this.operationQueue],
        ] as const)
          for (const [tenant, st] of q.tenantStats()) {
            m.tenantQueueDepth.set({ queue, tenant }, st.depth);
            m.tenantQueueProcessing.set({ queue, tenant }, st.processing);
          }
        for (const [name, w] of cache.watches()) m.watchRestarts.set({ resource: name }, w.restarts);
      }, 1000);
      this.metricsTimer.unref();
    }
  }

  /**
   * Starts no further work: both queues refuse and drop every key before anything here awaits (a
   * watch event, a retry timer or a handler finishing meanwhile would otherwise start a refresh and
   * with it a new sync), then the watches stop and the handlers in flight are waited for.
   */
  async stop(): Promise<void> {
    if (this.metricsTimer) clearInterval(this.metricsTimer);
    const drained = Promise.all([this.refreshQueue.shutdown(), this.operationQueue.shutdown()]);
    await this.opts.cache.stop();
    await drained;
    this.workShare.close();
  }
}
