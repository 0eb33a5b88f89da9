// The install's two Pods, as closely as processes get without a container runtime: each
// Deployment's own args and env (downward API values filled in, the container paths moved to
// folders of this machine, Service names to loopback ports), run as the Pods' users (setpriv: the
// controller as 65532, the renderer as 65533; as the current user when the tests do not run as
// root). The controller gets the token of the installed ServiceAccount (strict RBAC); the renderer
// gets no credential, only the renderer-token Secret the controller makes, copied to its file as the
// kubelet would. The controller wins the Lease under its Pod name, answers its probes, syncs
// example 1 as its ServiceAccount through the renderer, and on SIGTERM exits 0 having released it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { applyRaw, getRaw, readYamlFile, startControlPlane } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import { TestRepo } from '../support/git.ts';
import { kubeconfigYaml } from '../../src/controlplane/identities.ts';
import { applyAll, find, kustomizeBuild, repoRoot, tenantImpersonationBinding } from '../deploy/render.ts';
import { operationPhase, waitForApp } from './controller-fixture.ts';

const asRoot = process.getuid?.() === 0;
const me = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
const CONTROLLER = asRoot ? { uid: 65532, gid: 65532 } : me;
const RENDERER = asRoot ? { uid: 65533, gid: 65533 } : me;
let cp: TestControlPlane;
let repo: TestRepo;
let work: string;
let child: ChildProcess | undefined;
let rendererChild: ChildProcess | undefined;
let rendererEnv: Record<string, string> = {};
let kubelet: NodeJS.Timeout | undefined;
let tokenFile = '';
let output = '';
let port = 0;
let rendererPort = 0;
let rendererMetricsPort = 0;

type Container = {
  args: string[];
  env?: {
    name: string;
    value?: string;
    valueFrom?: {
      fieldRef?: { fieldPath: string };
      configMapKeyRef?: { name: string; key: string; optional?: boolean };
    };
  }[];
};

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const p = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return p;
}

/** Waits for `cond`, with the pods' output in the error when it never holds. */
function waitFor(what: string, cond: () => Promise<boolean>, ms = 60_000): Promise<void> {
  return until(what, cond, ms, () => `output:\n${output.slice(-3000)}`);
}

// The install runs --shards=2: one Lease per shard, both held by the one Pod here.
const holder = async (name: string) =>
  (
    (
      await getRaw(cp.admin, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        namespace: 'argocd',
        name,
      })
    )?.['spec'] as { holderIdentity?: string } | undefined
  )?.holderIdentity ?? '';
const probe = async (p: string) => {
  try {
    return (await fetch(`http://127.0.0.1:${port}${p}`)).status;
  } catch {
    return 0;
  }
};

/** The container of Deployment `name`, with its env filled in and its paths moved by `paths`. */
function podProcess(
  install: KubeObject[],
  name: string,
  user: { uid: number; gid: number },
  overrides: { env: Record<string, string>; args: (a: string) => string; cwd: string },
): { file: string; args: string[]; env: Record<string, string>; cwd: string } {
  const container = (find(install, 'Deployment', name)['spec'] as { template: { spec: { containers: Container[] } } })
    .template.spec.containers[0] as Container;
  const downward: Record<string, string> = {
    'metadata.name': `${name}-5d8c7-x2x9q`,
    'metadata.namespace': 'argocd',
  };
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.configMapKeyRef;
    if (ref) {
      // As the kubelet: the key of a ConfigMap the install holds; an optional one absent sets nothing.
      const cm = install.find((o) => o.kind === 'ConfigMap' && o.metadata.name === ref.name) as
        (KubeObject & { data?: Record<string, string> }) | undefined;
      const value = cm?.data?.[ref.key];
      if (value !== undefined) env[e.name] = value;
      else assert.ok(ref.optional, `${name}: ConfigMap ${ref.name} key ${ref.key} is not in the install`);
      continue;
    }
    const field = e.valueFrom?.fieldRef?.fieldPath;
    env[e.name] = field !== undefined ? (downward[field] ?? '') : (e.value ?? '');
  }
  Object.assign(env, overrides.env);
  const args = container.args.map((a) => a.replace(/\$\((\w+)\)/g, (_, n: string) => env[n] ?? '')).map(overrides.args);
  const command = [
    process.execPath,
    '--disable-warning=ExperimentalWarning',
    path.join(repoRoot, 'src/cli/main.ts'),
    ...args,
  ];
  const [file, ...rest] = asRoot
    ? ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', ...command]
    : command;
  return { file: file as string, args: rest, env, cwd: overrides.cwd };
}

