// The application controller's settings from `argocd-cmd-params-cm`, pure: what Argo CD's
// argocd-application-controller reads from its flags and environment (cmd/argocd-application-
// controller/commands/argocd_application_controller.go), its manifests filling that environment
// from this ConfigMap. Precedence as there: a flag, then the environment variable, then the key,
// then Argo CD's default. Values are parsed as Argo CD's util/env parses them, and an unusable one
// keeps the default with Argo CD's warning. Read once at start, as Argo CD reads its environment.
import { isLogLevel } from '../observability/logger.ts';
import type { LogLevel } from '../observability/logger.ts';
import {
  ARGOCD_CM_ONLY,
  ARGOCD_CMD_PARAMS_CM,
  CMD_PARAM_KEYS,
  ELSEWHERE_PREFIXES,
  cmdParamKey,
} from './cmd-params-keys.ts';
import type { SelfHealPolicy } from './self-heal.ts';
import { parseGoDuration } from '../project/windows.ts';

export interface ParamInputs {
  /** The ConfigMap's data; undefined when there is none. */
  data: Readonly<Record<string, string>> | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** `impersync run`'s flags, when given (they win, as Argo CD's flags do). */
  flags?: {
    applicationNamespaces?: readonly string[] | undefined;
    statusProcessors?: number | undefined;
    operationProcessors?: number | undefined;
    logLevel?: string | undefined;
  };
}

export interface ControllerParams {
  applicationNamespaces: string[];
  statusProcessors: number;
  operationProcessors: number;
  /** Set only by the variable or the key, and only without --log-level. */
  logLevel?: LogLevel | undefined;
  selfHeal: SelfHealPolicy;
  /** 0: a sync never times out. */
  syncTimeoutMs: number;
  waveDelayMs: number;
  /** Argo CD's metrics (observability/metrics.ts): how often its counters are cleared (0: never), and what to label. */
  metrics: {
    cacheExpirationMs: number;
    applicationLabels: string[];
    applicationConditions: string[];
    clusterLabels: string[];
  };
  /** controller.diff.server.side (ARGOCD_APPLICATION_CONTROLLER_SERVER_SIDE_DIFF) is true: Argo CD's ServerSideDiff for every Application. */
  serverSideDiff: boolean;
  /** ARGOCD_GPG_ENABLED: false or no (any case) turns commit signature verification off, as Argo CD. */
  gpgEnabled: boolean;
  /** Where each honoured value came from: flag, env, configmap or default. */
  sources: Record<string, 'flag' | 'env' | 'configmap' | 'default'>;
  /** For the start-up log: unusable values (Argo CD's words) and keys set that are not acted on. */
  warnings: string[];
}

interface Raw {
  value: string;
  from: 'env' | 'configmap';
  /** How Argo CD's warning names it: the variable, and the key when it came from the ConfigMap. */
  name: string;
}

