// Every key of `argocd-cmd-params-cm` that Argo CD's application controller reads (its manifests
// map each onto an environment variable: manifests/base/application-controller/*.yaml, Argo CD
// 37ee0097cf), with what impersync does with it: honoured (how), or named (why not), in a warning
// logged at start when the key is set. Keys of Argo CD's other components are elsewhere: they
// change nothing impersync does, so they are passed over without a word.
export interface CmdParamKey {
  key: string;
  /** The environment variable Argo CD's manifests set from the key (the controller reads that); '' for a mounted file. */
  env: string;
  support: 'honoured' | 'named';
  /** Honoured: how. Named: why it is not acted on (the start-up warning says this). */
  note: string;
}

export const ARGOCD_CMD_PARAMS_CM = 'argocd-cmd-params-cm';

const h = (key: string, env: string, note: string): CmdParamKey => ({ key, env, support: 'honoured', note });
const n = (key: string, env: string, note: string): CmdParamKey => ({ key, env, support: 'named', note });

const RENDERER = "impersync's renderer is set by `impersync run --renderer` (a token over HTTP or a unix socket)";
const CLIENT = "impersync's API clients have no such setting";
const REDIS = "Argo CD's cache in Redis (argocd-cache/options.ts)";
const OTLP = 'impersync sends no traces';
const CLUSTER_CACHE = 'impersync keeps no cluster cache: it watches only what Applications manage, as their identities';
const HYDRATOR = 'the source hydrator is not implemented';

