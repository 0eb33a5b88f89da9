// Fault injection for the fault tests: a TCP proxy on loopback whose connections can be cut and
// refused (a watch stream cut, a network partition between controller and API server), and the
// controller as a real child process (`impersync run --kubeconfig ...`) that can be SIGKILLed and
// started again. The API server itself is stopped and restarted through
// `cp.processes.apiServer.stop()/start()` (src/controlplane/controlplane.ts).
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { kubeconfigYaml } from '../../src/controlplane/identities.ts';
import type { TestControlPlane } from './controlplane.ts';

export interface CuttableProxy {
  /** <target's scheme>://127.0.0.1:<port>: the API server's certificate names 127.0.0.1, so TLS still verifies. */
  server: string;
  port: number;
  /** Connections accepted so far (to check that traffic really went through it). */
  connections(): number;
  /** Destroys every open connection; with `refuse`, new ones are closed at once until resume(). */
  cut(opts?: { refuse?: boolean }): void;
  resume(): void;
  close(): Promise<void>;
}

/**
 * A plain TCP relay from a loopback port (free, or `port`: a proxy closed and started again on the
 * same address, so that a URL is refused for a while) to `target` (http(s)://127.0.0.1:<port>).
 */
export async function startCuttableProxy(target: string, opts: { port?: number } = {}): Promise<CuttableProxy> {
  const url = new URL(target);
  const open = new Set<net.Socket>();
  let refusing = false;
  let count = 0;
  const server = net.createServer((client) => {
    count++;
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(url.port), url.hostname);
    open.add(client);
    open.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  const cutAll = () => {
    for (const s of open) s.destroy();
    open.clear();
  };
  return {
    server: `${url.protocol}//127.0.0.1:${port}`,
    port,
    connections: () => count,
    cut: (opts = {}) => {
      refusing = opts.refuse === true;
      cutAll();
    },
    resume: () => {
      refusing = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        cutAll();
        server.close(() => resolve());
      }),
  };
}

/** A kubeconfig file for the controller identity that talks to `server` (e.g. a proxy). */
export async function controllerKubeconfigVia(
  cp: TestControlPlane,
  server: string,
  name = 'controller-via-proxy',
): Promise<string> {
  const file = path.join(cp.dir, `${name}.kubeconfig`);
  const token = await cp.tokenFor('controller');
  await writeFile(file, kubeconfigYaml({ server, caPem: cp.caPem, name: 'impersync-controller', token }), {
    mode: 0o600,
  });
  return file;
}

const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

export interface ControllerProcess {
  child: ChildProcess;
  /** stdout and stderr so far (JSON log lines). */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (default SIGKILL) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** `impersync run --kubeconfig FILE --namespace argocd` as a child process of the test. */
export function spawnController(opts: { kubeconfig: string; cacheDir: string; args?: string[] }): ControllerProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, IMPERSYNC_CACHE_DIR: opts.cacheDir };
  delete env['KUBERNETES_SERVICE_HOST'];
  const child = spawn(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      main,
      'run',
      '--kubeconfig',
      opts.kubeconfig,
      '--namespace=argocd',
      '--health-port=0',
      '--log-level=debug',
      ...(opts.args ?? []),
    ],
    { cwd: opts.cacheDir, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString('utf8');
  });
  child.stderr?.on('data', (c: Buffer) => {
    out += c.toString('utf8');
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => out,
    exited,
    kill: async (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Polls `cond` every 100 ms; the error names `what` and adds `detail()` when given. */
export async function until(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  detail?: () => string,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail ? `\n${detail()}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