function start(p: ReturnType<typeof podProcess>): ChildProcess {
  const c = spawn(p.file, p.args, { cwd: p.cwd, env: p.env, stdio: ['ignore', 'pipe', 'pipe'] });
  c.stdout?.on('data', (d: Buffer) => void (output += d.toString()));
  c.stderr?.on('data', (d: Buffer) => void (output += d.toString()));
  return c;
}

/** Folders owned by `user`, as the Pod's emptyDir volumes are. */
async function volumes(names: string[], user: { uid: number; gid: number }): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const n of names) {
    out[n] = path.join(work, n);
    spawnSync('mkdir', ['-p', out[n]]);
    await chown(out[n], user.uid, user.gid);
  }
  return out;
}

before(async () => {
  if (asRoot && spawnSync('setpriv', ['--version']).status !== 0)
    throw new Error('setpriv (util-linux) is needed to run the Pods as their users: apt-get install util-linux');
  cp = await startControlPlane();
  const install = kustomizeBuild('deploy/install');
  await applyAll(cp.admin, install);
  // Example 1's tenant, listed as an admin lists it (the install binds none by itself).
  await applyAll(cp.admin, [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'guestbook' } },
    tenantImpersonationBinding('guestbook'),
  ]);
  work = await mkdtemp(path.join(os.tmpdir(), 'impersync-pod-'));
  await chmod(work, 0o755);
  const ctl = await volumes(['home', 'tmp'], CONTROLLER);
  const rnd = await volumes(['renderer-cache', 'renderer-home', 'renderer-tmp', 'renderer-token'], RENDERER);
  tokenFile = path.join(rnd['renderer-token'] as string, 'token');
  // The ServiceAccount token the kubelet would mount into the controller container, as a kubeconfig.
  const token = await cp.tokenFor({ serviceAccount: 'impersync-controller', namespace: 'argocd' });
  const kubeconfig = path.join(work, 'kubeconfig');
  await writeFile(
    kubeconfig,
    kubeconfigYaml({ server: cp.server, caPem: cp.caPem, name: 'impersync-controller', token }),
    {
      mode: 0o640,
    },
  );
  await chown(kubeconfig, CONTROLLER.uid, CONTROLLER.gid);
  repo = await TestRepo.create(path.join(work, 'repo'));
  await repo.commit(
    {
      'guestbook/service.yaml':
        'apiVersion: v1\nkind: Service\nmetadata:\n  name: guestbook-ui\nspec:\n  ports:\n  - port: 80\n  selector:\n    app: guestbook-ui\n',
    },
    'guestbook',
  );

  port = await freePort();
  rendererPort = await freePort();
  rendererMetricsPort = await freePort();
  const moved = (from: string, to: string) => (a: string) => a.replace(from, to);
  const renderer = podProcess(install, 'impersync-renderer', RENDERER, {
    env: {
      HOME: rnd['renderer-home'] as string,
      TMPDIR: rnd['renderer-tmp'] as string,
      IMPERSYNC_CACHE_DIR: rnd['renderer-cache'] as string,
      XDG_CACHE_HOME: rnd['renderer-cache'] as string,
      HELM_CACHE_HOME: path.join(rnd['renderer-cache'] as string, 'helm/cache'),
      HELM_CONFIG_HOME: path.join(rnd['renderer-cache'] as string, 'helm/config'),
      HELM_DATA_HOME: path.join(rnd['renderer-cache'] as string, 'helm/data'),
    },
    args: (a) =>
      moved(
        '--metrics-listen=0.0.0.0:8084',
        `--metrics-listen=127.0.0.1:${rendererMetricsPort}`,
      )(
        moved(
          '--listen=0.0.0.0:8081',
          `--listen=127.0.0.1:${rendererPort}`,
        )(
          moved(
            '/var/cache/impersync-renderer',
            rnd['renderer-cache'] as string,
          )(moved('/etc/impersync/renderer-token/token', tokenFile)(a)),
        ),
      ),
    cwd: rnd['renderer-home'] as string,
  });
  rendererEnv = renderer.env;
  rendererChild = start(renderer);
  const controller = podProcess(install, 'impersync-controller', CONTROLLER, {
    env: { HOME: ctl['home'] as string, TMPDIR: ctl['tmp'] as string },
    args: (a) =>
      a.startsWith('--health-port=')
        ? `--health-port=${port}`
        : // The headless Service's name, here one that resolves to the renderer on loopback.
          moved('dns+http://impersync-renderer-headless:8081', `dns+http://localhost:${rendererPort}`)(a),
    cwd: ctl['home'] as string,
  });
  controller.args.push(`--kubeconfig=${kubeconfig}`); // in a Pod: the in-cluster configuration
  child = start(controller);
  // The kubelet's part: once the controller has made the renderer's token Secret, the renderer's
  // (optional) Secret volume shows it as a file.
  kubelet = setInterval(() => {
    void (async () => {
      const secret = await getRaw(cp.admin, {
        apiVersion: 'v1',
        kind: 'Secret',
        namespace: 'argocd',
        name: 'impersync-renderer-token',
      });
      const data = (secret?.['data'] as Record<string, string> | undefined)?.['token'];
      if (data && !existsSync(tokenFile)) await writeFile(tokenFile, Buffer.from(data, 'base64'), { mode: 0o644 });
    })().catch(() => {});
  }, 200);
});