export const CMD_PARAM_KEYS: readonly CmdParamKey[] = [
  h(
    'application.namespaces',
    'ARGOCD_APPLICATION_NAMESPACES',
    'Applications in these namespaces (comma-separated globs) are reconciled; --application-namespaces, then the variable, then the key',
  ),
  h('controller.status.processors', 'ARGOCD_APPLICATION_CONTROLLER_STATUS_PROCESSORS', 'the refresh queue workers'),
  h(
    'controller.operation.processors',
    'ARGOCD_APPLICATION_CONTROLLER_OPERATION_PROCESSORS',
    'the operation queue workers',
  ),
  h('controller.log.level', 'ARGOCD_APPLICATION_CONTROLLER_LOGLEVEL', 'the log level, unless --log-level is given'),
  h(
    'controller.log.format',
    'ARGOCD_APPLICATION_CONTROLLER_LOGFORMAT',
    '`json`; `text` is named: impersync logs JSON lines',
  ),
  h(
    'controller.self.heal.timeout.seconds',
    'ARGOCD_APPLICATION_CONTROLLER_SELF_HEAL_TIMEOUT_SECONDS',
    'the wait between self-heal syncs when the backoff is off (its timeout 0)',
  ),
  h(
    'controller.self.heal.backoff.timeout.seconds',
    'ARGOCD_APPLICATION_CONTROLLER_SELF_HEAL_BACKOFF_TIMEOUT_SECONDS',
    'the self-heal backoff: the first wait (0 turns the backoff off)',
  ),
  h(
    'controller.self.heal.backoff.factor',
    'ARGOCD_APPLICATION_CONTROLLER_SELF_HEAL_BACKOFF_FACTOR',
    'the self-heal backoff factor',
  ),
  h(
    'controller.self.heal.backoff.cap.seconds',
    'ARGOCD_APPLICATION_CONTROLLER_SELF_HEAL_BACKOFF_CAP_SECONDS',
    'the longest self-heal wait',
  ),
  h(
    'controller.self.heal.backoff.cooldown.seconds',
    'ARGOCD_APPLICATION_CONTROLLER_SELF_HEAL_BACKOFF_COOLDOWN_SECONDS',
    'no effect, as in Argo CD, whose flag "is deprecated and has no effect"',
  ),
  h(
    'controller.sync.timeout.seconds',
    'ARGOCD_APPLICATION_CONTROLLER_SYNC_TIMEOUT',
    'a sync running longer is terminated ("operation is terminating due to timeout"); 0: none',
  ),
  h('controller.sync.wave.delay.seconds', 'ARGOCD_SYNC_WAVE_DELAY', 'the pause after each sync wave but the last'),
  h(
    'controller.diff.server.side',
    'ARGOCD_APPLICATION_CONTROLLER_SERVER_SIDE_DIFF',
    '`true`: every Application compares as with ServerSideDiff=true, what mutating webhooks change left out unless it says IncludeMutationWebhook=true; `false` (client-side diff) is named: impersync always diffs with a server-side dry-run apply',
  ),
  h(
    'controller.resource.health.persist',
    'ARGOCD_APPLICATION_CONTROLLER_PERSIST_RESOURCE_HEALTH',
    '`true` is what impersync always does; `false` is named: each resource\u2019s health is always written to status.resources',
  ),
  n(
    'controller.repo.server.timeout.seconds',
    'ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER_TIMEOUT_SECONDS',
    `a render is bounded by the renderer's own time limit; ${RENDERER}`,
  ),
  n('repo.server', 'ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER', RENDERER),
  n('controller.repo.server.plaintext', 'ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER_PLAINTEXT', RENDERER),
  n('controller.repo.server.strict.tls', 'ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER_STRICT_TLS', RENDERER),
  n('controller.repo.server.ca.cert.path', 'ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER_CA_CERT_PATH', RENDERER),
  n('controller.repo.server.client.cert.path', 'ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER_CLIENT_CERT_PATH', RENDERER),
  n(
    'controller.repo.server.client.cert.key.path',
    'ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER_CLIENT_CERT_KEY_PATH',
    RENDERER,
  ),
  n(
    'controller.repo.error.grace.period.seconds',
    'ARGOCD_REPO_ERROR_GRACE_PERIOD_SECONDS',
    'a render error is a ComparisonError at once; no grace period keeps the last comparison',
  ),
  n('commit.server', 'ARGOCD_APPLICATION_CONTROLLER_COMMIT_SERVER', HYDRATOR),
  n('hydrator.enabled', 'ARGOCD_HYDRATOR_ENABLED', HYDRATOR),
  n('controller.hydration.processors', 'ARGOCD_APPLICATION_CONTROLLER_HYDRATION_PROCESSORS', HYDRATOR),
  h(
    'controller.app.state.cache.expiration',
    'ARGOCD_APP_STATE_CACHE_EXPIRATION',
    `${REDIS}: how long a tree and managed resources live (default 1h), unless --app-state-cache-expiration is given`,
  ),
  h(
    'controller.default.cache.expiration',
    'ARGOCD_DEFAULT_CACHE_EXPIRATION',
    `${REDIS}: as in Argo CD's controller, no value written falls back on it: each has its own expiration`,
  ),
  n(
    'controller.sharding.algorithm',
    'ARGOCD_CONTROLLER_SHARDING_ALGORITHM',
    'impersync shards Applications by a hash of their namespace/name (--shards), not clusters by an algorithm',
  ),
  n(
    'controller.kubectl.parallelism.limit',
    'ARGOCD_APPLICATION_CONTROLLER_KUBECTL_PARALLELISM_LIMIT',
    'impersync runs no kubectl; a wave is applied by at most 8 server-side apply requests at a time (sync/sync.ts)',
  ),
  n(
    'controller.ignore.normalizer.jq.timeout',
    'ARGOCD_IGNORE_NORMALIZER_JQ_TIMEOUT',
    "jqPathExpressions run with Argo CD's default limit of 1 s",
  ),
  n('controller.k8sclient.retry.max', 'ARGOCD_K8SCLIENT_RETRY_MAX', CLIENT),
  n('controller.k8sclient.retry.base.backoff', 'ARGOCD_K8SCLIENT_RETRY_BASE_BACKOFF', CLIENT),
  n('controller.k8s.client.qps', 'ARGOCD_K8S_CLIENT_QPS', CLIENT),
  n('controller.k8s.client.burst', 'ARGOCD_K8S_CLIENT_BURST', CLIENT),
  n('controller.k8s.client.max.idle.connections', 'ARGOCD_K8S_CLIENT_MAX_IDLE_CONNECTIONS', CLIENT),
  n('controller.k8s.tcp.timeout', 'ARGOCD_K8S_TCP_TIMEOUT', CLIENT),
  n('controller.k8s.tcp.keepalive', 'ARGOCD_K8S_TCP_KEEPALIVE', CLIENT),
  n('controller.k8s.tls.handshake.timeout', 'ARGOCD_K8S_TLS_HANDSHAKE_TIMEOUT', CLIENT),
  n('controller.k8s.tcp.idle.timeout', 'ARGOCD_K8S_TCP_IDLE_TIMEOUT', CLIENT),
  n('controller.grpc.enable.txt.service.config', 'GRPC_ENABLE_TXT_SERVICE_CONFIG', 'impersync makes no gRPC calls'),
  n('controller.cluster.cache.batch.events.processing', 'ARGOCD_CLUSTER_CACHE_BATCH_EVENTS_PROCESSING', CLUSTER_CACHE),
  n(
    'controller.cluster.cache.events.processing.interval',
    'ARGOCD_CLUSTER_CACHE_EVENTS_PROCESSING_INTERVAL',
    CLUSTER_CACHE,
  ),
  h(
    'controller.metrics.cache.expiration',
    'ARGOCD_APPLICATION_CONTROLLER_METRICS_CACHE_EXPIRATION',
    "Argo CD's counters and histograms (argocd_app_sync_total, argocd_app_k8s_request_total, ...) are cleared this often (a Go duration; 0: never)",
  ),
  h(
    'controller.metrics.application.labels',
    'ARGOCD_APPLICATION_CONTROLLER_METRICS_APPLICATION_LABELS',
    'these Application labels (comma-separated) are exported as argocd_app_labels, each as label_<name>',
  ),
  h(
    'controller.metrics.application.conditions',
    'ARGOCD_APPLICATION_CONTROLLER_METRICS_APPLICATION_CONDITIONS',
    'these condition types (comma-separated) are counted per Application as argocd_app_condition',
  ),
  h(
    'controller.metrics.cluster.labels',
    'ARGOCD_APPLICATION_CONTROLLER_METRICS_CLUSTER_LABELS',
    'these cluster Secret labels (comma-separated) are exported as argocd_cluster_labels, each as label_<name>',
  ),
  n('controller.profile.enabled', '', 'impersync serves no profile endpoint'),
  n(
    'log.format.timestamp',
    'ARGOCD_LOG_FORMAT_TIMESTAMP',
    "impersync logs RFC 3339 times (Argo CD's default), whatever the key says",
  ),
  h('redis.server', 'REDIS_SERVER', `${REDIS}: the Redis (host:port), unless --redis is given`),
  h(
    'redis.sentinel.hosts',
    'REDIS_SENTINEL_HOSTS',
    `${REDIS}: its sentinels (comma-separated), unless --sentinel is given`,
  ),
  h('redis.sentinel.master', 'REDIS_SENTINEL_MASTER', `${REDIS}: the sentinel master group (default master)`),
  h('redis.compression', 'REDIS_COMPRESSION', `${REDIS}: gzip (the default) or none, unless --redis-compress is given`),
  h('redis.db', 'REDISDB', `${REDIS}: the database number, unless --redisdb is given`),
  h('redis.key.prefix', 'ARGOCD_REDIS_KEY_PREFIX', `${REDIS}: the prefix of every key`),
  ...['otlp.address', 'otlp.insecure', 'otlp.headers', 'otlp.attrs', 'otlp.sample.ratio'].map((k) =>
    n(k, `ARGOCD_APPLICATION_CONTROLLER_OTLP_${k.slice(5).replace('.', '_').toUpperCase()}`, OTLP),
  ),
];

/** Prefixes of the keys of Argo CD's other components: not the application controller's. */
export const ELSEWHERE_PREFIXES = [
  'server.',
  'reposerver.',
  'applicationsetcontroller.',
  'notificationscontroller.',
  'dexserver.',
  'commitserver.',
] as const;

/** argocd-cm keys that some put here: they are read from argocd-cm only (Argo CD does the same). */
export const ARGOCD_CM_ONLY = [
  'application.sync.impersonation.enabled',
  'application.sync.impersonation.enforced',
  'timeout.reconciliation',
  'timeout.reconciliation.jitter',
  'timeout.hard.reconciliation',
] as const;

export function cmdParamKey(key: string): CmdParamKey | undefined {
  return CMD_PARAM_KEYS.find((k) => k.key === key);
}
