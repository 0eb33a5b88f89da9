// `impersync run`: the controller against a cluster (a kubeconfig, or in-cluster in a Pod). With no
// flag and no in-cluster environment it is the README's first command: a local control plane, the
// CRDs and the examples, and a line for each Application synced (as which ServiceAccount) or refused (why).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { EVENT_REASON } from '../api/index.ts';
import { listFlag, parseFlags, stringFlag, type Flags } from './args.ts';
import { parseGoDuration } from '../argocd-cache/options.ts';
import type { RedisFlags } from '../argocd-cache/options.ts';
import { isCompression } from '../argocd-cache/encode.ts';
import { connectControlCluster } from '../kube/control.ts';
import { Kubeconfig } from '../kube/kubeconfig.ts';
import type { ControlClient } from '../kube/control.ts';
import { rendererToken } from '../controller/renderer-token.ts';
import { RendererClient, type Renderer } from '../renderer/client.ts';
import { parseRendererTargets } from '../renderer/replicas.ts';
import { RoutedRenderer } from '../renderer/routed.ts';
import { startController } from '../controller/controller.ts';
import { memoryLimit } from '../controller/memory.ts';
import { parseByteSize } from '../renderer/sizes.ts';
import { splitList } from '../controller/cmd-params.ts';
import type { RunningController } from '../controller/controller.ts';
import type { EventSink } from '../controller/events.ts';
import { checkTimings, defaultIdentity, startLeaderElection } from '../controller/leader.ts';
import { shardOf, startShards } from '../controller/shards.ts';
import type { Shards } from '../controller/shards.ts';
import { startHealthServer } from '../observability/health.ts';
import { createLogger, isLogLevel, type Logger } from '../observability/logger.ts';
import { createMetrics, rendererRequestMetrics, type Metrics } from '../observability/metrics.ts';

