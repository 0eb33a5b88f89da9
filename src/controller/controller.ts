// Assembles a running controller: the control-cluster connection, caches, the destination client
// factory, the renderer (the install's, or a child process this controller starts and stops), the
// Lua runner of argocd-cm's health checks, reconciler, operation runner, manager and the
// health/metrics endpoint.
import { ArgoControllerDetector } from './argocd-controller.ts';
import type { KubeConfigLike } from '../kube/kubeconfig.ts';
import type { Logger } from 'pino';
import { EXTRA_KEYS } from '../api/index.ts';
import { REQUIRE_EXTRAS_KEY } from '../impersonation/index.ts';
import { ControlClient } from '../kube/control.ts';
import { DestinationClientFactory } from '../kube/factory.ts';
import { credentialFromKubeConfig } from '../kube/credentials.ts';
import type { ResponseHook } from '../kube/transport.ts';
import type { KubeError } from '../kube/types.ts';
import { StoreTooLargeError, WatchHttpError } from '../kube/watch.ts';
import { StoreBudget } from '../kube/store-budget.ts';
import { startHealthServer } from '../observability/health.ts';
import type { HealthServer } from '../observability/health.ts';
import { createMetrics, observeRedisRequest } from '../observability/metrics.ts';
import { countClusterEvent, destinationResponseHook, wireArgoCDMetrics } from './argocd-metrics.ts';
import type { Metrics } from '../observability/metrics.ts';
import { ChildRenderer, defaultSourceCacheDir } from '../renderer/child.ts';
import type { Renderer } from '../renderer/client.ts';
import { ControllerCache } from './cache.ts';
import { BackgroundEvents, EventOrder, EventRecorder, teeEvents } from './events.ts';
import type { EventSink } from './events.ts';
import { ApplicationLimitsReader } from './app-limits.ts';
import { HealthAssessors } from './health.ts';
import { DestinationCapabilities } from './capabilities.ts';
import { Semantics } from './semantics.ts';
import { Manager } from './manager.ts';
import { Operator } from './operation.ts';
import { Reconciler } from './reconciler.ts';
import { OperationHandoff } from './handoff.ts';
import { RightsCheck } from './rights.ts';
import { CmdParamsWatch, loadControllerParams } from './cmd-params-watch.ts';
import { controllerBudget, observeBudget, STORE_SHARE_OF_BUDGET } from './memory.ts';
import { withBudgetJob } from '../renderer/budget.ts';
import { BudgetWaits, viewOf, viewOfAnswer, type BudgetView } from './budget-waits.ts';
import type { ControllerParams } from './cmd-params.ts';
import { ARGOCD_CMD_PARAMS_CM } from './cmd-params-keys.ts';
import { resolveRedisOptions } from '../argocd-cache/options.ts';
import type { RedisFlags } from '../argocd-cache/options.ts';
import { ArgoCacheWriter } from '../argocd-cache/writer.ts';
import { appInstanceName } from '../sync/index.ts';

/** `--tenant-api-share-ms` when not given. */
export const DEFAULT_TENANT_API_SHARE_MS = 1000;