/** Splits a comma-separated list as Argo CD's StringsFromEnv does (each item trimmed), dropping empties. */
export function splitList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function resolveControllerParams(input: ParamInputs): ControllerParams {
  const data = input.data ?? {};
  const flags = input.flags ?? {};
  const warnings: string[] = [];
  const sources: ControllerParams['sources'] = {};

  const raw = (key: string): Raw | undefined => {
    const k = cmdParamKey(key);
    const env = k?.env ? input.env[k.env] : undefined;
    if (k?.env && env !== undefined && env !== '') return { value: env, from: 'env', name: k.env };
    const v = data[key];
    if (v !== undefined && v !== '')
      return {
        value: v,
        from: 'configmap',
        name: k?.env ? `${k.env} (${ARGOCD_CMD_PARAMS_CM} ${key})` : `${ARGOCD_CMD_PARAMS_CM} ${key}`,
      };
    return undefined;
  };

  /** Argo CD's ParseNumFromEnv: an integer within [min, max], else the default with its warning. */
  const num = (key: string, def: number, min: number, max = 2 ** 31 - 1): number => {
    const r = raw(key);
    sources[key] = r ? r.from : 'default';
    if (!r) return def;
    if (!/^[+-]?\d+$/.test(r.value)) {
      warnings.push(`Could not parse '${r.value}' as a number from environment ${r.name}`);
      sources[key] = 'default';
      return def;
    }
    const v = Number(r.value);
    const bad =
      v < min
        ? `Value in ${r.name} is ${v}, which is less than minimum ${min} allowed`
        : v > max
          ? `Value in ${r.name} is ${v}, which is greater than maximum ${max} allowed`
          : undefined;
    if (bad === undefined) return v;
    warnings.push(bad);
    sources[key] = 'default';
    return def;
  };

  let applicationNamespaces: string[];
  const nsRaw = raw('application.namespaces');
  if (flags.applicationNamespaces !== undefined) {
    applicationNamespaces = [...flags.applicationNamespaces];
    sources['application.namespaces'] = 'flag';
  } else {
    applicationNamespaces = nsRaw ? splitList(nsRaw.value) : [];
    sources['application.namespaces'] = nsRaw ? nsRaw.from : 'default';
  }

  // impersync's minimum is 1 (Argo CD's 0 would reconcile nothing at all).
  const processors = (key: string, flag: number | undefined, def: number): number => {
    if (flag === undefined) return num(key, def, 1);
    sources[key] = 'flag';
    return flag;
  };
  const statusProcessors = processors('controller.status.processors', flags.statusProcessors, 20);
  const operationProcessors = processors('controller.operation.processors', flags.operationProcessors, 10);

  let logLevel: LogLevel | undefined;
  const level = raw('controller.log.level');
  if (flags.logLevel !== undefined) sources['controller.log.level'] = 'flag';
  else if (level) {
    const l = level.value.toLowerCase() === 'warning' ? 'warn' : level.value.toLowerCase();
    if (isLogLevel(l)) {
      logLevel = l;
      sources['controller.log.level'] = level.from;
    } else warnings.push(`${level.name}: unknown log level '${level.value}' (debug, info, warn, error); not acted on`);
  }
  const format = raw('controller.log.format');
  if (format && format.value !== 'json')
    warnings.push(`${format.name} is '${format.value}' and not acted on: impersync logs JSON lines only`);

  const selfHealTimeout = num('controller.self.heal.timeout.seconds', 0, 0);
  const backoffTimeout = num('controller.self.heal.backoff.timeout.seconds', 2, 0);
  const factor = num('controller.self.heal.backoff.factor', 3, 0);
  const cap = num('controller.self.heal.backoff.cap.seconds', 300, 0);
  const cooldown = raw('controller.self.heal.backoff.cooldown.seconds');
  if (cooldown)
    warnings.push(
      `${cooldown.name} has no effect: Argo CD deprecated it ("This flag is deprecated and has no effect.")`,
    );
  const selfHeal: SelfHealPolicy = {
    timeoutMs: selfHealTimeout * 1000,
    ...(backoffTimeout !== 0 ? { backoff: { durationMs: backoffTimeout * 1000, factor, capMs: cap * 1000 } } : {}),
  };
  const syncTimeoutMs = num('controller.sync.timeout.seconds', 0, 0) * 1000;
  // Argo CD's delayBetweenSyncWaves: strconv.Atoi, a negative delay sleeps not at all.
  const waveDelayMs = Math.max(0, num('controller.sync.wave.delay.seconds', 2, -(2 ** 31))) * 1000;

  // Argo CD's ParseDurationFromEnv: a Go duration (or days, `1d`), at least 0; else 0 with its warning.
  let cacheExpirationMs = 0;
  const expiration = raw('controller.metrics.cache.expiration');
  sources['controller.metrics.cache.expiration'] = expiration ? expiration.from : 'default';
  if (expiration) {
    const text = expiration.value.trim();
    const days = /^(\d+)d$/.exec(text);
    const ms = days ? Number(days[1]) * 86_400_000 : parseGoDuration(text);
    if (ms instanceof Error) {
      warnings.push(`Could not parse '${expiration.value}' as a duration from environment ${expiration.name}`);
      sources['controller.metrics.cache.expiration'] = 'default';
    } else if (ms < 0) {
      warnings.push(`Value in ${expiration.name} is ${expiration.value}, which is less than minimum 0s allowed`);
      sources['controller.metrics.cache.expiration'] = 'default';
    } else cacheExpirationMs = ms;
  }
  const list = (key: string): string[] => {
    const r = raw(key);
    sources[key] = r ? r.from : 'default';
    return r ? splitList(r.value) : [];
  };
  const metrics = {
    cacheExpirationMs,
    applicationLabels: list('controller.metrics.application.labels'),
    applicationConditions: list('controller.metrics.application.conditions'),
    clusterLabels: list('controller.metrics.cluster.labels'),
  };

  for (const key of ['controller.diff.server.side', 'controller.resource.health.persist']) {
    const r = raw(key);
    if (r && r.value.toLowerCase() !== 'true')
      warnings.push(`${r.name} is '${r.value}' and not acted on: ${cmdParamKey(key)?.note ?? ''}`);
  }
  for (const k of CMD_PARAM_KEYS) {
    if (k.support !== 'named') continue;
    const r = raw(k.key);
    if (r) warnings.push(`${r.name} is set and not acted on: ${k.note}`);
  }
  for (const key of Object.keys(data).sort()) {
    if (cmdParamKey(key) || ELSEWHERE_PREFIXES.some((p) => key.startsWith(p))) continue;
    if ((ARGOCD_CM_ONLY as readonly string[]).includes(key))
      warnings.push(`${ARGOCD_CMD_PARAMS_CM} ${key} is not read from here: it is an argocd-cm key (set it there)`);
    else
      warnings.push(`${ARGOCD_CMD_PARAMS_CM} ${key} is not a key Argo CD's application controller reads; not acted on`);
  }
  warnings.push(...environmentWarnings(input.env));

  return {
    applicationNamespaces,
    statusProcessors,
    operationProcessors,
    ...(logLevel ? { logLevel } : {}),
    selfHeal,
    syncTimeoutMs,
    waveDelayMs,
    metrics,
    serverSideDiff: raw('controller.diff.server.side')?.value.toLowerCase() === 'true',
    gpgEnabled: gpgEnabled(input.env),
    sources,
    warnings,
  };
}