export const RUN_USAGE = `usage: impersync run [--kubeconfig FILE] [--context NAME] [--namespace NS]
                    [--application-namespaces GLOBS] [--status-processors N] [--operation-processors N]
                    [--health-port PORT] [--log-level LEVEL] [--leader-elect [--leader-election-lease NAME]]
                    [--shards N] [--leader-election-lease-duration D] [--leader-election-renew-deadline D]
                    [--leader-election-retry-period D]
                    [--renderer URL... [--renderer-token-secret NAME | --renderer-token-file FILE]]
                    [--allow-local-repositories] [--renderer-metrics-listen HOST:PORT] [--memory-limit SIZE]
                    [--renderer-memory-limit SIZE] [--tenant-api-share-ms MS] [--tenant-work-share-ms MS]
                    [--redis HOST:PORT | --sentinel HOST:PORT... [--sentinelmaster NAME]] [--redisdb N]
                    [--redis-compress gzip|none] [--redis-use-tls [--redis-ca-certificate FILE]
                    [--redis-client-certificate FILE --redis-client-key FILE] [--redis-insecure-skip-tls-verify]]
                    [--app-state-cache-expiration DURATION]

Runs the controller: watches Applications, AppProjects, argocd-cm and cluster Secrets in NS and
syncs each Application as the ServiceAccount its AppProject assigns (destinationServiceAccounts).

  --kubeconfig FILE              the control cluster (default: KUBECONFIG, ~/.kube/config, in-cluster)
  --namespace NS                 the control namespace (default argocd)
  --application-namespaces GLOBS more namespaces whose Applications are reconciled, comma-separated
                                 globs (apps in any namespace; the project's sourceNamespaces must allow them)
                                 (default: ARGOCD_APPLICATION_NAMESPACES, then argocd-cmd-params-cm
                                 application.namespaces)
  --status-processors N          comparison workers (default: controller.status.processors, or 20)
  --operation-processors N       sync workers (default: controller.operation.processors, or 10)
  --health-port PORT             /healthz, /readyz, /metrics (default 8080; 0 picks a free port)
  --log-level LEVEL              trace, debug, info (default: controller.log.level), warn, error
  --leader-elect                 run as one of several replicas: only the holder of a Lease in NS reconciles
  --leader-election-lease NAME   the Lease's name (default impersync-controller); with --shards, the
                                 prefix of the shard Leases NAME-shard-I and member Leases NAME-member-ID
  --shards N                     share the Applications among the replicas: N shards by a hash of each
                                 Application's namespace/name, each held through a Lease, a replica acting
                                 only on the shards it holds and taking its even share of them
                                 (replicas find each other through their member Leases). Default 1
                                 (no sharding: with --leader-elect, one replica works)
  --leader-election-lease-duration D, --leader-election-renew-deadline D, --leader-election-retry-period D
                                 the Leases' timings (default 15s, 10s, 2s; as 500ms, 15s or 1m);
                                 the renew deadline must be shorter than the lease duration
  --renderer URL                 the renderer that renders sources (http://host:port or unix:/path);
                                 default: a child process of this one (impersync renderer), with no
                                 variable of this process's environment but PATH. Several replicas:
                                 repeat the flag or separate URLs by commas, or give
                                 dns+http://NAME:PORT, a headless Service whose every address is a
                                 replica (looked up again every 30 s and when one does not answer;
                                 the install: dns+http://impersync-renderer-headless:8081).
                                 Each request goes to the replica its repository (repoURL) ranks
                                 first by rendezvous hashing, so that the repository's caches stay on
                                 one replica; a replica that does not answer is passed over for the
                                 next, an answer (an error too) is final
  --renderer-token-secret NAME   the Secret in NS holding the renderer's token; made when missing
                                 (default impersync-renderer-token, with --renderer)
  --renderer-token-file FILE     the renderer's token from a file instead
  --memory-limit SIZE            the container's memory limit (e.g. 1Gi); half of it is what refreshes
                                 and syncs may hold at once (default: IMPERSYNC_MEMORY_LIMIT, else
                                 cgroup v2 memory.max, else a quarter of the machine's memory)
  --renderer-memory-limit SIZE   the child renderer's memory limit (its --memory-limit; default: as a
                                 renderer finds its own, cgroup v2 memory.max, else the machine's
                                 memory). In one container, give the two their shares of its limit
  --tenant-api-share-ms MS       each destination's API server shared between tenants (AppProjects) by
                                 the time their requests take: while another tenant is about, a
                                 tenant may have in flight only as many requests made as its
                                 ServiceAccounts as its recent requests' time fits in MS (at least
                                 one). Default 1000; 0 turns the share off
  --tenant-work-share-ms MS      the controller's workers shared between tenants by the time their
                                 refreshes and operations take: while a tenant whose keys cost at
                                 most half as much has work, a tenant may hold only as many workers
                                 as its recent keys' time fits in MS (at least one). Default 1000;
                                 0 turns the share off
  --allow-local-repositories     the child renderer accepts file:// and local paths as repoURL
                                 (local demos and tests; never with tenants)
  --renderer-metrics-listen ADDR the child renderer serves its /metrics (Argo CD's git request
                                 metrics) on this host:port (default: not served; docs/metrics.md)

Argo CD's cache, for argocd-server's resource tree, live manifests and diff (off without a Redis):
  --redis HOST:PORT              the Redis Argo CD's server reads (argocd-redis:6379; default:
                                 REDIS_SERVER, then argocd-cmd-params-cm redis.server)
  --sentinel HOST:PORT           a Redis sentinel (repeatable; default REDIS_SENTINEL_HOSTS, redis.sentinel.hosts)
  --sentinelmaster NAME          the sentinel master group (default REDIS_SENTINEL_MASTER, or master)
  --redisdb N                    the database (default REDISDB, redis.db, or 0)
  --redis-compress gzip|none     value compression (default REDIS_COMPRESSION, redis.compression, or gzip)
  --redis-use-tls                TLS to Redis, with --redis-ca-certificate FILE (default: the system's
                                 CAs), --redis-client-certificate FILE and --redis-client-key FILE,
                                 --redis-insecure-skip-tls-verify
  --app-state-cache-expiration D how long a tree lives in Redis (default ARGOCD_APP_STATE_CACHE_EXPIRATION, or 1h)
  REDIS_USERNAME, REDIS_PASSWORD (REDIS_SENTINEL_USERNAME/PASSWORD, or REDIS_CREDS_DIR_PATH's files) authenticate;
  ARGOCD_REDIS_KEY_PREFIX (redis.key.prefix) prefixes every key.

argocd-cmd-params-cm in NS is read at start, as Argo CD's application controller reads it (through
its environment: ARGOCD_APPLICATION_NAMESPACES, ARGOCD_SYNC_WAVE_DELAY, ARGOCD_APPLICATION_CONTROLLER_*
win over the keys); a key not acted on is named in a warning. See docs/semantics.md.

Environment: IMPERSYNC_CACHE_DIR (the child renderer's Git checkouts; default $XDG_CACHE_HOME or ~/.cache), POD_NAME
(leader election identity).

With no flag at all and not in a Pod, starts a local control plane with the examples instead.
`;

