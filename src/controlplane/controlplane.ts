// Starts and stops one local Kubernetes control plane: etcd, kube-apiserver (RBAC, ServiceAccount
// tokens, static-token identities, audit log) and kube-controller-manager (unless asked not to), on
// free loopback ports, with all state in one folder. Used by the test harness, by `impersync cluster`
// and, without the controller manager, by the demo of `impersync run`.
import { generateKeyPair, X509Certificate } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Binaries } from './binaries.ts';
import { binaryNames, howToGetBinaries, locateBinaries, withoutControllerManager } from './binaries.ts';
import { installCrds } from './crds.ts';
import type { Ports } from './flags.ts';
import { apiserverArgs, controllerManagerArgs, etcdArgs } from './flags.ts';
import type { Endpoint } from './http.ts';
import { request, sendRequest } from './http.ts';
import type { StaticUser, TokenUser } from './identities.ts';
import {
  adminUser,
  auditPolicyYaml,
  controllerManagerUser,
  controllerUser,
  kubeconfigYaml,
  tokenFile,
  withTokens,
} from './identities.ts';
import type { Layout } from './layout.ts';
import { layout } from './layout.ts';
import type { NodeBinaries } from './nodes.ts';
import { kwokUser, locateNodeBinaries, schedulerUser, startNodes } from './nodes.ts';
import { freeLoopbackPorts } from './ports.ts';
import type { ManagedProcess, Watchdog } from './processes.ts';
import { installHooks, startProcess, startWatchdog } from './processes.ts';
import { tailOf, waitFor } from './wait.ts';

export type ControlPlaneOptions = {
  /** Folder for kubeconfigs, audit log, logs and state. Default: a new temporary folder. */
  dir?: string;
  /** Keep the folder after stop(). Default: false for a temporary folder, true for `dir`. */
  keepDir?: boolean;
  /** Default: located (and built if needed) by scripts/control-plane-binaries. */
  binaries?: Binaries;
  /**
   * Run kube-controller-manager: namespaces finish deleting, owner references cascade, Deployments
   * get ReplicaSets, ServiceAccount token Secrets are filled. Default: true. Without it the binary is
   * neither needed nor built (the demo of `impersync run`, whose objects need none of that).
   */
  controllerManager?: boolean;
  /** More static-token users besides the admin and the controller identity. */
  users?: StaticUser[];
  /** Install deploy/crds/ and wait until Established. Default: true. */
  crds?: boolean;
  /** SIGKILL the processes on SIGINT/SIGTERM/SIGHUP. Default: true; `impersync cluster` handles signals itself. */
  killOnSignal?: boolean;
  /** Per phase (etcd, API server, controller manager). Default: 90 s. */
  timeoutMs?: number;
  /**
   * Simulated nodes (kube-scheduler + kwok, nodes.ts), so that pods run: Deployments become
   * Available, Jobs complete or fail. Default 0: no nodes, no scheduler, pods stay Pending.
   */
  nodes?: number;
  /** Default: located (and built if needed) by scripts/kwok-binary, when `nodes` asks for nodes. */
  nodeBinaries?: NodeBinaries;
  /** kube-apiserver serves /debug/pprof (Go's profiles) to the admin. Default: false. */
  profiling?: boolean;
};

export type ControlPlane = {
  dir: string;
  files: Layout;
  /** https://127.0.0.1:<port> */
  server: string;
  /** The CA that signed the API server's serving certificate (PEM). */
  caPem: string;
  adminKubeconfigPath: string;
  controllerKubeconfigPath: string;
  auditLogPath: string;
  admin: Endpoint;
  controller: Endpoint;
  /** Every static-token user by name, admin and controller included. */
  users: ReadonlyMap<string, TokenUser>;
  /** Kubeconfig text for a static-token user. */
  kubeconfig(userName: string, opts?: { impersonate?: string; namespace?: string }): string;
  processes: ManagedProcess[];
  /** Wall time from start() to ready, in milliseconds. */
  startupMs: number;
  /** Stops everything (also safe to call twice) and removes the folder unless kept. */
  stop(): Promise<void>;
  /**
   * Fault injection: stops kube-apiserver (etcd keeps its data), and starts it again on the same
   * port, certificates and flags; start() resolves once /readyz answers 200.
   */
  apiServer: { stop(): Promise<void>; start(): Promise<void> };
};

const attempts = 3;

