// The renderer process: a SourceRenderer whose checkouts render in worker threads (pool.ts), behind
// the HTTP server of server.ts. Started by `impersync renderer` (its own Deployment in the install,
// a child process of the controller elsewhere: child.ts). Its options, with every default, are here.
import { statSync, readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { SourceRenderer } from '../source/index.ts';
import { gitModulesEnabled } from '../source/submodules.ts';
import { DEFAULT_METADATA_CACHE_BYTES } from '../source/metadata-caches.ts';
import { DEFAULT_LIMITS, type RenderLimits } from '../source/render.ts';
import { startHealthServer, type HealthServer } from '../observability/health.ts';
import { createRendererMetrics, type RendererMetrics } from './metrics.ts';
import { RenderPool } from './pool.ts';
import { memoryLimit, type MemoryLimit } from './memory-limit.ts';
import { cpuLimit, defaultMaxRenders } from './cpu-limit.ts';
import { rendererMemory, type RendererMemory } from './memory.ts';
import { MAX_RENDERED_BYTES } from './protocol.ts';
import { rendererHandler, startRendererServer, type RendererServer, type RendererStats } from './server.ts';

export interface RendererProcessOptions {
  /** `host:port` or `unix:/path`. */
  listen: string;
  /** Clones, checkouts and helm's homes. */
  cacheDir: string;
  /** The token requests must carry: a file (re-read when it changes, as a mounted Secret does) or a value. */
  token: { file: string } | { value: string };
  /** Folder with helm, kustomize and impersync-jsonnet (default: $IMPERSYNC_TOOLS_DIR, then PATH). */
  toolsDir?: string | undefined;
  /** Folder of cmp-server sockets of config management plugins (source/cmp/). Default: none. */
  pluginSocketDir?: string | undefined;
  /** Globs of files left out of the app folder streamed to a plugin (Argo CD's --plugin-tar-exclude). */
  pluginTarExclusions?: readonly string[] | undefined;
  /** file:// and local paths as repoURL: for local demos and tests only. Default false. */
  allowLocalRepositories?: boolean;
  /** Renders at once (and worker threads). Default: one per CPU it may use, 2 to 4 (cpu-limit.ts). */
  maxRenders?: number;
  /** A render's time limit. Default 180 s. */
  renderTimeoutMs?: number;
  /** Heap of one render's worker thread (parsing what it renders). Default 1 GiB. */
  renderMemoryBytes?: number;
  /** Bytes of answers cached for unchanged inputs. Default 256 MiB. */
  cacheBytes?: number;
  /** Bytes of what is kept in memory of repositories (refs, tags, Helm indexes, listings). Default 288 MiB (source/metadata-caches.ts). */
  metadataCacheBytes?: number;
  /** Bytes of checked-out commits on disk. Default 2 GiB (source/git.ts). */
  checkoutCacheBytes?: number;
  /** Bytes of Git clones on disk. Default 2 GiB (source/git.ts). */
  cloneCacheBytes?: number;
  /** Limits of the tools and checkouts (source/render.ts has each default). */
  limits?: Partial<
    Pick<
      RenderLimits,
      | 'toolMemoryBytes'
      | 'writeMaxBytes'
      | 'checkoutMaxBytes'
      | 'checkoutMaxFiles'
      | 'maxDocumentBytes'
      | 'maxDocumentNodes'
    >
  >;
  /** Environment of git, helm and kustomize. Default: this process's. */
  env?: NodeJS.ProcessEnv;
  /** Check out submodules (source/submodules.ts). Default: ARGOCD_GIT_MODULES_ENABLED, as Argo CD's repo-server. */
  submodules?: boolean;
  /**
   * Its container's memory limit (--memory-limit), of which its renders and resolves get a budget
   * (memory.ts). Default: IMPERSYNC_MEMORY_LIMIT, else cgroup v2's memory.max, else the machine's
   * memory (with no limit found, a budget too small for one render is raised to one render's hold).
   */
  memoryLimit?: MemoryLimit;
  /** `host:port` of its /metrics and /healthz (metrics.ts), apart from the token-guarded listener. Default: none. */
  metricsListen?: string | undefined;
  logger: Logger;
}

export const RENDERER_DEFAULTS = {
  renderTimeoutMs: DEFAULT_LIMITS.renderTimeoutMs,
  renderMemoryBytes: 1024 * 1024 * 1024,
  cacheBytes: 256 * 1024 * 1024,
  metadataCacheBytes: DEFAULT_METADATA_CACHE_BYTES,
} as const;

export interface RunningRenderer {
  server: RendererServer;
  stats: RendererStats;
  metrics: RendererMetrics;
  /** Where /metrics is served (`host:port`), when asked for. */
  metricsAddress?: string;
  stop(): Promise<void>;
}

export async function startRenderer(opts: RendererProcessOptions): Promise<RunningRenderer> {
  let maxRenders = opts.maxRenders;
  if (maxRenders === undefined) {
    const cpu = cpuLimit();
    maxRenders = defaultMaxRenders(cpu.cpus);
    opts.logger.info(
      { maxRenders, cpus: cpu.cpus },
      `renders at once: ${maxRenders}, for ${cpu.cpus} CPU(s) (${cpu.from})`,
    );
  }
  const metrics = createRendererMetrics({ defaultMetrics: opts.metricsListen !== undefined });
  const renderTimeoutMs = opts.renderTimeoutMs ?? RENDERER_DEFAULTS.renderTimeoutMs;
  const renderMemoryBytes = opts.renderMemoryBytes ?? RENDERER_DEFAULTS.renderMemoryBytes;
  const cacheBytes = opts.cacheBytes ?? RENDERER_DEFAULTS.cacheBytes;
  const metadataCacheBytes = opts.metadataCacheBytes ?? RENDERER_DEFAULTS.metadataCacheBytes;
  const memory = budgetOf(opts, { maxRenders, renderMemoryBytes, cacheBytes, metadataCacheBytes });
  const pool = new RenderPool({ size: maxRenders, memoryBytes: renderMemoryBytes });
  const renderer = new SourceRenderer({
    cacheDir: opts.cacheDir,
    ...(opts.toolsDir !== undefined ? { toolsDir: opts.toolsDir } : {}),
    ...(opts.env !== undefined ? { env: opts.env } : {}),
    ...(opts.pluginSocketDir !== undefined ? { pluginSocketDir: opts.pluginSocketDir } : {}),
    ...(opts.pluginTarExclusions?.length ? { pluginTarExclusions: opts.pluginTarExclusions } : {}),
    limits: { renderTimeoutMs, maxRenderedBytes: MAX_RENDERED_BYTES, ...opts.limits },
    metadataCacheBytes,
    ...(opts.allowLocalRepositories ? { allowLocalRepositories: true } : {}),
    submodules: opts.submodules ?? gitModulesEnabled(process.env),
    runCheckout: (request, environment, timeoutMs) => pool.run(request, environment, timeoutMs),
    git: {
      ...(opts.checkoutCacheBytes !== undefined ? { treeCacheMaxBytes: opts.checkoutCacheBytes } : {}),
      ...(opts.cloneCacheBytes !== undefined ? { cloneCacheMaxBytes: opts.cloneCacheBytes } : {}),
      onRequest: metrics.onGitRequest,
    },
  });
  const handler = rendererHandler({
    renderer,
    token: tokenReader(opts.token),
    logger: opts.logger,
    maxConcurrent: maxRenders,
    renderTimeoutMs,
    cacheBytes,
    memory,
  });
  metrics.observeBudget(handler.budgetStats);
  const server = await startRendererServer(opts.listen, handler);
  let metricsServer: HealthServer | undefined;
  if (opts.metricsListen !== undefined) {
    const colon = opts.metricsListen.lastIndexOf(':');
    const host = colon > 0 ? opts.metricsListen.slice(0, colon).replace(/^\[|\]$/g, '') : '0.0.0.0';
    metricsServer = await startHealthServer({
      host,
      port: Number(opts.metricsListen.slice(colon + 1)),
      registry: metrics.registry,
      readiness: () => '',
    });
  }
  return {
    server,
    stats: handler.stats,
    metrics,
    ...(metricsServer
      ? { metricsAddress: `${opts.metricsListen?.slice(0, opts.metricsListen.lastIndexOf(':'))}:${metricsServer.port}` }
      : {}),
    stop: async () => {
      await metricsServer?.close();
      await server.close();
      await pool.close();
    },
  };
}

/**
 * The renderer's memory budget (memory.ts). A limit that was given (flag, variable, cgroup) and
 * leaves no room for one request is an error; with none found, the machine's memory is the limit
 * and a budget too small is raised to one render's hold, with a warning.
 */
function budgetOf(
  opts: RendererProcessOptions,
  sizes: { maxRenders: number; renderMemoryBytes: number; cacheBytes: number; metadataCacheBytes: number },
): RendererMemory {
  const found = opts.memoryLimit ?? memoryLimit({ env: process.env['IMPERSYNC_MEMORY_LIMIT'], noneFound: 'machine' });
  if (!found.ok) throw new Error(found.error);
  const common = {
    ...sizes,
    toolMemoryBytes: opts.limits?.toolMemoryBytes ?? DEFAULT_LIMITS.toolMemoryBytes,
    maxRenderedBytes: MAX_RENDERED_BYTES,
  };
  const made = rendererMemory({ ...common, limitBytes: found.bytes, from: found.from });
  if (made.ok) {
    opts.logger.info(
      { memoryLimitBytes: found.bytes, budgetBytes: made.memory.budget.capacity },
      made.memory.summary(),
    );
    return made.memory;
  }
  if (!found.guessed) throw new Error(made.error);
  opts.logger.warn(`${made.error}; no memory limit was found, so one render at a time is admitted`);
  const raised = rendererMemory({ ...common, limitBytes: found.bytes, from: found.from, minimum: true });
  if (!raised.ok) throw new Error(raised.error);
  return raised.memory;
}

/** The current token: a file is read again whenever its modification time changes (Secret rotation). */
function tokenReader(token: RendererProcessOptions['token']): () => string | undefined {
  if ('value' in token) return () => token.value;
  let seen: { mtimeMs: number; value: string | undefined } | undefined;
  return () => {
    let mtimeMs: number;
    try {
      mtimeMs = statSync(token.file).mtimeMs;
    } catch {
      return undefined;
    }
    if (seen?.mtimeMs !== mtimeMs) {
      const value = readFileSync(token.file, 'utf8').trim();
      seen = { mtimeMs, value: value === '' ? undefined : value };
    }
    return seen.value;
  };
}
