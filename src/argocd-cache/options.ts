// Where Argo CD's cache is written, pure: the Redis options of Argo CD's application controller
// (util/cache/cache.go AddCacheFlagsToCmd, util/cache/appstate), from `impersync run`'s flags,
// then the environment variables Argo CD reads, then the argocd-cmd-params-cm keys its manifests
// map onto them. Unlike Argo CD, no address at all (no --redis, REDIS_SERVER, redis.server nor
// sentinel) means no cache: impersync runs without Redis by default.
import { isCompression } from './encode.ts';
import type { Compression } from './encode.ts';

/** `impersync run`'s Redis flags, as given (undefined: not given). */
/** Argo CD's StringsFromEnv split: comma-separated, each item trimmed, empties dropped. */
function splitList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export interface RedisFlags {
  redis?: string | undefined;
  redisdb?: string | undefined;
  sentinel?: readonly string[] | undefined;
  sentinelmaster?: string | undefined;
  redisCompress?: string | undefined;
  redisUseTls?: boolean | undefined;
  redisCaCertificate?: string | undefined;
  redisClientCertificate?: string | undefined;
  redisClientKey?: string | undefined;
  redisInsecureSkipTlsVerify?: boolean | undefined;
  appStateCacheExpiration?: string | undefined;
}

export interface RedisTls {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  insecureSkipVerify: boolean;
}

export interface RedisConfig {
  /** host:port; absent with sentinels. */
  address?: string;
  sentinels: Array<{ host: string; port: number }>;
  sentinelMaster: string;
  db: number;
  compression: Compression;
  prefix: string;
  tls?: RedisTls;
  /** REDIS_CREDS_DIR_PATH: read from files there in place of the variables. */
  credsDir?: string;
  username: string;
  password: string;
  sentinelUsername: string;
  sentinelPassword: string;
  maxRetries: number;
  /** --app-state-cache-expiration: the tree's and managed resources' time to live. */
  appStateExpirationMs: number;
  /** ARGOCD_APPLICATION_TREE_SHARD_SIZE: nodes per shard; 0 writes one value. */
  treeShardSize: number;
}

export type RedisResolution =
  | { enabled: false; warnings: string[] }
  | { enabled: true; config: RedisConfig; warnings: string[] }
  | { enabled: false; error: string; warnings: string[] };

/** Go's time.ParseDuration, for the values Argo CD's flags take ("1h", "90m", "1h30m", "45s", "1.5h"). */
export function parseGoDuration(s: string): number | undefined {
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let i = 0;
  const body = s.startsWith('+') ? s.slice(1) : s;
  if (body === '') return undefined;
  re.lastIndex = 0;
  while (i < body.length) {
    re.lastIndex = i;
    const m = re.exec(body);
    if (!m) return undefined;
    total += Number(m[1]) * (unit[m[2] as string] as number);
    i = re.lastIndex;
  }
  return total;
}

function hostPort(s: string): { host: string; port: number } | undefined {
  const m = /^(.*):(\d{1,5})$/.exec(s.trim());
  if (!m || m[1] === '') return undefined;
  const host = (m[1] as string).replace(/^\[(.*)\]$/, '$1');
  const port = Number(m[2]);
  return port > 0 && port < 65536 ? { host, port } : undefined;
}

