// The control plane's life: a second independent instance, `impersync cluster` from start to
// SIGTERM, and no process left behind when the process that started it is killed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { createNamespace, getRaw, request, startControlPlane } from '../support/index.ts';
import { eventually, isAlive, processesMentioning } from '../support/procfs.ts';

const root = await mkdtemp(join(tmpdir(), 'cp-lifecycle-'));
after(() => rm(root, { recursive: true, force: true }));

const mainTs = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const holder = fileURLToPath(new URL('../controlplane/fixtures/start-and-wait.ts', import.meta.url));
const nodeArgs = ['--disable-warning=ExperimentalWarning'];

test('a second control plane is independent of the first', async (t) => {
  const [a, b] = await Promise.all([startControlPlane(), startControlPlane()]);
  t.after(() => Promise.all([a.stop(), b.stop()]));
  assert.notEqual(a.server, b.server);
  await createNamespace(a.admin, 'only-in-a');
  assert.ok(await getRaw(a.admin, { apiVersion: 'v1', kind: 'Namespace', name: 'only-in-a' }));
  assert.equal(await getRaw(b.admin, { apiVersion: 'v1', kind: 'Namespace', name: 'only-in-a' }), undefined);
  // Tokens and CAs are per instance: a's admin token means nothing to b.
  const crossed = new KubeConfig();
  crossed.loadFromOptions({
    clusters: [{ name: 'b', server: b.server, caData: Buffer.from(b.caPem).toString('base64') }],
    users: [{ name: 'a-admin', token: await a.tokenFor('admin') }],
    contexts: [{ name: 'x', cluster: 'b', user: 'a-admin' }],
    currentContext: 'x',
  });
  assert.equal((await request(crossed, { path: '/api/v1/namespaces' })).status, 401);
  await b.stop();
  assert.ok(
    await getRaw(a.admin, { apiVersion: 'v1', kind: 'Namespace', name: 'only-in-a' }),
    'a keeps running when b stops',
  );
});

test('impersync cluster --remote --nodes 1 writes kubeconfigs, audit logs and ready for both instances, runs a kwok node, and stops everything on SIGTERM', async (t) => {
  const dir = join(root, 'cluster');
  const started = Date.now();
  const cli = spawn(
    process.execPath,
    [...nodeArgs, mainTs, 'cluster', '--state-dir', dir, '--remote', '--nodes', '1'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  cli.stdout.setEncoding('utf8').on('data', (d: string) => {
    output += d;
  });
  cli.stderr.setEncoding('utf8').on('data', (d: string) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => cli.on('exit', (code) => resolve(code)));
  t.after(() => {
    cli.kill('SIGKILL');
  });

  await eventually('DIR/ready', () => existsSync(join(dir, 'ready')) || cli.exitCode !== null, 180_000);
  assert.equal(cli.exitCode, null, `impersync cluster exited early:\n${output}`);
  t.diagnostic(`impersync cluster --remote: ready after ${Date.now() - started} ms (including Node start)`);

  for (const d of [dir, join(dir, 'remote')]) {
    for (const f of ['admin.kubeconfig', 'controller.kubeconfig', 'audit.log', 'ready'])
      assert.ok(existsSync(join(d, f)), `${d}/${f}`);
    const ready = JSON.parse(await readFile(join(d, 'ready'), 'utf8')) as { server: string; startupMs: number };
    t.diagnostic(`${d}: ${ready.server}, control plane up in ${ready.startupMs} ms`);
    const admin = new KubeConfig();
    admin.loadFromFile(join(d, 'admin.kubeconfig'));
    assert.equal(admin.getCurrentCluster()?.server, ready.server);
    assert.equal((await request(admin, { path: '/api/v1/namespaces' })).status, 200);
    const controller = new KubeConfig();
    controller.loadFromFile(join(d, 'controller.kubeconfig'));
    const denied = await request(controller, { path: '/api/v1/namespaces' });
    assert.equal(denied.status, 403);
    assert.match(
      (denied.body as { message: string }).message,
      /User "impersync-controller" cannot list resource "namespaces"/,
    );
    assert.ok(
      await getRaw(admin, {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        name: 'applications.argoproj.io',
      }),
    );
  }
  assert.match(output, /export KUBECONFIG=.*admin\.kubeconfig/);
  const admin = new KubeConfig();
  admin.loadFromFile(join(dir, 'admin.kubeconfig'));
  const node = (await getRaw(admin, { apiVersion: 'v1', kind: 'Node', name: 'kwok-node-0' })) as {
    status?: { conditions?: Array<{ type: string; status: string }> };
  };
  assert.ok(
    node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    'the simulated node is Ready',
  );
  const children = processesMentioning(dir).filter((p) => p.pid !== cli.pid);
  assert.equal(
    children.length,
    8,
    `etcd, kube-apiserver, kube-controller-manager twice, kube-scheduler and kwok once:\n${children.map((c) => c.cmdline).join('\n')}`,
  );

  cli.kill('SIGTERM');
  assert.equal(await exited, 0, output);
  assert.ok(
    !existsSync(join(dir, 'ready')) && !existsSync(join(dir, 'remote', 'ready')),
    'ready files are removed on stop',
  );
  assert.ok(existsSync(join(dir, 'audit.log')), 'the audit log stays for reading');
  await eventually('every control-plane process to end', () => children.every((c) => !isAlive(c.pid)));
});

/** Runs start-and-wait.ts and returns the child with its report, once the control plane is up. */
async function holdControlPlane(t: { after: (fn: () => void) => void }, args: string[]) {
  const child = spawn(process.execPath, [...nodeArgs, holder, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    child.kill('SIGKILL');
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.on('exit', (code) => reject(new Error(`child exited (${code}) before its control plane was up:\n${stderr}`)));
  });
  const report = JSON.parse(line) as { dir: string; pids: number[] };
  assert.equal(report.pids.length, 3);
  return { child, exited, ...report };
}

test('a process killed with SIGKILL while its control plane runs leaves no process behind', async (t) => {
  const dir = join(root, 'killed');
  const { child, pids } = await holdControlPlane(t, [dir]);
  assert.ok(pids.every(isAlive));
  child.kill('SIGKILL');
  await eventually(
    'etcd, kube-apiserver and kube-controller-manager to end',
    () => pids.every((pid) => !isAlive(pid)) && processesMentioning(dir).length === 0,
  );
});

test('a process that exits without stop() leaves no process and no temporary folder behind', async (t) => {
  const { exited, dir, pids } = await holdControlPlane(t, ['-', 'exit']);
  assert.equal(await exited, 0);
  await eventually('etcd, kube-apiserver and kube-controller-manager to end', () => pids.every((pid) => !isAlive(pid)));
  assert.equal(existsSync(dir), false, `${dir} is removed`);
});
