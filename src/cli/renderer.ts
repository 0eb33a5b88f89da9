// `impersync renderer`: the renderer process (renderer/run.ts). It renders tenant content (Git
// checkouts, kustomize, helm) and holds no Kubernetes credential: run it where none is mounted.
import path from 'node:path';
import os from 'node:os';
import { parseDurationSeconds } from '../impersonation/duration.ts';
import { createLogger, isLogLevel } from '../observability/logger.ts';
import { RENDERER_DEFAULTS, startRenderer } from '../renderer/run.ts';
import { DEFAULT_RENDERS_MAX, DEFAULT_RENDERS_MIN } from '../renderer/cpu-limit.ts';
import type { RendererProcessOptions } from '../renderer/run.ts';
import { parseByteSize } from '../renderer/sizes.ts';
import { memoryLimit } from '../renderer/memory-limit.ts';
import { DEFAULT_PLUGIN_SOCKET_DIR } from '../source/cmp/defaults.ts';
import { parseFlags, stringFlag } from './args.ts';

export const RENDERER_USAGE = `usage: impersync renderer --listen ADDR (--token-file FILE | --token-stdin) [--cache-dir DIR]
                         [--tools-dir DIR] [--max-renders N] [--render-timeout DURATION]
                         [--render-memory SIZE] [--answer-cache SIZE] [--metadata-cache SIZE]
                         [--tool-memory SIZE]
                         [--tool-write-max SIZE] [--checkout-max-size SIZE] [--checkout-max-files N]
                         [--document-max-size SIZE] [--document-max-nodes N]
                         [--checkout-cache-max-size SIZE] [--clone-cache-max-size SIZE]
                         [--memory-limit SIZE] [--allow-local-repositories] [--log-level LEVEL]

Renders Applications' sources (git, kustomize build, helm template) for the controller, one request
at a time per render slot, and answers with the objects or a source error. It needs no Kubernetes
credential and must be given none: in the install it is its own Deployment without a ServiceAccount
token; \`impersync run\` without --renderer starts one as a child process.

  --listen ADDR               host:port (e.g. 0.0.0.0:8081) or unix:/path/to/socket
  --metrics-listen ADDR       host:port of /metrics and /healthz, without the token (e.g. 0.0.0.0:8084,
                              the port of Argo CD's repo-server metrics); default: not served
  --token-file FILE           the bearer token requests must carry, read again when the file changes
                              (a mounted Secret); until it exists the renderer is not ready
  --token-stdin               read the token from the first line of standard input, and exit when
                              standard input closes (how a controller runs its child renderer)
  --cache-dir DIR             Git clones and checkouts (default $XDG_CACHE_HOME/impersync/renderer)
  --tools-dir DIR             folder with helm, kustomize and impersync-jsonnet (default
                              $IMPERSYNC_TOOLS_DIR, then PATH)
  --plugin-sockets DIR        cmp-server sockets of config management plugin sidecars (default
                              $ARGOCD_PLUGINSOCKFILEPATH, then /home/argocd/cmp-server/plugins)
  --plugin-tar-exclude GLOB   leave files matching GLOB out of the app folder streamed to a plugin
                              (repeatable; default $ARGOCD_REPO_SERVER_PLUGIN_TAR_EXCLUSIONS, ;-separated)
  --max-renders N             renders at once; more wait (default: one per CPU it may use, from
                              cgroup v2's cpu.max or the machine's, at least ${DEFAULT_RENDERS_MIN} and at most ${DEFAULT_RENDERS_MAX})
  --render-timeout DURATION   one render's time limit, fetch to parsed objects (default ${RENDERER_DEFAULTS.renderTimeoutMs / 1000}s)
  --render-memory SIZE        memory of one render's parsing (default 1Gi)
  --answer-cache SIZE         answers kept for unchanged inputs at unchanged commits (default 256Mi; 0: off)
  --metadata-cache SIZE       what is kept in memory of repositories, all together: Helm indexes (4/9),
                              listed refs (2/9) and OCI tags (2/9), commits' folder listings (1/9)
                              (default 288Mi; 0: none kept, every lookup asks again)
  --tool-memory SIZE          address space of each git, helm and kustomize process (default 2Gi)
  --tool-write-max SIZE       largest file one of them may write, a fetched pack included (default 256Mi)
  --checkout-max-size SIZE    a commit whose files add up to more is refused before it is written (default 1Gi)
  --checkout-max-files N      a commit with more files is refused likewise (default 100000)
  --checkout-cache-max-size SIZE
                              checked-out commits kept on disk, in use or not (default 2Gi)
  --clone-cache-max-size SIZE Git clones kept on disk (default 2Gi); the two caches together must fit
                              in the cache folder's volume, with room for the renders' own files
  --document-max-size SIZE    largest YAML or JSON document, its aliases counted at every use (default 16Mi)
  --document-max-nodes N      most nodes one document may expand to, likewise (default 1000000)
  --memory-limit SIZE         the renderer's container memory limit (e.g. 8Gi): 85% of it, less the
                              answer and metadata caches and --max-renders × the render threads' heaps, is the
                              budget renders and resolves wait for, each holding --tool-memory (and a
                              render 4 × its rendered objects' limit) while it runs; one that could
                              never fit is refused (default: IMPERSYNC_MEMORY_LIMIT, else cgroup v2
                              memory.max, else the machine's memory)
  --allow-local-repositories  accept file:// and local paths as repoURL (local demos and tests only)
  --log-level LEVEL           trace, debug, info (default), warn, error
`;

