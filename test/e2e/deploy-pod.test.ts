// The install's Pod, as closely as a process gets without a container runtime: the Deployment's own
// args and env (downward API values filled in), run as uid/gid 65532 (setpriv; as the current
// user when the tests do not run as root, which is non-root already), writable folders
// only for the cache, HOME and TMPDIR, the token of the installed ServiceAccount (strict RBAC).
// It wins the Lease under its Pod name, answers its probes, syncs example 1 as its ServiceAccount,
// and on SIGTERM exits 0 having released the Lease.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
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
const UID = asRoot ? 65532 : (process.getuid?.() ?? 0);
const GID = asRoot ? 65532 : (process.getgid?.() ?? 0);
let cp: TestControlPlane;
let repo: TestRepo;
let work: string;
let child: ChildProcess | undefined;
let output = '';
let port = 0;

type Container = {
  args: string[];
  env: { name: string; value?: string; valueFrom?: { fieldRef: { fieldPath: string } } }[];
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

const holder = async () =>
  (
    (
      await getRaw(cp.admin, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        namespace: 'argocd',
        name: 'impersync-controller',
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

before(async () => {
  if (asRoot && spawnSync('setpriv', ['--version']).status !== 0)
    throw new Error('setpriv (util-linux) is needed to run the Pod as uid 65532: apt-get install util-linux');
  cp = await startControlPlane();
  const install = kustomizeBuild('deploy/install');
  await applyAll(cp.admin, install);
  // Example 1's tenant, listed as an admin lists it (the install binds none by itself).
  await applyAll(cp.admin, [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'guestbook' } },
    tenantImpersonationBinding('guestbook'),
  ]);
  // The Pod's folders: the emptyDir volumes, owned by the Pod's user.
  work = await mkdtemp(path.join(os.tmpdir(), 'impersync-pod-'));
  await chmod(work, 0o755);
  const dirs = { cache: path.join(work, 'cache'), home: path.join(work, 'home'), tmp: path.join(work, 'tmp') };
  for (const d of Object.values(dirs)) {
    spawnSync('mkdir', ['-p', d]);
    await chown(d, UID, GID);
  }
  // The ServiceAccount token the kubelet would mount, as a kubeconfig the Pod's user can read.
  const token = await cp.tokenFor({ serviceAccount: 'impersync-controller', namespace: 'argocd' });
  const kubeconfig = path.join(work, 'kubeconfig');
  await writeFile(
    kubeconfig,
    kubeconfigYaml({ server: cp.server, caPem: cp.caPem, name: 'impersync-controller', token }),
    { mode: 0o644 },
  );
  // Git refuses repositories owned by another user: the repository belongs to the Pod's user too.
  repo = await TestRepo.create(path.join(work, 'repo'));
  await repo.commit(
    {
      'guestbook/service.yaml':
        'apiVersion: v1\nkind: Service\nmetadata:\n  name: guestbook-ui\nspec:\n  ports:\n  - port: 80\n  selector:\n    app: guestbook-ui\n',
    },
    'guestbook',
  );
  spawnSync('chown', ['-R', `${UID}:${GID}`, repo.dir]);

  const container = (find(install, 'Deployment')['spec'] as { template: { spec: { containers: Container[] } } })
    .template.spec.containers[0] as Container;
  port = await freePort();
  const downward: Record<string, string> = {
    'metadata.name': 'impersync-controller-5d8c7-x2x9q',
    'metadata.namespace': 'argocd',
  };
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
  for (const e of container.env)
    env[e.name] = e.valueFrom ? (downward[e.valueFrom.fieldRef.fieldPath] ?? '') : (e.value ?? '');
  // The container's paths, moved to this machine's folders.
  Object.assign(env, {
    IMPERSYNC_CACHE_DIR: dirs.cache,
    XDG_CACHE_HOME: dirs.cache,
    HOME: dirs.home,
    TMPDIR: dirs.tmp,
  });
  const args = container.args
    .map((a) => a.replace(/\$\((\w+)\)/g, (_, name: string) => env[name] ?? ''))
    .map((a) => (a.startsWith('--health-port=') ? `--health-port=${port}` : a));
  args.push(`--kubeconfig=${kubeconfig}`); // in a Pod: the in-cluster configuration
  const command = [
    process.execPath,
    '--disable-warning=ExperimentalWarning',
    path.join(repoRoot, 'src/cli/main.ts'),
    ...args,
  ];
  const [file, ...rest] = asRoot
    ? ['setpriv', `--reuid=${UID}`, `--regid=${GID}`, '--clear-groups', ...command]
    : command;
  child = spawn(file as string, rest, {
    cwd: dirs.home,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
});

after(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await cp?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

test('the Pod leads under its name, answers its probes, and syncs example 1 as its ServiceAccount', async () => {
  await waitFor('the Lease held by the Pod', async () =>
    (await holder()).startsWith('impersync-controller-5d8c7-x2x9q_'),
  );
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

test('SIGTERM: the Pod exits 0 and has released the Lease', async () => {
  assert.ok(child);
  const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0, output.slice(-3000));
  assert.equal(await holder(), '');
});
