// Writes Argo CD's cache to Redis (ioredis), as Argo CD's application controller writes it
// (util/cache/appstate/cache.go): after each refresh the resource tree (one value, or shards with
// the count on the first), then the managed resources, then a message on the managed-resources
// channel that argocd-server's resource-tree stream subscribes to; each destination's cluster info
// at most once a minute (Argo CD's expires after 10 minutes). Never in the way of reconciliation:
// `submit` only queues what to write (the latest per Application replaces an older one still
// waiting), a worker builds and writes it (one write per Application at a time, so the latest
// lands last), and a failure is logged, counted and retried later.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';
import {
  appManagedResourcesKey,
  appResourcesTreeKey,
  clusterInfoKey,
  clusterInfoStruct,
  diffStruct,
  marshal,
  redisKey,
  sortManagedResources,
  treeShards,
  treeStruct,
  treeUpdatedChannel,
} from './encode.ts';
import type { RedisConfig } from './options.ts';
import type { ApplicationTree, ClusterInfo, ResourceDiff } from './types.ts';

const CLUSTER_INFO_EXPIRATION_MS = 10 * 60_000;
const CLUSTER_INFO_EVERY_MS = 60_000;
const RETRY_MIN_MS = 2_000;
const RETRY_MAX_MS = 60_000;
const CONCURRENCY = 4;

/** What one Application's refresh leaves for the cache; built by the worker, not by the refresh. */
export interface AppCacheWrite {
  /** Argo CD's instance name (`name`, or `namespace_name` outside the controller's namespace). */
  instance: string;
  /** `managed` null: the managed resources are deleted (Argo CD's SetAppManagedResources with nil). */
  build(): Promise<{ tree: ApplicationTree; managed: ResourceDiff[] | null }>;
  /** Whether the Application still exists: a refresh that ends after its deletion writes nothing. */
  exists?: () => boolean;
  /** The destination's cluster info, when due (`clusterDue` said so). */
  cluster?: { server: string; info: () => Promise<ClusterInfo> } | undefined;
}

