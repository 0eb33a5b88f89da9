// Argo CD's own server side, for the drop-in tests: Argo CD's argocd-repo-server and argocd-server
// (authentication off, plaintext, on loopback) against a test control plane and a redis-server of
// test/support/redis.ts, and Argo CD's `argocd` CLI pointed at that server. impersync's controller takes the place of
// Argo CD's application controller; everything else is Argo CD v3.6.1's, built once by
// scripts/argocd-binaries. Argo CD's CRDs and notifications catalog come from scripts/argocd-data
// (the release's own files, extracted at test time, never committed).
//
// Every process is started in its own process group with the control plane's watchdog, so none
// outlives the test process; each start is bounded by a timeout whose error carries its log.
import { spawn, spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { installCrds } from '../../src/controlplane/crds.ts';
import { freeLoopbackPorts } from '../../src/controlplane/ports.ts';
import { startProcess, startWatchdog } from '../../src/controlplane/processes.ts';
import type { ManagedProcess, Watchdog } from '../../src/controlplane/processes.ts';
import type { TestControlPlane } from './controlplane.ts';
import { argocdDir } from './cmp.ts';
import type { TestRedis } from './redis.ts';

const repoRoot = path.resolve(import.meta.dirname, '../..');
let dataCached: string | undefined;

/** The folder of Argo CD's data (crds/*.yaml, notifications-catalog.yaml): IMPERSYNC_ARGOCD_DATA_DIR or scripts/argocd-data. */
export function argocdDataDir(): string {
  if (dataCached) return dataCached;
  const res = spawnSync('bash', [path.join(repoRoot, 'scripts/argocd-data')], {
    encoding: 'utf8',
    timeout: 10 * 60_000,
  });
  const dir = (res.stdout ?? '').trim().split('\n').at(-1) ?? '';
  if (res.status !== 0 || dir === '') {
    throw new Error(
      `these tests need Argo CD v3.6.1's CRDs and notifications catalog, and scripts/argocd-data could not provide them (exit ${res.status}):\n${res.stderr ?? res.error?.message}\n` +
        'Run scripts/argocd-data with network access to the Go module proxy, or set IMPERSYNC_ARGOCD_DATA_DIR to a folder holding crds/application-crd.yaml and notifications-catalog.yaml.',
    );
  }
  dataCached = dir;
  return dir;
}

/** The `argocd` multi-call binary (its argocd-server, argocd-repo-server links beside it). */
export function argocdBinary(name: 'argocd' | 'argocd-server' | 'argocd-repo-server' = 'argocd'): string {
  return path.join(argocdDir(), name);
}

/** Which Application CRD the control plane serves: impersync's (status subresource) or Argo CD's (none). */
export type CrdShape = 'impersync' | 'argocd';

/**
 * The CRDs Argo CD's server needs besides impersync's (its ApplicationSet informer waits for the
 * ApplicationSet CRD), or, with `shape: 'argocd'`, Argo CD's own three CRDs as an Argo CD install
 * has them (start the control plane with `crds: false` for that).
 */
export async function installArgoCDCrds(cp: TestControlPlane, shape: CrdShape): Promise<void> {
  const src = path.join(argocdDataDir(), 'crds');
  if (shape === 'argocd') {
    await installCrds(cp.processes.admin, { dir: src, timeoutMs: 60_000 });
    return;
  }
  const only = await mkdtemp(path.join(os.tmpdir(), 'argocd-crds-'));
  try {
    await copyFile(path.join(src, 'applicationset-crd.yaml'), path.join(only, 'applicationset-crd.yaml'));
    await installCrds(cp.processes.admin, { dir: only, timeoutMs: 60_000 });
  } finally {
    await rm(only, { recursive: true, force: true });
  }
}

/** Whether a TCP connection to 127.0.0.1:port opens (and, with `send`, the first answer includes `expect`). */
function probe(port: number, send?: string, expect?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let answer = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => {
      if (send === undefined) return done(true);
      socket.write(send);
    });
    socket.on('data', (d: Buffer) => {
      answer += String(d);
      if (expect !== undefined && answer.includes(expect)) done(true);
    });
  });
}

async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

/** A process of the Argo CD side: its log, and a start bounded by `timeoutMs`. */
export interface Started {
  name: string;
  process: ManagedProcess;
  log(): Promise<string>;
}