function positiveInt(v: string | undefined, name: string): number | string | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isInteger(n) && n >= 0 ? n : `--${name} must be a whole number, not '${v}'`;
}

/** `500ms`, `15s`, `1m` or a plain number of seconds, in ms; undefined when not a duration. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
}

/** The Lease timing flags (controller-runtime's defaults when absent), or the error. */
function leaseTimings(v: Flags): { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number } | string {
  const out: Record<string, number> = {};
  for (const [flag, key, def] of [
    ['leader-election-lease-duration', 'leaseDurationMs', 15_000],
    ['leader-election-renew-deadline', 'renewDeadlineMs', 10_000],
    ['leader-election-retry-period', 'retryPeriodMs', 2_000],
  ] as const) {
    const text = v[flag];
    if (typeof text !== 'string') {
      out[key] = def;
      continue;
    }
    const ms = parseDuration(text);
    if (ms === undefined || ms <= 0) return `--${flag} must be a duration such as 500ms, 15s or 1m, not '${text}'`;
    out[key] = ms;
  }
  const t = {
    leaseDurationMs: out['leaseDurationMs'] ?? 0,
    renewDeadlineMs: out['renewDeadlineMs'] ?? 0,
    retryPeriodMs: out['retryPeriodMs'] ?? 0,
  };
  return checkTimings(t.leaseDurationMs, t.renewDeadlineMs, t.retryPeriodMs) ?? t;
}

function inCluster(): boolean {
  return (
    Boolean(process.env['KUBERNETES_SERVICE_HOST']) && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')
  );
}

/** Prints what a person running the controller wants to see: who synced as whom, who was refused. */
export function printerSink(write: (line: string) => void): EventSink {
  // Argo CD's OperationCompleted message does not say as whom: the OperationStarted one did.
  const startedAs = new Map<string, string>();
  return {
    record: async (obj, type, reason, message) => {
      const app = `${obj.namespace}/${obj.name}`;
      const as = /^Sync operation started (as .*)$/.exec(message)?.[1];
      if (reason === EVENT_REASON.OperationStarted && as) startedAs.set(app, as);
      else if (reason === EVENT_REASON.OperationCompleted)
        write(
          `${type === 'Warning' ? '✖' : '✔'} ${app}: ${message}${startedAs.has(app) ? ` ${startedAs.get(app)}` : ''}`,
        );
      else if (reason === EVENT_REASON.ImpersonationFallback) write(`! ${app}: ${message}`);
      else if (reason === EVENT_REASON.StatusRefreshed) write(`✖ ${app}: ${message}`);
      else if (reason === EVENT_REASON.ResourcesDeleted) write(`✔ ${app}: ${message}`);
      else if (type === 'Warning' && reason !== EVENT_REASON.ImpersonationDenied)
        write(`! ${app}: ${reason}: ${message}`);
    },
  };
}