function readCred(dir: string, name: string): string {
  try {
    return readFileSync(join(dir, name), 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
}

/** ioredis options from Argo CD's: address or sentinels, db, credentials, TLS, retries. */
export function redisClientOptions(c: RedisConfig): RedisOptions {
  let { username, password, sentinelUsername, sentinelPassword } = c;
  if (c.credsDir) {
    // REDIS_CREDS_DIR_PATH: only the files count, a missing one is an empty credential (as in Argo CD).
    password = readCred(c.credsDir, 'auth');
    username = readCred(c.credsDir, 'auth_username');
    sentinelUsername = readCred(c.credsDir, 'sentinel_username');
    sentinelPassword = readCred(c.credsDir, 'sentinel_auth');
  }
  const tls = c.tls
    ? {
        ...(c.tls.caFile ? { ca: readFileSync(c.tls.caFile) } : {}),
        ...(c.tls.certFile ? { cert: readFileSync(c.tls.certFile) } : {}),
        ...(c.tls.keyFile ? { key: readFileSync(c.tls.keyFile) } : {}),
        rejectUnauthorized: !c.tls.insecureSkipVerify,
      }
    : undefined;
  const common: RedisOptions = {
    db: c.db,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    maxRetriesPerRequest: c.maxRetries,
    connectTimeout: 10_000,
    commandTimeout: 30_000,
    lazyConnect: true,
    // Reconnect forever, at most every 10 s: the cache comes back when Redis does.
    retryStrategy: (times) => Math.min(times * 500, 10_000),
  };
  if (c.sentinels.length > 0)
    return {
      ...common,
      sentinels: c.sentinels,
      name: c.sentinelMaster,
      ...(sentinelUsername ? { sentinelUsername } : {}),
      ...(sentinelPassword ? { sentinelPassword } : {}),
      ...(tls ? { tls, enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
    };
  const [, host = '', port = '6379'] = /^\[?(.*?)\]?:(\d+)$/.exec(c.address ?? '') ?? [];
  return { ...common, host, port: Number(port), ...(tls ? { tls } : {}) };
}

/** Told of each Redis command: its name, whether it failed, and how long it took. */
export type RedisObserver = (command: string, failed: boolean, seconds: number) => void;

export class ArgoCacheWriter {
  readonly #redis: Redis;
  readonly #config: RedisConfig;
  readonly #log: Logger;
  readonly #writes: Counter<'result'>;
  readonly #pending = new Map<string, AppCacheWrite>();
  /** Instances being written (at most CONCURRENCY): one write per Application at a time, so an older one never lands last. */
  readonly #writing = new Set<string>();
  readonly #clusterWritten = new Map<string, number>();
  #retryMs = RETRY_MIN_MS;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #idle: Array<() => void> = [];
  #lastError = '';

  readonly #observe: RedisObserver | undefined;

  constructor(
    config: RedisConfig,
    opts: { logger: Logger; registry?: Registry | undefined; observe?: RedisObserver | undefined },
  ) {
    this.#config = config;
    this.#observe = opts.observe;
    this.#log = opts.logger.child({ component: 'argocd-cache' });
    this.#redis = new Redis(redisClientOptions(config));
    // Connection errors are retried by ioredis; each is logged once per distinct message.
    this.#redis.on('error', (err: Error) => this.#logError(err));
    this.#writes = new Counter({
      name: 'impersync_argocd_cache_writes_total',
      help: "Writes of Argo CD's cache to Redis (an Application's tree and managed resources, or a cluster's info), by result",
      labelNames: ['result'],
      registers: opts.registry ? [opts.registry] : [],
    });
  }

  #logError(err: Error): void {
    if (err.message === this.#lastError) return;
    this.#lastError = err.message;
    this.#log.warn({ err: err.message }, "Argo CD's cache: Redis refused or cannot be reached; writes are retried");
  }

  /** Whether the destination's cluster info is due (once a minute per server). */
  clusterDue(server: string): boolean {
    return Date.now() - (this.#clusterWritten.get(server) ?? 0) >= CLUSTER_INFO_EVERY_MS;
  }

  /** Queues the Application's values; returns at once. */
  submit(write: AppCacheWrite): void {
    if (this.#closed) return;
    this.#pending.set(write.instance, write);
    this.#pump();
  }

  /** Resolves once nothing is queued or being written (tests). */
  idle(): Promise<void> {
    if (this.#pending.size === 0 && this.#writing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #pump(): void {
    if (this.#timer) return;
    for (const [instance, write] of this.#pending) {
      if (this.#writing.size >= CONCURRENCY) break;
      // A newer refresh of an Application being written waits for that write to end.
      if (this.#writing.has(instance)) continue;
      this.#pending.delete(instance);
      this.#writing.add(instance);
      void this.#write(write)
        .then(
          () => {
            this.#retryMs = RETRY_MIN_MS;
            this.#lastError = '';
          },
          (err: unknown) => {
            this.#writes.inc({ result: 'error' });
            this.#logError(err as Error);
            // Retried later unless a newer refresh has queued its own values meanwhile.
            if (!this.#closed && !this.#pending.has(instance)) this.#pending.set(instance, write);
            if (!this.#timer && !this.#closed) {
              this.#timer = setTimeout(() => {
                this.#timer = undefined;
                this.#pump();
              }, this.#retryMs);
              this.#timer.unref();
              this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
            }
          },
        )
        .finally(() => {
          this.#writing.delete(instance);
          this.#pump();
          if (this.#writing.size === 0 && (this.#pending.size === 0 || this.#closed)) {
            for (const r of this.#idle.splice(0)) r();
          }
        });
    }
  }

  async #connected(): Promise<void> {
    if (this.#redis.status === 'wait') await this.#redis.connect();
  }

  async #write(w: AppCacheWrite): Promise<void> {
    if (w.exists && !w.exists()) return;
    const { tree, managed } = await w.build();
    if (w.exists && !w.exists()) return;
    await this.#connected();
    const opts = { prefix: this.#config.prefix, compression: this.#config.compression };
    const ttl = this.#config.appStateExpirationMs;
    const pipeline = this.#redis.pipeline();
    const commands: string[] = [];
    treeShards(tree, this.#config.treeShardSize).forEach((shard, i) => {
      const key = redisKey(appResourcesTreeKey(w.instance, i), opts);
      pipeline.set(key, marshal(treeStruct(shard), this.#config.compression), 'PX', Math.max(1, ttl));
      commands.push('set');
    });
    const managedKey = redisKey(appManagedResourcesKey(w.instance), opts);
    commands.push(managed === null ? 'del' : 'set', 'publish');
    if (managed === null) pipeline.del(managedKey);
    else
      pipeline.set(
        managedKey,
        marshal(sortManagedResources(managed).map(diffStruct), this.#config.compression),
        'PX',
        Math.max(1, ttl),
      );
    pipeline.publish(treeUpdatedChannel(w.instance), '');
    await this.#exec(pipeline, commands);
    this.#writes.inc({ result: 'ok' });
    // Deleted while this was written: the deletion's own removal may have come first.
    if (w.exists && !w.exists()) {
      await this.forget(w.instance);
      return;
    }
    if (w.cluster && this.clusterDue(w.cluster.server)) {
      const info = await w.cluster.info();
      await this.#exec(
        this.#redis
          .pipeline()
          .set(
            redisKey(clusterInfoKey(w.cluster.server), opts),
            marshal(clusterInfoStruct(info), this.#config.compression),
            'PX',
            CLUSTER_INFO_EXPIRATION_MS,
          ),
        ['set'],
      );
      this.#clusterWritten.set(w.cluster.server, Date.now());
      this.#writes.inc({ result: 'ok' });
    }
  }

  /** An Application deleted: its values go (Argo CD's SetAppResourcesTree/SetAppManagedResources with nil). */
  async forget(instance: string): Promise<void> {
    this.#pending.delete(instance);
    const opts = { prefix: this.#config.prefix, compression: this.#config.compression };
    try {
      await this.#connected();
      await this.#exec(
        this.#redis
          .pipeline()
          .del(redisKey(appResourcesTreeKey(instance), opts), redisKey(appManagedResourcesKey(instance), opts)),
        ['del'],
      );
    } catch (err) {
      this.#writes.inc({ result: 'error' });
      this.#logError(err as Error);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#pending.clear();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    // Disconnected first: a write waiting on a Redis that does not answer fails at once.
    this.#redis.disconnect();
    await this.idle();
  }

  /** Runs a pipeline; each of its commands is observed (argocd_redis_request_*) with the pipeline's time. */
  async #exec(pipeline: ReturnType<Redis['pipeline']>, commands: readonly string[]): Promise<void> {
    const started = performance.now();
    let results: Array<[Error | null, unknown]> = [];
    try {
      results = (await pipeline.exec()) ?? [];
    } catch (err) {
      for (const c of commands) this.#observe?.(c, true, (performance.now() - started) / 1000);
      throw err;
    }
    const seconds = (performance.now() - started) / 1000;
    commands.forEach((c, i) => this.#observe?.(c, Boolean(results[i]?.[0]), seconds));
    for (const [err] of results) if (err) throw err;
  }
}