export async function main(argv: string[]): Promise<number> {
  const flags = parseFlags(argv, {
    listen: { type: 'string' },
    'metrics-listen': { type: 'string' },
    'token-file': { type: 'string' },
    'token-stdin': { type: 'boolean' },
    'cache-dir': { type: 'string' },
    'tools-dir': { type: 'string' },
    'plugin-sockets': { type: 'string' },
    'plugin-tar-exclude': { type: 'string', multiple: true },
    'max-renders': { type: 'string' },
    'render-timeout': { type: 'string' },
    'render-memory': { type: 'string' },
    'answer-cache': { type: 'string' },
    'metadata-cache': { type: 'string' },
    'tool-memory': { type: 'string' },
    'tool-write-max': { type: 'string' },
    'checkout-max-size': { type: 'string' },
    'checkout-max-files': { type: 'string' },
    'document-max-size': { type: 'string' },
    'checkout-cache-max-size': { type: 'string' },
    'clone-cache-max-size': { type: 'string' },
    'document-max-nodes': { type: 'string' },
    'allow-local-repositories': { type: 'boolean' },
    'memory-limit': { type: 'string' },
    'log-level': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  const fail = (message: string): number => {
    process.stderr.write(`impersync renderer: ${message}\n`);
    return 2;
  };
  if (!flags.ok) return fail(`${flags.error}\n${RENDERER_USAGE}`);
  const v = flags.values;
  if (v['help'] === true) {
    process.stdout.write(RENDERER_USAGE);
    return 0;
  }
  const listen = stringFlag(v, 'listen', '');
  if (listen === '') return fail('--listen is required (host:port or unix:/path)');
  const metricsListen = stringFlag(v, 'metrics-listen', '');
  if (metricsListen !== '' && !/^(\[[^\]]*\]|[^:]*):\d{1,5}$/.test(metricsListen))
    return fail(`--metrics-listen must be host:port, not '${metricsListen}'`);
  const level = stringFlag(v, 'log-level', 'info');
  if (!isLogLevel(level)) return fail(`--log-level must be one of trace, debug, info, warn, error, not '${level}'`);
  const tokenFile = stringFlag(v, 'token-file', '');
  const tokenStdin = v['token-stdin'] === true;
  if ((tokenFile === '') === !tokenStdin) return fail('give exactly one of --token-file and --token-stdin');

  const opts: Partial<RendererProcessOptions> = {};
  const maxRenders = stringFlag(v, 'max-renders', '');
  if (maxRenders !== '') {
    const n = Number(maxRenders);
    if (!Number.isInteger(n) || n < 1)
      return fail(`--max-renders must be a whole number of at least 1, not '${maxRenders}'`);
    opts.maxRenders = n;
  }
  const timeout = stringFlag(v, 'render-timeout', '');
  if (timeout !== '') {
    const d = parseDurationSeconds(timeout);
    if (!d.ok || d.seconds <= 0) return fail(`--render-timeout: ${d.ok ? 'must be more than 0' : d.error}`);
    opts.renderTimeoutMs = d.seconds * 1000;
  }
  for (const [flag, key] of [
    ['render-memory', 'renderMemoryBytes'],
    ['answer-cache', 'cacheBytes'],
    ['metadata-cache', 'metadataCacheBytes'],
    ['checkout-cache-max-size', 'checkoutCacheBytes'],
    ['clone-cache-max-size', 'cloneCacheBytes'],
  ] as const) {
    const raw = stringFlag(v, flag, '');
    if (raw === '') continue;
    const size = parseByteSize(raw);
    if (!size.ok) return fail(`--${flag}: ${size.error}`);
    opts[key] = size.bytes;
  }

  const limits: NonNullable<RendererProcessOptions['limits']> = {};
  for (const [flag, key] of [
    ['tool-memory', 'toolMemoryBytes'],
    ['tool-write-max', 'writeMaxBytes'],
    ['checkout-max-size', 'checkoutMaxBytes'],
    ['document-max-size', 'maxDocumentBytes'],
  ] as const) {
    const raw = stringFlag(v, flag, '');
    if (raw === '') continue;
    const size = parseByteSize(raw);
    if (!size.ok || size.bytes <= 0) return fail(`--${flag}: ${size.ok ? 'must be more than 0' : size.error}`);
    limits[key] = size.bytes;
  }
  for (const [flag, key] of [
    ['checkout-max-files', 'checkoutMaxFiles'],
    ['document-max-nodes', 'maxDocumentNodes'],
  ] as const) {
    const raw = stringFlag(v, flag, '');
    if (raw === '') continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) return fail(`--${flag} must be a whole number of at least 1, not '${raw}'`);
    limits[key] = n;
  }
  opts.limits = limits;
  const memory = memoryLimit({
    flag: stringFlag(v, 'memory-limit', ''),
    env: process.env['IMPERSYNC_MEMORY_LIMIT'],
    noneFound: 'machine',
  });
  if (!memory.ok) return fail(memory.error);
  opts.memoryLimit = memory;

  let token: RendererProcessOptions['token'];
  if (tokenStdin) {
    const line = await firstLine(process.stdin);
    if (!line) return fail('--token-stdin: standard input closed before a token was given');
    token = { value: line };
  } else {
    token = { file: tokenFile };
  }
  // Logs go to stderr: stdout carries the one line saying where it listens.
  const logger = createLogger({ level, name: 'impersync-renderer' }, undefined, 2);
  const cacheDir = stringFlag(
    v,
    'cache-dir',
    path.join(process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'), 'impersync', 'renderer'),
  );
  const toolsDir = stringFlag(v, 'tools-dir', '');
  // Argo CD's repo-server reads the same variable, so a sidecar mounted for it is found here too.
  const pluginSocketDir = stringFlag(
    v,
    'plugin-sockets',
    process.env['ARGOCD_PLUGINSOCKFILEPATH'] || DEFAULT_PLUGIN_SOCKET_DIR,
  );
  // As Argo CD's repo-server: the flag, or its variable split on `;`.
  const flagged = v['plugin-tar-exclude'];
  const pluginTarExclusions = (
    Array.isArray(flagged)
      ? flagged.map(String)
      : (process.env['ARGOCD_REPO_SERVER_PLUGIN_TAR_EXCLUSIONS'] ?? '').split(';')
  )
    .map((g) => g.trim())
    .filter((g) => g !== '');
  let running: Awaited<ReturnType<typeof startRenderer>>;
  try {
    running = await startRenderer({
      ...opts,
      listen,
      cacheDir,
      token,
      logger,
      allowLocalRepositories: v['allow-local-repositories'] === true,
      ...(toolsDir !== '' ? { toolsDir } : {}),
      ...(metricsListen !== '' ? { metricsListen } : {}),
      pluginSocketDir,
      ...(pluginTarExclusions.length > 0 ? { pluginTarExclusions } : {}),
    });
  } catch (err) {
    return fail((err as Error).message);
  }
  process.stdout.write(
    `${JSON.stringify({ listening: running.server.address, ...(running.metricsAddress ? { metrics: running.metricsAddress } : {}) })}\n`,
  );
  logger.info({ listen: running.server.address, cacheDir }, 'renderer listening');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
    // A child renderer ends with its controller: the pipe closes when the parent is gone.
    if (tokenStdin) process.stdin.once('end', resolve).once('close', resolve).resume();
  });
  logger.info('renderer stopping');
  await running.stop();
  return 0;
}

function firstLine(stream: NodeJS.ReadableStream): Promise<string | undefined> {
  return new Promise((resolve) => {
    let buffer = '';
    const onData = (chunk: Buffer | string): void => {
      buffer += chunk.toString();
      const nl = buffer.indexOf('\n');
      if (nl >= 0) {
        stream.off('data', onData);
        stream.pause();
        resolve(buffer.slice(0, nl).trim() || undefined);
      }
    };
    stream.on('data', onData);
    stream.once('end', () => resolve(buffer.trim() || undefined));
  });
}