export interface ControllerOptions {
  /** The control cluster: a kubeconfig of kube/kubeconfig.ts, or a client-node KubeConfig (tests). */
  kc: KubeConfigLike;
  namespace: string;
  /**
   * `--application-namespaces`, `--status-processors`, `--operation-processors`, `--log-level`
   * when given: each wins over argocd-cmd-params-cm and Argo CD's variables (cmd-params.ts).
   */
  applicationNamespaces?: string[];
  statusProcessors?: number;
  operationProcessors?: number;
  logLevel?: string;
  /** Where Argo CD's variables (ARGOCD_APPLICATION_NAMESPACES, ...) are read (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  /**
   * Where sources are rendered: the install's renderer (a RendererClient; its owner closes it), or
   * by default a child renderer process (renderer/child.ts) that this controller starts and closes.
   */
  renderer?: Renderer;
  /** The child renderer's Git clones, local repositories and log lines; unused with `renderer`. */
  childRenderer?: ChildRendererSettings;
  /** How long one sync wave may wait for health (sync/ default 5 min). */
  waitTimeoutMs?: number;
  /** Port for /healthz, /readyz, /metrics; undefined: no server. 0: any free port. */
  healthPort?: number;
  /** Extra event sinks (the `run` command's printer). */
  events?: EventSink[];
  metrics?: Metrics;
  /** Watch liveness limit; tests shorten it. */
  watchLivenessMs?: number;
  /**
   * Keep managed objects from watches made as each identity (default true): comparisons read the
   * cache and a live edit refreshes its Application at once. False: every comparison GETs.
   */
  liveObjects?: boolean;
  /**
   * The container's memory limit in bytes, of which half is the budget of what refreshes and
   * operation steps hold at once (memory.ts); default: IMPERSYNC_MEMORY_LIMIT, cgroup v2's
   * memory.max, or a quarter of the machine's memory.
   */
  memoryLimitBytes?: number;
  /**
   * A refresh or operation step that has waited this long for memory budget (the controller's or
   * the renderer's) gets a MemoryBudgetWarning condition (budget-waits.ts). Default 30 s; tests shorten it.
   */
  budgetWaitConditionMs?: number;
  /** How long one run of a cluster Secret's credential plugin may take (default 30 s); tests shorten it. */
  execTimeoutMs?: number;
  /**
   * `--tenant-api-share-ms`: the milliseconds of API server time one tenant's requests may have in
   * flight on a destination while another tenant is about (kube/tenant-share.ts); 0 turns it off.
   */
  tenantApiShareMs?: number;
  /**
   * `--tenant-work-share-ms`: the milliseconds of key time one tenant may hold in the controller's
   * workers while a cheaper tenant has work (work-share.ts); 0 turns it off.
   */
  workShareMs?: number;
  /**
   * `impersync run`'s Redis flags (--redis, --sentinel, ...): with these, Argo CD's variables or
   * argocd-cmd-params-cm's redis.* keys naming a Redis, Argo CD's cache is written there.
   */
  redis?: RedisFlags;
  /** Sharded (shards.ts): whether this replica acts on an Application now. Default: on every one. */
  owns?: (key: string) => boolean;
}

export interface ChildRendererSettings {
  /** Its Git clones and checkouts (default: $XDG_CACHE_HOME or ~/.cache, impersync/source). */
  cacheDir?: string | undefined;
  /** It accepts file:// and local repoURLs (the local demo and tests). Default false. */
  allowLocalRepositories?: boolean | undefined;
  /** Where its log lines go (default: dropped). */
  logger?: Logger | undefined;
  /** Its helm, kustomize and impersync-jsonnet folder (default: $IMPERSYNC_TOOLS_DIR, then PATH). */
  toolsDir?: string | undefined;
  /** Further `impersync renderer` flags (`--plugin-sockets=DIR`, limits). */
  flags?: readonly string[] | undefined;
}

export interface RunningController {
  manager: Manager;
  /** Argo CD's cache writer, when a Redis is given. */
  argoCache?: ArgoCacheWriter;
  /** The settings argocd-cmd-params-cm, the flags and the environment gave at start. */
  params: ControllerParams;
  cache: ControllerCache;
  metrics: Metrics;
  health?: HealthServer;
  /** Sharded: a shard came to this replica; refresh its Applications and resume their operations. */
  adopt(matches: (key: string) => boolean): void;
  /**
   * Sharded: a shard left (owns() already says no for it): abort its syncs in flight, leaving their
   * operations Running for the next owner, and wait until nothing of it runs here.
   */
  drop(matches: (key: string) => boolean): Promise<void>;
  stop(): Promise<void>;
}

