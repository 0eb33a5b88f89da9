// The renderer as a child process, for everything that runs without the install's renderer
// Deployment: `impersync run` against a cluster or locally (`npm start`), `impersync diff`, the
// tests and the benchmarks. Tenant content is then still rendered in a process of its own whose
// environment holds no kubeconfig, token or credential variable of the controller's: only PATH,
// a private HOME and TMPDIR, and a UTF-8 locale (a kustomize env file or a chart cannot read what
// the process does not have). It listens on a socket in a folder only its user may open, the token
// goes over its stdin, and it ends when that pipe closes (when the controller is gone).
//
// A child that dies (killed for its memory, say) is started again on the next request.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { SourceError } from '../source/errors.ts';
import type { RenderInput, RenderResult } from '../source/index.ts';
import { RendererClient, type RenderOptions, type Renderer, type ResolveInput } from './client.ts';
import type { BudgetAnswer } from './protocol.ts';

export interface ChildRendererOptions {
  /** Clones and checkouts (the child's HOME and TMPDIR are made inside it too). */
  cacheDir: string;
  /** Folder with helm, kustomize and impersync-jsonnet (default: $IMPERSYNC_TOOLS_DIR, then PATH). */
  toolsDir?: string | undefined;
  /** file:// and local paths as repoURL: for local demos and tests only. */
  allowLocalRepositories?: boolean;
  /** Further `impersync renderer` flags (limits), e.g. ['--render-timeout=30s']. */
  flags?: readonly string[];
  /** Where the child's log lines go (its stderr, one JSON line each). Default: dropped. */
  logger?: Logger;
}