after(async () => {
  clearInterval(kubelet);
  for (const c of [child, rendererChild]) if (c && c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await cp?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

test("the Pod holds both shards' Leases under its name, answers its probes, and syncs example 1 as its ServiceAccount", async () => {
  await waitFor('the Leases held by the Pod', async () => {
    const held = await Promise.all(['impersync-controller-shard-0', 'impersync-controller-shard-1'].map(holder));
    return held.every((h) => h.startsWith('impersync-controller-5d8c7-x2x9q_'));
  });
  await waitFor(
    '/healthz and /readyz',
    async () => (await probe('/healthz')) === 200 && (await probe('/readyz')) === 200,
  );
  assert.equal(await probe('/metrics'), 200);
  const objects = await readYamlFile(path.join(repoRoot, 'examples/01-all-namespaces.yaml'));
  const app = find(objects, 'Application');
  await applyAll(
    cp.admin,
    objects.filter((o) => o.kind !== 'Application'),
  );
  const spec = app['spec'] as { source: Record<string, string> };
  await applyRaw(cp.admin, {
    ...app,
    spec: { ...spec, source: { ...spec.source, repoURL: repo.url } },
    operation: { sync: { revision: 'HEAD' }, initiatedBy: { username: 'pod-test' } },
  } as KubeObject);
  const synced = await waitForApp(cp, 'guestbook', 'a sync', (a) => operationPhase(a) === 'Succeeded', 90_000);
  // The renderer rendered it, holding no credential: no token, no kubeconfig, no API server address.
  assert.equal((await fetch(`http://127.0.0.1:${rendererPort}/readyz`)).status, 200);
  // Its metrics port, without a token: the git requests of that render, as Argo CD's repo-server counts them.
  const rendererMetrics = await (await fetch(`http://127.0.0.1:${rendererMetricsPort}/metrics`)).text();
  assert.match(rendererMetrics, /^argocd_git_request_total\{repo="[^"]*",request_type="ls-remote"\} [1-9]/m);
  assert.equal((await fetch(`http://127.0.0.1:${rendererMetricsPort}/v1/render`, { method: 'POST' })).status, 404);
  assert.deepEqual(
    Object.keys(rendererEnv).filter((k) => /KUBE|TOKEN|SERVICE_HOST/.test(k)),
    [],
  );
  assert.doesNotMatch(rendererChild?.spawnargs.join(' ') ?? '', /kubeconfig|serviceaccount/);
  assert.equal(
    (synced.status?.['operationState'] as { syncResult: { identity: string } }).syncResult.identity,
    'system:serviceaccount:guestbook:generic-deployer',
  );
  const writes = (await cp.readAudit()).filter(
    (r) =>
      r.namespace === 'guestbook' &&
      ['create', 'patch', 'update'].includes(r.verb) &&
      r.user === 'system:serviceaccount:argocd:impersync-controller',
  );
  assert.ok(writes.length > 0);
  for (const w of writes) assert.equal(w.impersonatedUser, 'system:serviceaccount:guestbook:generic-deployer');
  // The strict RBAC was enough: nothing the Pod asked as itself (Lease, watches, status, events) was refused.
  const refused = (await cp.readAudit()).filter(
    (r) =>
      r.user === 'system:serviceaccount:argocd:impersync-controller' &&
      r.impersonatedUser === undefined &&
      r.code === 403,
  );
  assert.deepEqual(
    refused.map((r) => `${r.verb} ${r.requestURI}`),
    [],
  );
});

test("SIGTERM: the Pod exits 0 and has released both shards' Leases", async () => {
  assert.ok(child);
  const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0, output.slice(-3000));
  assert.deepEqual(await Promise.all(['impersync-controller-shard-0', 'impersync-controller-shard-1'].map(holder)), [
    '',
    '',
  ]);
});