/** Argo CD's sourceintegrity.IsGPGEnabled: on unless ARGOCD_GPG_ENABLED is false or no, in any case. */
export function gpgEnabled(env: ParamInputs['env']): boolean {
  const v = (env['ARGOCD_GPG_ENABLED'] ?? '').toLowerCase();
  return v !== 'false' && v !== 'no';
}

/** Variables Argo CD's controller reads that are no key of this ConfigMap. */
function environmentWarnings(env: ParamInputs['env']): string[] {
  const out: string[] = [];
  for (const [name, key] of [
    ['ARGOCD_RECONCILIATION_TIMEOUT', 'timeout.reconciliation'],
    ['ARGOCD_HARD_RECONCILIATION_TIMEOUT', 'timeout.hard.reconciliation'],
    ['ARGOCD_RECONCILIATION_JITTER', 'timeout.reconciliation.jitter'],
  ] as const)
    if (env[name])
      out.push(
        `${name} is set and not read: impersync reads argocd-cm's ${key} (from which Argo CD's manifests set it)`,
      );
  const replicas = env['ARGOCD_CONTROLLER_REPLICAS'];
  if (replicas && replicas !== '1')
    out.push(
      `ARGOCD_CONTROLLER_REPLICAS is ${replicas} and not acted on: impersync shards Applications by a hash of their namespace/name, not clusters; run the replicas with --shards N`,
    );
  if (env['ARGOCD_ENABLE_DYNAMIC_CLUSTER_DISTRIBUTION']?.toLowerCase() === 'true')
    out.push(
      'ARGOCD_ENABLE_DYNAMIC_CLUSTER_DISTRIBUTION is not acted on: impersync shards Applications (--shards), not clusters',
    );
  return out;
}