/** Where a child renderer keeps its Git clones unless told otherwise: $XDG_CACHE_HOME or ~/.cache, impersync/source. */
export function defaultSourceCacheDir(): string {
  return path.join(process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'), 'impersync', 'source');
}

const CLI = fileURLToPath(new URL(`../cli/main${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));
const START_TIMEOUT_MS = 30_000;

/** The only variables a child renderer gets. */
export function childEnvironment(cacheDir: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: path.join(cacheDir, 'home'),
    TMPDIR: path.join(cacheDir, 'tmp'),
    LANG: 'C.UTF-8',
    // Argo CD's repo-server switch for submodules (source/submodules.ts): a setting, no credential.
    ...(process.env['ARGOCD_GIT_MODULES_ENABLED'] !== undefined
      ? { ARGOCD_GIT_MODULES_ENABLED: process.env['ARGOCD_GIT_MODULES_ENABLED'] }
      : {}),
  };
}

interface Running {
  child: ChildProcess;
  client: RendererClient;
  exited: Promise<void>;
}

export class ChildRenderer implements Renderer {
  readonly #opts: ChildRendererOptions;
  #running: Promise<Running> | undefined;
  #socketDir: string | undefined;
  #closed = false;

  constructor(opts: ChildRendererOptions) {
    this.#opts = opts;
  }

  /** Starts the child now (the first request would otherwise); resolves once it listens. */
  async start(): Promise<void> {
    await this.#ensure();
  }

  /** The child's process id, once started (tests read its environment through /proc). */
  async pid(): Promise<number | undefined> {
    return (await this.#live()).child.pid;
  }

  async render(input: RenderInput, opts: RenderOptions = {}): Promise<RenderResult> {
    return (await this.#live()).client.render(input, opts);
  }

  async resolveRevision(
    input: ResolveInput,
    opts: Pick<RenderOptions, 'tenant' | 'application'> = {},
  ): Promise<string> {
    return (await this.#live()).client.resolveRevision(input, opts);
  }

  /** The child's memory budget; undefined while it is not running (it is not started for this). */
  async budget(): Promise<BudgetAnswer | undefined> {
    const running = await this.#running?.catch(() => undefined);
    if (!running || !isAlive(running.child)) return undefined;
    return running.client.budget();
  }

  async close(): Promise<void> {
    this.#closed = true;
    const running = await this.#running?.catch(() => undefined);
    this.#running = undefined;
    if (running) {
      await running.client.close().catch(() => {});
      running.child.stdin?.end();
      const killer = setTimeout(() => running.child.kill('SIGKILL'), 5000);
      await running.exited;
      clearTimeout(killer);
    }
    if (this.#socketDir) await rm(this.#socketDir, { recursive: true, force: true });
  }

  /** The running child; one that is gone (its exit perhaps not yet reported) is replaced first. */
  async #live(): Promise<Running> {
    const running = await this.#ensure();
    if (isAlive(running.child)) return running;
    if (this.#running && (await this.#running.catch(() => undefined)) === running) this.#running = undefined;
    return this.#ensure();
  }

  #ensure(): Promise<Running> {
    if (this.#closed) return Promise.reject(new SourceError('RendererUnavailable', 'the renderer is stopped'));
    this.#running ??= this.#spawn().catch((err: unknown) => {
      this.#running = undefined;
      throw err;
    });
    return this.#running;
  }

  async #spawn(): Promise<Running> {
    const cacheDir = path.resolve(this.#opts.cacheDir);
    const env = childEnvironment(cacheDir);
    await mkdir(env['HOME'] as string, { recursive: true });
    await mkdir(env['TMPDIR'] as string, { recursive: true });
    // A short path (sockets are limited to about 100 bytes), in a folder only this user may enter.
    this.#socketDir ??= await mkdtemp(path.join(os.tmpdir(), 'impersync-renderer-'));
    const socket = path.join(this.#socketDir, `r-${randomBytes(4).toString('hex')}.sock`);
    const token = randomBytes(32).toString('hex');
    const toolsDir = this.#opts.toolsDir ?? process.env['IMPERSYNC_TOOLS_DIR'];
    const args = [
      '--disable-warning=ExperimentalWarning',
      // As the install's renderer (NODE_OPTIONS): V8 would size the young generation from the heap
      // limit, up to 64 MiB a half, and keep it. The main thread copies answers and serves
      // requests; its render threads parse, with their own limits (pool.ts).
      '--max-semi-space-size=4',
      CLI,
      'renderer',
      `--listen=unix:${socket}`,
      '--token-stdin',
      `--cache-dir=${cacheDir}`,
      ...(toolsDir ? [`--tools-dir=${toolsDir}`] : []),
      ...(this.#opts.allowLocalRepositories ? ['--allow-local-repositories'] : []),
      ...(this.#opts.flags ?? []),
    ];
    const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin.on('error', () => {});
    child.stdin.write(`${token}\n`);
    forwardLogs(child, this.#opts.logger);
    await listening(child, exited);
    const client = new RendererClient({ url: `unix:${socket}`, token: () => token });
    const running: Running = { child, client, exited };
    void exited.then(() => {
      if (this.#closed) return;
      this.#opts.logger?.warn(
        { code: child.exitCode, signal: child.signalCode },
        'renderer child exited; starting another on the next render',
      );
      void client.close();
      if (this.#running) void this.#running.then((r) => r === running && (this.#running = undefined));
    });
    return running;
  }
}

/** Resolves when the child prints its `{"listening": ...}` line; rejects if it exits or takes too long. */
function listening(child: ChildProcess, exited: Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-4000);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new SourceError('RendererUnavailable', `the renderer did not start within ${START_TIMEOUT_MS / 1000}s`));
    }, START_TIMEOUT_MS);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('"listening"')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(
        new SourceError(
          'RendererUnavailable',
          `the renderer exited as it started: ${stderr.trim().split('\n').pop() ?? ''}`,
        ),
      );
    });
  });
}

function forwardLogs(child: ChildProcess, logger: Logger | undefined): void {
  let buffer = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (!logger || line.trim() === '') continue;
      try {
        const { msg, level, ...rest } = JSON.parse(line) as { msg?: string; level?: string; [k: string]: unknown };
        const fn =
          level === 'warn' || level === 'error' || level === 'fatal'
            ? 'warn'
            : level === 'debug' || level === 'trace'
              ? 'debug'
              : 'info';
        logger[fn]({ component: 'renderer', ...rest, time: undefined, pid: undefined, hostname: undefined }, msg ?? '');
      } catch {
        logger.info({ component: 'renderer' }, line.slice(0, 2000));
      }
    }
  });
}

function isAlive(child: ChildProcess): boolean {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return false;
  try {
    process.kill(child.pid, 0);
    return true;
  } catch {
    return false;
  }
}