export function resolveRedisOptions(input: {
  flags?: RedisFlags | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** argocd-cmd-params-cm's data. */
  data?: Readonly<Record<string, string>> | undefined;
}): RedisResolution {
  const flags = input.flags ?? {};
  const data = input.data ?? {};
  const warnings: string[] = [];
  const from = (env: string, key?: string): string | undefined => {
    const e = input.env[env];
    if (e !== undefined && e !== '') return e;
    const v = key ? data[key] : undefined;
    return v !== undefined && v !== '' ? v : undefined;
  };
  const int = (name: string, raw: string | undefined, def: number, min: number, max: number): number => {
    if (raw === undefined) return def;
    if (!/^[+-]?\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      warnings.push(`${name}: '${raw}' is not a whole number from ${min} to ${max}; using ${def}`);
      return def;
    }
    return Number(raw);
  };

  const sentinelList =
    flags.sentinel && flags.sentinel.length > 0
      ? flags.sentinel.flatMap(splitList)
      : splitList(from('REDIS_SENTINEL_HOSTS', 'redis.sentinel.hosts') ?? '');
  const address = flags.redis ?? from('REDIS_SERVER', 'redis.server') ?? '';
  if (address === '' && sentinelList.length === 0) return { enabled: false, warnings };

  const sentinels: RedisConfig['sentinels'] = [];
  for (const s of sentinelList) {
    const hp = hostPort(s);
    if (!hp) return { enabled: false, error: `sentinel address '${s}' is not host:port`, warnings };
    sentinels.push(hp);
  }
  if (sentinels.length === 0 && !hostPort(address))
    return { enabled: false, error: `Redis address '${address}' is not host:port`, warnings };

  const compressionRaw = flags.redisCompress ?? from('REDIS_COMPRESSION', 'redis.compression') ?? 'gzip';
  // Argo CD's CompressionTypeFromString error.
  if (!isCompression(compressionRaw))
    return { enabled: false, error: `unknown compression type: ${compressionRaw}`, warnings };

  const dbRaw = flags.redisdb ?? from('REDISDB', 'redis.db');
  if (flags.redisdb !== undefined && !/^\d+$/.test(flags.redisdb))
    return { enabled: false, error: `--redisdb must be a whole number, not '${flags.redisdb}'`, warnings };
  const db = int('REDISDB', dbRaw, 0, 0, 2 ** 31 - 1);

  let appStateExpirationMs = 3_600_000;
  const expRaw =
    flags.appStateCacheExpiration ?? from('ARGOCD_APP_STATE_CACHE_EXPIRATION', 'controller.app.state.cache.expiration');
  if (expRaw !== undefined) {
    const ms = parseGoDuration(expRaw);
    if (ms === undefined || ms < 0 || ms > 36_000_000) {
      if (flags.appStateCacheExpiration !== undefined)
        return { enabled: false, error: `--app-state-cache-expiration: invalid duration '${expRaw}'`, warnings };
      warnings.push(`ARGOCD_APP_STATE_CACHE_EXPIRATION: '${expRaw}' is not a duration up to 10h; using 1h`);
    } else appStateExpirationMs = ms;
  }

  const useTls = flags.redisUseTls === true;
  if (
    !useTls &&
    (flags.redisCaCertificate ||
      flags.redisClientCertificate ||
      flags.redisClientKey ||
      flags.redisInsecureSkipTlsVerify)
  )
    warnings.push(
      '--redis-ca-certificate, --redis-client-certificate/key and --redis-insecure-skip-tls-verify have no effect without --redis-use-tls (as in Argo CD)',
    );
  if (useTls && Boolean(flags.redisClientCertificate) !== Boolean(flags.redisClientKey))
    return { enabled: false, error: '--redis-client-certificate and --redis-client-key go together', warnings };

  const credsDir = input.env['REDIS_CREDS_DIR_PATH'];
  const config: RedisConfig = {
    ...(sentinels.length === 0 ? { address } : {}),
    sentinels,
    sentinelMaster: flags.sentinelmaster ?? from('REDIS_SENTINEL_MASTER', 'redis.sentinel.master') ?? 'master',
    db,
    compression: compressionRaw,
    prefix: from('ARGOCD_REDIS_KEY_PREFIX', 'redis.key.prefix') ?? '',
    ...(useTls
      ? {
          tls: {
            ...(flags.redisCaCertificate ? { caFile: flags.redisCaCertificate } : {}),
            ...(flags.redisClientCertificate ? { certFile: flags.redisClientCertificate } : {}),
            ...(flags.redisClientKey ? { keyFile: flags.redisClientKey } : {}),
            insecureSkipVerify: flags.redisInsecureSkipTlsVerify === true,
          },
        }
      : {}),
    ...(credsDir ? { credsDir } : {}),
    username: input.env['REDIS_USERNAME'] ?? '',
    password: input.env['REDIS_PASSWORD'] ?? '',
    sentinelUsername: input.env['REDIS_SENTINEL_USERNAME'] ?? '',
    sentinelPassword: input.env['REDIS_SENTINEL_PASSWORD'] ?? '',
    maxRetries: int('REDIS_RETRY_COUNT', input.env['REDIS_RETRY_COUNT'], 3, 0, 2 ** 31 - 1),
    appStateExpirationMs,
    treeShardSize: int(
      'ARGOCD_APPLICATION_TREE_SHARD_SIZE',
      input.env['ARGOCD_APPLICATION_TREE_SHARD_SIZE'],
      0,
      0,
      1000,
    ),
  };
  return { enabled: true, config, warnings };
}