async function startBounded(
  watchdog: Watchdog,
  dir: string,
  spec: { name: string; command: string; args: string[]; env: NodeJS.ProcessEnv },
  ready: () => Promise<boolean>,
  timeoutMs: number,
): Promise<Started> {
  const logPath = path.join(dir, `${spec.name}.log`);
  const p = startProcess({ ...spec, logPath }, { watchdog });
  const log = () => readFile(logPath, 'utf8').catch(() => '');
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (p.exit) {
      throw new Error(
        `${spec.name} exited (code ${p.exit.code}, signal ${p.exit.signal}) before it was ready:\n${(await log()).slice(-6000)}`,
      );
    }
    if (await ready()) return { name: spec.name, process: p, log };
    if (Date.now() > end) {
      await p.stop(2000);
      throw new Error(`${spec.name} was not ready within ${timeoutMs} ms:\n${(await log()).slice(-6000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The environment of an Argo CD process: nothing of the test process's own (no KUBECONFIG, no proxy). */
function baseEnv(home: string): NodeJS.ProcessEnv {
  return { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home, TMPDIR: home, LC_ALL: 'C' };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface ArgoCD {
  /** host:port of argocd-server (plaintext, authentication off). */
  server: string;
  repoServer: string;
  redis: TestRedis;
  /** Runs `argocd <args>` against the server; never throws for a non-zero exit. */
  cli(args: readonly string[], opts?: { timeoutMs?: number }): Promise<CliResult>;
  /** The same, failing with the command, exit code and both outputs unless it exits 0. */
  cliOk(args: readonly string[], opts?: { timeoutMs?: number }): Promise<string>;
  /** Runs `argocd admin ...` (no server; the control plane's admin kubeconfig). */
  admin(args: readonly string[], opts?: { timeoutMs?: number }): Promise<CliResult>;
  /** The last lines of each process's log, for a failure message. */
  logs(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts Argo CD's repo-server and API server in `namespace` (default argocd) of the control plane,
 * reading and writing Argo CD's cache in `redis` (test/support/redis.ts startRedis, shared with
 * impersync's controller). The API server runs as the control plane's admin, as Argo CD's server
 * has cluster-wide rights in an install. argocd-cm must exist before (the settings Argo CD reads).
 */
export async function startArgoCD(
  cp: TestControlPlane,
  opts: {
    redis: TestRedis;
    namespace?: string;
    applicationNamespaces?: readonly string[];
    timeoutMs?: number;
  },
): Promise<ArgoCD> {
  const namespace = opts.namespace ?? 'argocd';
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'argocd-'));
  const watchdog = startWatchdog();
  const started: Started[] = [];
  const stopAll = async () => {
    for (const s of [...started].reverse()) await s.process.stop(3000);
    watchdog.release();
  };
  try {
    const [repoPort, repoMetrics, serverPort, serverMetrics] = (await freeLoopbackPorts(4)) as [
      number,
      number,
      number,
      number,
    ];
    const repoHome = path.join(dir, 'repo-server');
    await mkdir(repoHome);
    for (const sub of ['tls', 'ssh', 'gpg-keys', 'gpg-source']) await mkdir(path.join(repoHome, sub));
    started.push(
      await startBounded(
        watchdog,
        dir,
        {
          name: 'argocd-repo-server',
          command: argocdBinary('argocd-repo-server'),
          args: [
            '--address',
            '127.0.0.1',
            '--port',
            String(repoPort),
            '--metrics-address',
            '127.0.0.1',
            '--metrics-port',
            String(repoMetrics),
            '--disable-tls',
            // Its default names the mounted mTLS CA, which plaintext refuses.
            '--client-ca-path=',
            '--redis',
            opts.redis.address,
            '--logformat',
            'text',
          ],
          env: {
            ...baseEnv(repoHome),
            ARGOCD_GPG_ENABLED: 'false',
            ARGOCD_ASK_PASS_SOCK: path.join(repoHome, 'askpass.sock'),
            ARGOCD_TLS_DATA_PATH: path.join(repoHome, 'tls'),
            ARGOCD_SSH_DATA_PATH: path.join(repoHome, 'ssh'),
            ARGOCD_GNUPGHOME: path.join(repoHome, 'gpg-keys'),
            ARGOCD_GPG_DATA_PATH: path.join(repoHome, 'gpg-source'),
            ARGOCD_APP_CONF_PATH: repoHome,
          },
        },
        () => probe(repoPort),
        timeoutMs,
      ),
    );
    const serverHome = path.join(dir, 'server');
    await mkdir(serverHome);
    started.push(
      await startBounded(
        watchdog,
        dir,
        {
          name: 'argocd-server',
          command: argocdBinary('argocd-server'),
          args: [
            '--kubeconfig',
            cp.adminKubeconfigPath,
            '--namespace',
            namespace,
            '--insecure',
            '--disable-auth',
            '--address',
            '127.0.0.1',
            '--port',
            String(serverPort),
            '--metrics-address',
            '127.0.0.1',
            '--metrics-port',
            String(serverMetrics),
            '--repo-server',
            `127.0.0.1:${repoPort}`,
            '--repo-server-plaintext',
            '--redis',
            opts.redis.address,
            '--staticassets',
            path.join(serverHome, 'no-assets'),
            '--dex-server',
            'http://127.0.0.1:1',
            '--logformat',
            'text',
            ...(opts.applicationNamespaces?.length
              ? ['--application-namespaces', opts.applicationNamespaces.join(',')]
              : []),
          ],
          env: { ...baseEnv(serverHome), ARGOCD_APP_CONF_PATH: serverHome },
        },
        () => httpOk(`http://127.0.0.1:${serverPort}/healthz`),
        timeoutMs,
      ),
    );
    const cliHome = path.join(dir, 'cli');
    await mkdir(cliHome);
    const server = `127.0.0.1:${serverPort}`;
    const run = (args: readonly string[], timeout: number): Promise<CliResult> =>
      new Promise((resolve) => {
        const child = spawn(argocdBinary('argocd'), args, {
          env: { ...baseEnv(cliHome), ARGOCD_OPTS: '' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        const timer = setTimeout(() => {
          stderr += `\n[the test killed argocd ${args.join(' ')} after ${timeout} ms]`;
          child.kill('SIGKILL');
        }, timeout);
        child.once('error', (err) => {
          clearTimeout(timer);
          resolve({ code: null, stdout, stderr: `${stderr}\n${err.message}` });
        });
        child.once('close', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout, stderr });
        });
      });
    const serverFlags = ['--server', server, '--plaintext', '--config', path.join(cliHome, 'config')];
    const logs = async () => {
      const parts: string[] = [];
      for (const s of started)
        parts.push(`--- ${s.name} (last lines) ---\n${(await s.log()).split('\n').slice(-60).join('\n')}`);
      return parts.join('\n');
    };
    const cli = (args: readonly string[], o: { timeoutMs?: number } = {}) =>
      run([...args, ...serverFlags], o.timeoutMs ?? 120_000);
    return {
      server,
      repoServer: `127.0.0.1:${repoPort}`,
      redis: opts.redis,
      cli,
      cliOk: async (args, o) => {
        const r = await cli(args, o);
        if (r.code !== 0) {
          throw new Error(
            `argocd ${args.join(' ')} exited ${r.code}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}\n${await logs()}`,
          );
        }
        return r.stdout;
      },
      admin: (args, o = {}) =>
        run(
          ['admin', ...args, '--kubeconfig', cp.adminKubeconfigPath, '--namespace', namespace],
          o.timeoutMs ?? 60_000,
        ),
      logs,
      stop: async () => {
        await stopAll();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopAll();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * What Argo CD's notifications engine answers for one trigger of its catalog on the Application
 * `app` as the API server has it: `argocd admin notifications trigger run` with the catalog's
 * ConfigMap (notifications_catalog/install.yaml of the release), one boolean per condition.
 * An evaluation error (a field the expression cannot parse) is an error naming the trigger.
 */
export async function runTrigger(argocd: ArgoCD, trigger: string, app: string): Promise<boolean[]> {
  const catalog = path.join(argocdDataDir(), 'notifications-catalog.yaml');
  const r = await argocd.admin([
    'notifications',
    'trigger',
    'run',
    trigger,
    app,
    '--config-map',
    catalog,
    '--secret',
    ':empty',
  ]);
  // The command prints its errors on stderr and still exits 0.
  if (r.code !== 0 || r.stderr.includes('failed') || !r.stdout.startsWith('CONDITION')) {
    throw new Error(
      `argocd admin notifications trigger run ${trigger} ${app}: exit ${r.code}\n${r.stdout}\n${r.stderr}`,
    );
  }
  return r.stdout
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => {
      const last = line.trim().split(/\s+/).at(-1);
      if (last !== 'true' && last !== 'false') throw new Error(`unexpected trigger result line: ${line}`);
      return last === 'true';
    });
}