// Temporary folders of control planes not stopped yet: removed at exit, after the exit hook of
// processes.ts (installed first) has killed their processes.
const temporaryDirs = new Set<string>();
let exitCleanupInstalled = false;
function removeAtExit(dir: string): void {
  temporaryDirs.add(dir);
  if (exitCleanupInstalled) return;
  exitCleanupInstalled = true;
  installHooks();
  process.on('exit', () => {
    for (const d of temporaryDirs) rmSync(d, { recursive: true, force: true });
  });
}

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const started = performance.now();
  const controllerManager = opts.controllerManager ?? true;
  const binaries =
    opts.binaries ?? (await locateBinaries({ names: controllerManager ? binaryNames : withoutControllerManager }));
  if (controllerManager && !binaries['kube-controller-manager'])
    throw new Error(`${binaries.dir}: no kube-controller-manager was given.\n${howToGetBinaries}`);
  const nodeBinaries = (opts.nodes ?? 0) > 0 ? (opts.nodeBinaries ?? (await locateNodeBinaries())) : undefined;
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'impersync-cp-')));
  const keepDir = opts.keepDir ?? opts.dir !== undefined;
  if (!keepDir) removeAtExit(dir);
  let lastError: unknown;
  // Ports are free when chosen but may be taken before the servers bind: try again with new ones.
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      const cp = await startOnce(binaries, dir, keepDir, { ...opts, ...(nodeBinaries ? { nodeBinaries } : {}) });
      cp.startupMs = Math.round(performance.now() - started);
      return cp;
    } catch (err) {
      lastError = err;
      if (!(err instanceof PortInUse)) break;
    }
  }
  if (!keepDir) {
    await rm(dir, { recursive: true, force: true });
    temporaryDirs.delete(dir);
  }
  throw lastError;
}

class PortInUse extends Error {}