export async function startController(opts: ControllerOptions): Promise<RunningController> {
  const log = opts.logger;
  const metrics = opts.metrics ?? createMetrics();
  // Every request to every API server is counted in the one transport (kube/transport.ts); those to
  // destinations made for an Application also as Argo CD counts them (argocd-metrics.ts).
  const onResponse: ResponseHook = (code, identity) => metrics.apiRequests.inc({ code: String(code), identity });
  const onDestinationResponse = destinationResponseHook(metrics);
  const credential = await credentialFromKubeConfig(opts.kc);
  const control = new ControlClient(credential, { onResponse });
  const { params, data: cmdParamsData } = await loadControllerParams(control, opts.namespace, log, {
    env: opts.env ?? process.env,
    flags: {
      applicationNamespaces: opts.applicationNamespaces,
      statusProcessors: opts.statusProcessors,
      operationProcessors: opts.operationProcessors,
      logLevel: opts.logLevel,
    },
  });
  const redis = resolveRedisOptions({ flags: opts.redis, env: opts.env ?? process.env, data: cmdParamsData });
  for (const w of redis.warnings) log.warn({ configMap: ARGOCD_CMD_PARAMS_CM }, w);
  if ('error' in redis)
    log.error({ err: redis.error }, "Argo CD's cache is not written: its Redis settings are unusable");
  const argoCache = redis.enabled
    ? new ArgoCacheWriter(redis.config, {
        logger: log,
        registry: metrics.registry,
        observe: (command, failed, seconds) => observeRedisRequest(metrics.argocd, command, failed, seconds),
      })
    : undefined;
  if (redis.enabled)
    log.info(
      {
        redis: redis.config.address ?? redis.config.sentinels.map((s) => `${s.host}:${s.port}`),
        ...(redis.config.sentinels.length ? { sentinelMaster: redis.config.sentinelMaster } : {}),
        db: redis.config.db,
        compression: redis.config.compression,
        tls: redis.config.tls !== undefined,
      },
      "writing Argo CD's cache (resource trees, managed resources, cluster info) to Redis",
    );
  if (!params.gpgEnabled)
    log.warn(
      'ARGOCD_GPG_ENABLED is false: no commit signature is verified, whatever AppProject signatureKeys or sourceIntegrity ask, as in Argo CD',
    );
  const cmdParamsWatch = new CmdParamsWatch(control.watchTransport(), opts.namespace, cmdParamsData, log);
  const cache = new ControllerCache(control.watchTransport(), {
    namespace: opts.namespace,
    applicationNamespaces: params.applicationNamespaces,
    gpgEnabled: params.gpgEnabled,
    ...(opts.watchLivenessMs !== undefined ? { livenessMs: opts.watchLivenessMs } : {}),
    onError: (what, err) => log.warn({ watch: what, err: err.message }, 'watch interrupted; reconnecting'),
  });
  const holder: { manager?: Manager } = {};
  // Once per destination credential (kube/attribution.ts): requests go on without the extras.
  const onExtrasRefused = (server: string, err: KubeError) =>
    log.warn(
      { server, err: err.message },
      `the controller may not impersonate impersync's user extras on ${server}: requests made as ServiceAccounts there do not name their Application, project and revision in the audit log (unless argocd-cm sets ${REQUIRE_EXTRAS_KEY}: "true", which makes them fail instead). Grant impersonate on userextras/${EXTRA_KEYS.join(', userextras/')} (docs/install.md)`,
    );
  // Each destination's API server shared between tenants by the time their requests take (kube/tenant-share.ts).
  const tenantShare = {
    inFlightMs: opts.tenantApiShareMs ?? DEFAULT_TENANT_API_SHARE_MS,
    onWait: (tenant: string, ms: number) => metrics.tenantApiWait.observe({ tenant }, ms / 1000),
  };
  const budget = controllerBudget(opts, log);
  // The live-object watches' objects, held between jobs, bounded apart from the jobs' budget.
  const storeBudget = new StoreBudget({ totalBytes: budget.capacity * STORE_SHARE_OF_BUDGET });
  const factory = new DestinationClientFactory(
    credential,
    opts.liveObjects === false
      ? { onResponse: onDestinationResponse, onExtrasRefused, execTimeoutMs: opts.execTimeoutMs, tenantShare }
      : {
          onResponse: onDestinationResponse,
          onExtrasRefused,
          execTimeoutMs: opts.execTimeoutMs,
          tenantShare,
          liveObjects: {
            storeBudget,
            onChange: (_server, object, old) => holder.manager?.managedObjectChanged(object, old),
            onEvent: (server, apiVersion, kind) => countClusterEvent(metrics, server, apiVersion, kind),
            // One request per namespace and kind (a watch that lists), where the server can (WatchList).
            streamingList: true,
            // Kept while Applications read them: three refresh intervals without a read, at least 30 min
            // (0, no periodic refresh: a day, so that a deleted Application's watches end eventually).
            idleMs: () => {
              const interval = holder.manager?.refreshIntervalMs() ?? 0;
              return interval > 0 ? Math.max(1_800_000, 3 * interval) : 86_400_000;
            },
            onError: (collection, err) => {
              if (err instanceof StoreTooLargeError) {
                log.warn(
                  { collection, err: err.message },
                  'live-object watch ended: its objects are too large to keep (impersync_live_object_bytes); comparisons GET them one by one, and self-heal waits for the next refresh; asking again in 10 min',
                );
              } else if (err instanceof WatchHttpError) {
                log.info(
                  { collection, err: err.message },
                  'cannot list or watch these objects: comparisons GET them one by one (grant list and watch for cheaper refreshes and self-heal within seconds); asking again in 10 min',
                );
              } else {
                log.debug({ collection, err: err.message }, 'live-object watch interrupted; reconnecting');
              }
            },
          },
        },
  );
  const recorder = new EventRecorder(control);
  recorder.onError = (err) => log.warn({ err: err.message }, 'event not recorded');
  // Events are written behind the workers, in order per Application (events.ts).
  let droppedLogged = 0;
  const background = new BackgroundEvents(recorder, {
    onPending: (n) => metrics.eventsPending.set(n),
    onDrop: ({ object, reason }) => {
      metrics.eventsDropped.inc({ reason });
      if (Date.now() - droppedLogged < 60_000) return;
      droppedLogged = Date.now();
      log.warn(
        { application: `${object.namespace}/${object.name}`, reason },
        'Kubernetes Event dropped: too many Events waiting to be written (impersync_events_dropped_total counts them; logged at most once a minute)',
      );
    },
  });
  const events = teeEvents(background, ...(opts.events ?? []));
  const refreshIntervalMs = () => holder.manager?.refreshIntervalMs() ?? 120_000;
  const child = opts.childRenderer;
  const renderer =
    opts.renderer ??
    new ChildRenderer({
      cacheDir: child?.cacheDir ?? defaultSourceCacheDir(),
      ...(child?.allowLocalRepositories ? { allowLocalRepositories: true } : {}),
      ...(child?.logger ? { logger: child.logger } : {}),
      ...(child?.toolsDir ? { toolsDir: child.toolsDir } : {}),
      ...(child?.flags ? { flags: child.flags } : {}),
    });
  // Lua health checks from argocd-cm, run in a worker thread that stop() ends.
  const assessors = new HealthAssessors();
  const limits = new ApplicationLimitsReader((message) => log.warn(message));
  const capabilities = new DestinationCapabilities();
  // Which rights an identity lacks, asked after a refusal; answers shared by refreshes and syncs.
  const rights = new RightsCheck();
  // ignoreDifferences' jq expressions, run in a worker thread that stop() ends.
  const semantics = new Semantics({ serverSideDiff: params.serverSideDiff });
  // Argo CD's own application controller in the control namespace: nothing is reconciled while it runs.
  const argoController = new ArgoControllerDetector(control.watchTransport(), opts.namespace, log);
  const waitThresholdMs = opts.budgetWaitConditionMs ?? 30_000;
  const waits = new BudgetWaits({ control, app: (k) => cache.app(k), thresholdMs: waitThresholdMs, logger: log });
  const common = {
    argoController,
    cache,
    factory,
    control,
    renderer,
    events,
    eventOrder: new EventOrder(),
    logger: log,
    metrics,
    health: assessors,
    capabilities,
    rights,
    semantics,
    limits,
  };
  // The repositories each Application's chart dependencies came from: their Secrets' changes refresh it.
  const dependencies = new Map<string, readonly string[]>();
  // The write that starts an automated sync, handed from the refresh to the operation worker.
  const handoff = new OperationHandoff();
  const reconciler = new Reconciler({
    ...common,
    handoff,
    refreshIntervalMs,
    dependencies,
    selfHeal: params.selfHeal,
    argoCache,
  });
  const operator = new Operator({
    ...common,
    handoff,
    waitTimeoutMs: opts.waitTimeoutMs,
    waveDelayMs: params.waveDelayMs,
    syncTimeoutMs: params.syncTimeoutMs,
  });
  const manager: Manager = new Manager({
    cache,
    semantics,
    workers: {
      // Each a job of the memory budget: what its renders hold is admitted before it is read, in
      // its tenant's share of the budget (a quarter kept free for the others).
      refresh: (k) =>
        waits.run(k, 'refresh', () =>
          withBudgetJob(budget, `Application ${k}`, () => reconciler.refresh(k), manager.tenantOfKey(k)),
        ),
      operate: (k) =>
        waits.run(k, 'operation', () =>
          withBudgetJob(budget, `Application ${k}`, () => operator.operate(k), manager.tenantOfKey(k)),
        ),
      terminate: (k) => operator.terminate(k),
    },
    logger: log,
    metrics,
    dependencies,
    statusProcessors: params.statusProcessors,
    operationProcessors: params.operationProcessors,
    ...(opts.workShareMs !== undefined ? { workShareMs: opts.workShareMs } : {}),
    ...(argoCache
      ? {
          onAppDeleted: (app: { metadata: { name: string; namespace?: string | undefined } }) =>
            void argoCache.forget(appInstanceName(app, opts.namespace)),
        }
      : {}),
    ...(opts.owns ? { owns: opts.owns } : {}),
  });
  holder.manager = manager;
  argoController.onChange = () => manager.requeueAll("Argo CD's application controller started or stopped");
  const liveWatches = setInterval(() => {
    metrics.liveWatches.set(factory.liveWatchCount());
    metrics.liveObjectBytes.set({ state: 'used' }, storeBudget.used);
    metrics.liveObjectBytes.set({ state: 'capacity' }, storeBudget.totalBytes);
    metrics.liveObjectBytes.set({ state: 'per_watch' }, storeBudget.perWatchBytes);
    observeBudget(budget, metrics, log);
  }, 5000);
  liveWatches.unref();
  // Jobs that wait long for memory, here or in the renderer, are said on their Applications.
  let observingWaits = false;
  const observeWaits = async (): Promise<void> => {
    if (observingWaits || !waits.busy) return;
    observingWaits = true;
    try {
      const views: BudgetView[] = [viewOf("the controller's memory budget", budget, Date.now())];
      if ('budgets' in renderer && renderer.budgets) {
        // Several replicas: each its own budget, named by its address.
        for (const { replica, answer } of await renderer.budgets().catch(() => []))
          if (answer.capacity > 0) views.push(viewOfAnswer(`the memory budget of renderer replica ${replica}`, answer));
      } else {
        const answer = await renderer.budget?.().catch(() => undefined);
        if (answer && answer.capacity > 0) views.push(viewOfAnswer("the renderer's memory budget", answer));
      }
      waits.observe(views);
    } finally {
      observingWaits = false;
    }
  };
  const waitTimer = setInterval(() => void observeWaits(), Math.min(5000, Math.max(200, waitThresholdMs / 2)));
  waitTimer.unref();
  const stopArgoCDMetrics = wireArgoCDMetrics({ metrics, cache, factory, params, warn: (m) => log.warn(m) });
  let health: HealthServer | undefined;
  if (opts.healthPort !== undefined) {
    health = await startHealthServer({
      port: opts.healthPort,
      registry: metrics.registry,
      readiness: () => (cache.notSynced() ? `caches not synced: ${cache.notSynced()}` : ''),
    });
  }
  argoController.start();
  await argoController.ready;
  await manager.start();
  cmdParamsWatch.start();
  log.info({ namespace: opts.namespace, applicationNamespaces: params.applicationNamespaces }, 'controller started');
  const m = manager;
  return {
    manager: m,
    ...(argoCache ? { argoCache } : {}),
    params,
    cache,
    metrics,
    ...(health ? { health } : {}),
    adopt: (matches) => m.adopt(matches),
    drop: async (matches) => {
      operator.abandon(matches);
      try {
        await m.drop(matches);
      } finally {
        operator.forgive(matches);
      }
    },
    stop: async () => {
      clearInterval(liveWatches);
      clearInterval(waitTimer);
      stopArgoCDMetrics();
      await cmdParamsWatch.stop();
      await argoController.stop();
      // Order matters: the queues refuse new work first (synchronously, inside m.stop()), then the
      // syncs in flight are aborted and left Running, then their handlers are waited for.
      const stopped = m.stop();
      operator.abandonAll();
      await stopped;
      await waits.settled();
      // What the workers recorded last is written before the connections close.
      const left = background.pending;
      if (!(await background.flush(5_000)))
        log.warn({ events: background.pending, of: left }, 'stopping with Kubernetes Events not written after 5 s');
      await factory.close();
      await control.close();
      // A child renderer this controller started ends with it.
      if (!opts.renderer) await renderer.close();
      await argoCache?.close();
      await assessors.close();
      await semantics.close();
      await health?.close();
    },
  };
}