export async function main(argv: string[]): Promise<number> {
  const flags = parseFlags(argv, {
    kubeconfig: { type: 'string' },
    context: { type: 'string' },
    namespace: { type: 'string', short: 'n' },
    'application-namespaces': { type: 'string' },
    'status-processors': { type: 'string' },
    'operation-processors': { type: 'string' },
    'health-port': { type: 'string' },
    'log-level': { type: 'string' },
    'leader-elect': { type: 'boolean' },
    'leader-election-lease': { type: 'string' },
    'leader-election-lease-duration': { type: 'string' },
    'leader-election-renew-deadline': { type: 'string' },
    'leader-election-retry-period': { type: 'string' },
    shards: { type: 'string' },
    renderer: { type: 'string', multiple: true },
    'renderer-token-secret': { type: 'string' },
    'renderer-token-file': { type: 'string' },
    'allow-local-repositories': { type: 'boolean' },
    'renderer-metrics-listen': { type: 'string' },
    redis: { type: 'string' },
    redisdb: { type: 'string' },
    sentinel: { type: 'string', multiple: true },
    sentinelmaster: { type: 'string' },
    'redis-compress': { type: 'string' },
    'redis-use-tls': { type: 'boolean' },
    'redis-ca-certificate': { type: 'string' },
    'redis-client-certificate': { type: 'string' },
    'redis-client-key': { type: 'string' },
    'redis-insecure-skip-tls-verify': { type: 'boolean' },
    'app-state-cache-expiration': { type: 'string' },
    'memory-limit': { type: 'string' },
    'renderer-memory-limit': { type: 'string' },
    'tenant-api-share-ms': { type: 'string' },
    'tenant-work-share-ms': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (!flags.ok) {
    process.stderr.write(`impersync run: ${flags.error}\n${RUN_USAGE}`);
    return 2;
  }
  const v = flags.values;
  if (v['help'] === true) {
    process.stdout.write(RUN_USAGE);
    return 0;
  }
  const level = stringFlag(v, 'log-level', 'info');
  if (!isLogLevel(level)) {
    process.stderr.write(`impersync run: --log-level must be one of trace, debug, info, warn, error, not '${level}'\n`);
    return 2;
  }
  const numbers: Record<string, number | undefined> = {};
  const mayBeZero = ['health-port', 'tenant-api-share-ms', 'tenant-work-share-ms'];
  for (const name of ['status-processors', 'operation-processors', ...mayBeZero]) {
    const n = positiveInt(typeof v[name] === 'string' ? v[name] : undefined, name);
    if (typeof n === 'string') {
      process.stderr.write(`impersync run: ${n}\n`);
      return 2;
    }
    if (n === 0 && !mayBeZero.includes(name)) {
      process.stderr.write(`impersync run: --${name} must be at least 1\n`);
      return 2;
    }
    numbers[name] = n;
  }
  const redis = redisFlags(v);
  if (typeof redis === 'string') {
    process.stderr.write(`impersync run: ${redis}\n`);
    return 2;
  }
  const timings = leaseTimings(v);
  if (typeof timings === 'string') {
    process.stderr.write(`impersync run: ${timings}\n`);
    return 2;
  }
  const shardsText = typeof v['shards'] === 'string' ? v['shards'] : undefined;
  const shardCount = shardsText === undefined || shardsText === '' ? 1 : Number(shardsText);
  if (!Number.isInteger(shardCount) || shardCount < 1 || shardCount > 1024) {
    process.stderr.write(`impersync run: --shards must be a whole number from 1 to 1024, not '${shardsText}'\n`);
    return 2;
  }
  const memory = memoryLimit({
    flag: typeof v['memory-limit'] === 'string' ? v['memory-limit'] : undefined,
    env: process.env['IMPERSYNC_MEMORY_LIMIT'],
  });
  if (!memory.ok) {
    process.stderr.write(`impersync run: ${memory.error}\n`);
    return 2;
  }
  if (argv.length === 0 && !inCluster() && !process.env['KUBECONFIG']) {
    const { runLocal } = await import('../controller/local.ts');
    return runLocal({ write: (line) => process.stdout.write(line + '\n') });
  }
  // Read as client-node reads it, without loading client-node (kube/kubeconfig.ts); a context not
  // in the file is found out when the controller connects, as before.
  const kc = new Kubeconfig();
  try {
    const file = typeof v['kubeconfig'] === 'string' ? v['kubeconfig'] : undefined;
    if (file) kc.loadFromFile(file);
    else kc.loadFromDefault();
    if (typeof v['context'] === 'string') kc.setCurrentContext(v['context']);
  } catch (err) {
    process.stderr.write(`impersync run: cannot load kubeconfig: ${(err as Error).message}\n`);
    return 2;
  }
  const logger = createLogger({ level });
  const namespace = stringFlag(v, 'namespace', 'argocd');
  // Given, the flag wins over ARGOCD_APPLICATION_NAMESPACES and argocd-cmd-params-cm (as in Argo CD).
  const globs = typeof v['application-namespaces'] === 'string' ? splitList(v['application-namespaces']) : undefined;
  const metrics = createMetrics({ defaultMetrics: true });
  // The renderer's token is read from the control cluster, over a connection made when first needed.
  let control: Promise<ControlClient> | undefined;
  const connection = () =>
    (control ??= connectControlCluster(kc).catch((err: unknown) => {
      control = undefined;
      throw err;
    }));
  const renderer = rendererFrom(v, connection, namespace, metrics, logger);
  if (typeof renderer === 'string') {
    process.stderr.write(`impersync run: ${renderer}\n`);
    return 2;
  }
  const cacheDir = process.env['IMPERSYNC_CACHE_DIR'];
  const rendererMetrics = stringFlag(v, 'renderer-metrics-listen', '');
  const rendererMemory = stringFlag(v, 'renderer-memory-limit', '');
  if (rendererMemory !== '') {
    const size = parseByteSize(rendererMemory);
    if (renderer || !size.ok || size.bytes <= 0) {
      process.stderr.write(
        `impersync run: --renderer-memory-limit ${renderer ? 'is for the child renderer: give the renderer --memory-limit' : size.ok ? 'must be more than 0' : size.error}\n`,
      );
      return 2;
    }
  }
  const childFlags = [
    ...(rendererMetrics !== '' ? [`--metrics-listen=${rendererMetrics}`] : []),
    ...(rendererMemory !== '' ? [`--memory-limit=${rendererMemory}`] : []),
  ];
  if (rendererMetrics !== '' && (renderer || !/^(\[[^\]]*\]|[^:]*):\d{1,5}$/.test(rendererMetrics))) {
    process.stderr.write(
      `impersync run: --renderer-metrics-listen ${renderer ? 'is for the child renderer: give the renderer --metrics-listen' : `must be host:port, not '${rendererMetrics}'`}\n`,
    );
    return 2;
  }
  // Each controller start (a new leader term too) gets its own renderer client, closed when that
  // controller stops, or starts its own child.
  let client: Renderer | undefined;
  const rendering = () =>
    renderer
      ? { renderer: (client = renderer()) }
      : {
          childRenderer: {
            cacheDir,
            allowLocalRepositories: v['allow-local-repositories'] === true,
            logger,
            ...(childFlags.length > 0 ? { flags: childFlags } : {}),
          },
        };
  let controller: RunningController | undefined;
  let starting: Promise<void> | undefined;
  const leaderElect = v['leader-elect'] === true;
  const health = await startHealthServer({
    port: numbers['health-port'] ?? 8080,
    registry: metrics.registry,
    // A standby replica is ready (it serves nothing but may take over); a leader once its caches synced.
    readiness: () =>
      controller
        ? controller.cache.notSynced()
          ? `caches not synced: ${controller.cache.notSynced()}`
          : ''
        : leaderElect
          ? ''
          : 'starting',
  });
  logger.info({ port: health.port }, 'serving /healthz, /readyz and /metrics');
  const start = async (owns?: (key: string) => boolean) => {
    controller = await startController({
      ...(owns ? { owns } : {}),
      kc,
      namespace,
      ...(globs !== undefined ? { applicationNamespaces: globs } : {}),
      ...(typeof v['log-level'] === 'string' ? { logLevel: level } : {}),
      logger,
      ...rendering(),
      memoryLimitBytes: memory.bytes,
      metrics,
      events: [printerSink((line) => logger.info(line))],
      redis,
      ...(numbers['status-processors'] !== undefined ? { statusProcessors: numbers['status-processors'] } : {}),
      ...(numbers['tenant-api-share-ms'] !== undefined ? { tenantApiShareMs: numbers['tenant-api-share-ms'] } : {}),
      ...(numbers['tenant-work-share-ms'] !== undefined ? { workShareMs: numbers['tenant-work-share-ms'] } : {}),
      ...(numbers['operation-processors'] !== undefined
        ? { operationProcessors: numbers['operation-processors'] }
        : {}),
    });
  };
  const stopController = async () => {
    await starting;
    const c = controller;
    controller = undefined;
    await c?.stop();
    const r = client;
    client = undefined;
    await r?.close().catch(() => undefined);
  };
  let election: ReturnType<typeof startLeaderElection> | undefined;
  let sharded: Shards | undefined;
  const lease = stringFlag(v, 'leader-election-lease', 'impersync-controller');
  if (shardCount > 1) {
    // Every replica runs the controller (its caches warm); it acts only on the shards it holds.
    const identity = defaultIdentity();
    const inShard = (i: number) => (key: string) => shardOf(key, shardCount) === i;
    starting = start((key) => sharded?.owns(key) ?? false);
    await starting;
    sharded = startShards({
      control: await connection(),
      namespace,
      base: lease,
      shards: shardCount,
      identity,
      ...timings,
      onGained: (i) => {
        logger.info({ shard: i, shards: shardCount, identity }, 'shard acquired: acting on its Applications');
        controller?.adopt(inShard(i));
      },
      onLost: async (i) => {
        await controller?.drop(inShard(i));
        logger.info({ shard: i, shards: shardCount, identity }, 'shard given up: its work here has stopped');
      },
      onHolder: (i, holder) => logger.info({ shard: i, holder }, 'shard holder observed'),
      onError: (err) => logger.warn({ err: err.message }, 'shard leases'),
    });
  } else if (leaderElect) {
    election = startLeaderElection({
      kc,
      namespace,
      name: lease,
      identity: defaultIdentity(),
      ...timings,
      onStartedLeading: (signal) => {
        logger.info({ lease }, 'leading: starting the controller');
        starting = start();
        signal.addEventListener(
          'abort',
          () => {
            void stopController();
          },
          { once: true },
        );
      },
      onStoppedLeading: (reason) => logger.info({ lease, reason }, 'no longer leading: controller stopped'),
      onNewLeader: (id) => logger.info({ lease, leader: id }, 'leader observed'),
      onError: (err) => logger.warn({ lease, err: err.message }, 'leader election'),
    });
  } else {
    await start();
  }
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  logger.info('stopping');
  // Sharded: every shard's work stops and its Lease is released (the others take it at once), then the rest.
  await sharded?.stop();
  await stopController();
  await election?.stop();
  await health.close();
  await (await control?.catch(() => undefined))?.close();
  return 0;
}

/**
 * The install's renderer from --renderer (a client per controller start), undefined for a child
 * renderer, or the flag error.
 */
function rendererFrom(
  v: Flags,
  connection: () => Promise<ControlClient>,
  namespace: string,
  metrics: Metrics,
  logger: Logger,
): (() => Renderer) | undefined | string {
  const given = listFlag(v, 'renderer');
  const secret = stringFlag(v, 'renderer-token-secret', '');
  const file = stringFlag(v, 'renderer-token-file', '');
  if (given.length === 0) {
    return secret !== '' || file !== ''
      ? '--renderer-token-secret and --renderer-token-file go with --renderer'
      : undefined;
  }
  const targets = parseRendererTargets(given);
  if (typeof targets === 'string') return targets;
  if (secret !== '' && file !== '') return 'give --renderer-token-secret or --renderer-token-file, not both';
  if (v['allow-local-repositories'] === true)
    return '--allow-local-repositories is for the child renderer: set it on the renderer itself';
  const secretName = secret || 'impersync-renderer-token';
  // One for the process: a later leader term's client goes on counting in the same series.
  const counted = rendererRequestMetrics(metrics);
  return () => {
    let token: Promise<string> | undefined;
    const read = () =>
      file !== ''
        ? readFile(file, 'utf8').then((t) => t.trim())
        : connection().then((control) => rendererToken(control, namespace, secretName));
    // Read (and, the first time, made) as the controller starts: the renderer Pods pick up a new
    // Secret only when the kubelet next syncs their volume.
    token = read();
    token.catch(() => (token = undefined));
    const auth = {
      token: () =>
        (token ??= read().catch((err: unknown) => {
          token = undefined;
          throw err;
        })),
      onUnauthorized: async () => {
        token = undefined;
      },
    };
    // One address: the one client, as always. Several, or a name to look up: routed by repository.
    const [only] = targets;
    if (targets.length === 1 && only?.kind === 'url') return new RendererClient({ url: only.url, ...auth });
    return new RoutedRenderer({
      targets,
      ...auth,
      onRequest: counted.onRequest,
      onChange: (replicas) => {
        counted.onChange(replicas);
        logger.info({ replicas }, 'renderer replicas');
      },
      onLookupError: (name, err) => logger.warn({ name, error: err.message }, 'renderer lookup failed'),
    });
  };
}

/** The Redis flags as given, or the error of one that cannot be used. */
export function redisFlags(v: Flags): RedisFlags | string {
  const str = (name: string) => (typeof v[name] === 'string' ? v[name] : undefined);
  const compress = str('redis-compress');
  if (compress !== undefined && !isCompression(compress))
    return `--redis-compress must be gzip or none, not '${compress}'`;
  const db = str('redisdb');
  if (db !== undefined && !/^\d+$/.test(db)) return `--redisdb must be a whole number, not '${db}'`;
  const exp = str('app-state-cache-expiration');
  if (exp !== undefined && parseGoDuration(exp) === undefined)
    return `--app-state-cache-expiration must be a duration (1h, 90m), not '${exp}'`;
  return {
    redis: str('redis'),
    redisdb: db,
    sentinel: listFlag(v, 'sentinel'),
    sentinelmaster: str('sentinelmaster'),
    redisCompress: compress,
    redisUseTls: v['redis-use-tls'] === true,
    redisCaCertificate: str('redis-ca-certificate'),
    redisClientCertificate: str('redis-client-certificate'),
    redisClientKey: str('redis-client-key'),
    redisInsecureSkipTlsVerify: v['redis-insecure-skip-tls-verify'] === true,
    appStateCacheExpiration: exp,
  };
}