async function prepare(l: Layout, users: TokenUser[]): Promise<void> {
  await rm(l.state, { recursive: true, force: true });
  await rm(l.logs, { recursive: true, force: true });
  for (const f of [l.ready, l.auditLog, l.adminKubeconfig, l.controllerKubeconfig]) await rm(f, { force: true });
  await mkdir(l.certDir, { recursive: true, mode: 0o700 });
  await mkdir(l.logs, { recursive: true });
  const { privateKey, publicKey } = await promisify(generateKeyPair)('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  await writeFile(l.serviceAccountKey, privateKey, { mode: 0o600 });
  await writeFile(l.serviceAccountPublicKey, publicKey);
  await writeFile(l.tokenFile, tokenFile(users), { mode: 0o600 });
  await writeFile(l.auditPolicy, auditPolicyYaml);
}

/** The API server writes its serving certificate followed by the CA that signed it. */
function caFromChain(pem: string): string | undefined {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const last = blocks[blocks.length - 1];
  if (blocks.length < 2 || last === undefined) return undefined;
  try {
    return new X509Certificate(last).ca ? `${last}\n` : undefined;
  } catch {
    return undefined; // still being written
  }
}

async function startOnce(
  binaries: Binaries,
  dir: string,
  keepDir: boolean,
  opts: ControlPlaneOptions,
): Promise<ControlPlane> {
  const l = layout(dir);
  const nodeUsers = opts.nodeBinaries ? [schedulerUser, kwokUser] : [];
  const users = withTokens([adminUser, controllerUser, controllerManagerUser, ...nodeUsers, ...(opts.users ?? [])]);
  const byName = new Map(users.map((u) => [u.name, u]));
  const token = (name: string) => byName.get(name)?.token ?? '';
  await prepare(l, users);
  const [etcdClient, etcdPeer, apiserver, controllerManager] = await freeLoopbackPorts(4);
  const ports: Ports = {
    etcdClient: etcdClient!,
    etcdPeer: etcdPeer!,
    apiserver: apiserver!,
    controllerManager: controllerManager!,
  };
  const timeoutMs = opts.timeoutMs ?? 90_000;
  const killOnSignal = opts.killOnSignal ?? true;
  const watchdog: Watchdog = startWatchdog();
  const processes: ManagedProcess[] = [];
  const startNamed = (name: string, command: string, args: string[]) => {
    const p = startProcess({ name, command, args, logPath: l.log(name) }, { killOnSignal, watchdog });
    processes.push(p);
    return p;
  };
  const start = (name: 'etcd' | 'kube-apiserver', args: string[]) => startNamed(name, binaries[name], args);

  let halted: Promise<void> | undefined;
  const halt = () => {
    halted ??= (async () => {
      watchdog.release();
      // Reverse order: the controller manager and API server before the store they use.
      for (const p of [...processes].reverse()) await p.stop();
    })();
    return halted;
  };
  const stop = async () => {
    await halt();
    if (!keepDir) {
      await rm(dir, { recursive: true, force: true });
      temporaryDirs.delete(dir);
    }
  };

  try {
    const etcd = start('etcd', etcdArgs(l, ports));
    await waitFor(etcd, 'etcd to report healthy', timeoutMs, async () => {
      const res = await fetch(`http://127.0.0.1:${ports.etcdClient}/health`).catch(() => undefined);
      return res?.ok === true && ((await res.json()) as { health?: string }).health === 'true';
    });

    let api = start('kube-apiserver', apiserverArgs(l, ports, { profiling: opts.profiling === true }));
    const certFile = join(l.certDir, 'apiserver.crt');
    const caPem = await waitFor(api, 'kube-apiserver to write its serving certificate', timeoutMs, async () =>
      existsSync(certFile) ? caFromChain(await readFile(certFile, 'utf8')) : undefined,
    );
    await writeFile(l.caFile, caPem);
    const server = `https://127.0.0.1:${ports.apiserver}`;
    const admin: Endpoint = { server, caPem, token: token(adminUser.name) };
    await waitFor(api, 'kube-apiserver to become ready (/readyz)', timeoutMs, async () => {
      const res = await request(admin, { path: '/readyz', timeoutMs: 5000 }).catch(() => undefined);
      return res?.status === 200;
    });

    const kubeconfig = (userName: string, o: { impersonate?: string; namespace?: string } = {}) => {
      const user = byName.get(userName);
      if (!user) throw new Error(`no static user ${userName}; known: ${[...byName.keys()].join(', ')}`);
      return kubeconfigYaml({ server, caPem, name: userName, token: user.token, ...o });
    };
    const crdsInstalled = opts.crds === false ? Promise.resolve([]) : installCrds(admin, { timeoutMs });
    const kcmBinary = opts.controllerManager === false ? undefined : binaries['kube-controller-manager'];
    if (kcmBinary) {
      await writeFile(l.controllerManagerKubeconfig, kubeconfig(controllerManagerUser.name), { mode: 0o600 });
      const kcm = startNamed('kube-controller-manager', kcmBinary, controllerManagerArgs(l, ports));
      // Its serving certificate is self-signed, and /healthz needs no credential.
      const kcmServer = `https://127.0.0.1:${ports.controllerManager}`;
      await waitFor(kcm, 'kube-controller-manager to become healthy (/healthz)', timeoutMs, async () => {
        const res = await sendRequest(
          kcmServer,
          { rejectUnauthorized: false, agent: false },
          { path: '/healthz', timeoutMs: 5000 },
        ).catch(() => undefined);
        return res?.status === 200;
      });
    }
    await crdsInstalled;
    if (opts.nodeBinaries && (opts.nodes ?? 0) > 0) {
      await startNodes({
        l,
        admin,
        kubeconfig,
        start: startNamed,
        binaries: opts.nodeBinaries,
        count: opts.nodes ?? 0,
        timeoutMs,
      });
    }
    await writeFile(l.adminKubeconfig, kubeconfig(adminUser.name), { mode: 0o600 });
    await writeFile(l.controllerKubeconfig, kubeconfig(controllerUser.name), { mode: 0o600 });

    return {
      dir,
      files: l,
      server,
      caPem,
      adminKubeconfigPath: l.adminKubeconfig,
      controllerKubeconfigPath: l.controllerKubeconfig,
      auditLogPath: l.auditLog,
      admin,
      controller: { server, caPem, token: token(controllerUser.name) },
      users: byName,
      kubeconfig,
      processes,
      startupMs: 0,
      stop,
      apiServer: {
        stop: async () => {
          await api.stop();
        },
        start: async () => {
          if (halted) throw new Error('the control plane was stopped; its API server cannot be started again');
          if (!api.exit) return;
          processes.splice(processes.indexOf(api), 1);
          api = start('kube-apiserver', apiserverArgs(l, ports, { profiling: opts.profiling === true }));
          await waitFor(api, 'kube-apiserver to become ready again (/readyz)', timeoutMs, async () => {
            const res = await request(admin, { path: '/readyz', timeoutMs: 5000 }).catch(() => undefined);
            return res?.status === 200;
          });
        },
      },
    };
  } catch (err) {
    await halt();
    const logs = await Promise.all(processes.map(async (p) => ({ p, tail: await tailOf(p.logPath) })));
    if (logs.some(({ tail }) => /address already in use/i.test(tail))) throw new PortInUse(String(err));
    const detail = logs.map(({ p, tail }) => `--- ${p.name} (${p.logPath}), last lines:\n${tail}`).join('\n');
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${detail}`, { cause: err });
  }
}
