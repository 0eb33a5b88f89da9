// `impersync run` with no flag and no in-cluster environment: the README's first command. It must
// start a local control plane (etcd and kube-apiserver: the demo needs no controller manager),
// install the examples, sync the one whose ServiceAccount may deploy, print which ServiceAccount it
// synced as and which Applications were refused and why, and stop everything on SIGINT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { applyRaw, getRaw, grantRole, requestOk, startControlPlane } from '../support/index.ts';
import {
  application,
  deployer,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  operationPhase,
  project,
  setSettings,
  waitForApp,
} from './controller-fixture.ts';
import { TestRepo } from '../support/git.ts';

const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

test(
  'impersync run with no flag syncs example 1 as its ServiceAccount and reports the refused ones',
  { timeout: 240_000 },
  async () => {
    const cwd = await mkdtemp(path.join(os.tmpdir(), 'impersync-run-'));
    const env = { ...process.env };
    delete env['KUBECONFIG'];
    delete env['KUBERNETES_SERVICE_HOST'];
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', main, 'run'], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const end = Date.now() + 180_000;
      const done = () =>
        out.includes('✔ argocd/guestbook synced') &&
        /✖ argocd\/guestbook-prod refused: ServiceAccount guestbook-prod:guestbook-prod-deployer may not: /.test(out);
      while (!done()) {
        if (Date.now() > end || child.exitCode !== null)
          assert.fail(`expected output not seen.\nstdout:\n${out}\nstderr:\n${err.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.match(out, /✔ argocd\/guestbook synced: .* as system:serviceaccount:guestbook:generic-deployer/);
      assert.match(
        out,
        /✖ argocd\/guestbook-dev refused: ServiceAccount guestbook-dev:guestbook-generic-deployer may not: /,
      );
      // The demo needs no kube-controller-manager, so a first run neither builds nor starts one.
      assert.match(
        out,
        /^impersync: no cluster given: starting a local control plane \(etcd, kube-apiserver\)\.\.\.$/m,
      );
      assert.deepEqual((await readdir(path.join(cwd, '.state/run/logs'))).sort(), ['etcd.log', 'kube-apiserver.log']);
      child.kill('SIGINT');
      assert.equal(await exited, 0, `exit status; stderr:\n${err.slice(-2000)}`);
      assert.match(out, /impersync: stopping/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(cwd, { recursive: true, force: true });
    }
  },
);

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

test(
  'impersync run --kubeconfig --leader-elect: leads, serves /readyz and /metrics, syncs as the ServiceAccount, stops on SIGTERM',
  { timeout: 180_000 },
  async () => {
    const cp = await startControlPlane();
    const repo = await TestRepo.create();
    const cwd = await mkdtemp(path.join(os.tmpdir(), 'impersync-run-'));
    let child: ReturnType<typeof spawn> | undefined;
    try {
      await repo.commit(guestbookFiles());
      await grantControllerRights(cp);
      await grantRole(cp.admin, {
        name: 'impersync-lease',
        namespace: 'argocd',
        to: 'controller',
        rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create', 'get', 'update'] }],
      });
      await deployer(cp, 'guestbook', 'generic-deployer');
      await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
      await applyRaw(
        cp.admin,
        project('my-project', {
          destinationServiceAccounts: [
            { server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'generic-deployer' },
          ],
        }),
      );
      await applyRaw(cp.admin, application('guestbook', repo.url, { project: 'my-project' }));
      const port = await freePort();
      const kubeconfig = await cp.kubeconfigFileFor('controller');
      const env = { ...process.env, IMPERSYNC_CACHE_DIR: cwd, POD_NAME: 'test-pod' };
      child = spawn(
        process.execPath,
        [
          '--disable-warning=ExperimentalWarning',
          main,
          'run',
          '--kubeconfig',
          kubeconfig,
          '--namespace=argocd',
          `--health-port=${port}`,
          '--leader-elect',
          '--leader-election-lease=impersync-controller',
          '--log-level=info',
          '--status-processors=2',
          '--operation-processors=1',
        ],
        { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString('utf8');
      });
      child.stderr?.on('data', (c: Buffer) => {
        out += c.toString('utf8');
      });
      const exited = new Promise<number | null>((resolve) => child?.on('exit', (code) => resolve(code)));
      const app = await waitForApp(
        cp,
        'guestbook',
        'Succeeded',
        (a) => operationPhase(a) === 'Succeeded',
        60_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\noutput:\n${out.slice(-3000)}`);
      });
      assert.match(JSON.stringify(app.status), /system:serviceaccount:guestbook:generic-deployer/);
      // A refused connection is the process gone: say how it ended and what it printed.
      const get = (p: string) =>
        fetch(`http://127.0.0.1:${port}${p}`).catch((err: Error) => {
          throw new Error(
            `GET ${p}: ${err.message} (the controller's exit code: ${String(child?.exitCode)}, signal: ${String(child?.signalCode)})\noutput:\n${out.slice(-4000)}`,
          );
        });
      assert.equal((await get('/readyz')).status, 200);
      assert.match(await (await get('/metrics')).text(), /impersync_syncs_total\{phase="Succeeded"\} 1/);
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.ok(
        lines.some((l) => l['msg'] === 'leading: starting the controller'),
        'JSON logs say it leads',
      );
      assert.ok(
        lines.some(
          (l) =>
            l['application'] === 'argocd/guestbook' &&
            l['serviceAccount'] === 'system:serviceaccount:guestbook:generic-deployer' &&
            l['project'] === 'my-project',
        ),
      );
      child.kill('SIGTERM');
      assert.equal(await exited, 0, out.slice(-2000));
    } finally {
      if (child && child.exitCode === null) child.kill('SIGKILL');
      await repo.remove();
      await rm(cwd, { recursive: true, force: true });
      await cp.stop();
    }
  },
);

test(
  'a controller killed (SIGKILL) in the middle of a sync: the next one resumes the Running operation and finishes it once',
  { timeout: 240_000 },
  async () => {
    const cp = await startControlPlane();
    const repo = await TestRepo.create();
    const cwd = await mkdtemp(path.join(os.tmpdir(), 'impersync-run-'));
    const children: Array<ReturnType<typeof spawn>> = [];
    try {
      // Wave 0 is a LoadBalancer Service: Progressing until someone writes its address, which holds
      // the sync in its wait; wave 1 comes after.
      await repo.commit({
        'app/lb.yaml':
          'apiVersion: v1\nkind: Service\nmetadata:\n  name: lb\nspec:\n  type: LoadBalancer\n  ports:\n  - port: 80\n',
        'app/after.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n  annotations:\n    argocd.argoproj.io/sync-wave: "1"\ndata: {a: "1"}\n',
      });
      await grantControllerRights(cp);
      await deployer(cp, 'guestbook', 'generic-deployer');
      await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
      await applyRaw(
        cp.admin,
        project('my-project', {
          destinationServiceAccounts: [
            { server: IN_CLUSTER, namespace: 'guestbook', defaultServiceAccount: 'generic-deployer' },
          ],
        }),
      );
      const kubeconfig = await cp.kubeconfigFileFor('controller');
      const start = () => {
        const c = spawn(
          process.execPath,
          [
            '--disable-warning=ExperimentalWarning',
            main,
            'run',
            '--kubeconfig',
            kubeconfig,
            '--namespace=argocd',
            '--health-port=0',
          ],
          { cwd, env: { ...process.env, IMPERSYNC_CACHE_DIR: cwd }, stdio: 'ignore' },
        );
        children.push(c);
        return c;
      };
      const first = start();
      await applyRaw(cp.admin, {
        ...application('crash', repo.url, { project: 'my-project', automated: false }),
        operation: { sync: {}, initiatedBy: { username: 'alice' } },
      });
      const running = await waitForApp(
        cp,
        'crash',
        'Running, waiting on wave 0',
        (a) => operationPhase(a) === 'Running',
        60_000,
      );
      const startedAt = (running.status?.['operationState'] as { startedAt: string }).startedAt;
      const lbRef = { apiVersion: 'v1', kind: 'Service', name: 'lb', namespace: 'guestbook' };
      const end = Date.now() + 30_000;
      while (!(await getRaw(cp.admin, lbRef))) {
        if (Date.now() > end) assert.fail('wave 0 was never applied');
        await new Promise((r) => setTimeout(r, 100));
      }
      first.kill('SIGKILL');
      await new Promise((r) => first.on('exit', r));
      assert.equal(
        await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'after', namespace: 'guestbook' }),
        undefined,
        'wave 1 not reached before the crash',
      );
      start();
      // The "cloud" gives the load balancer an address: wave 0 becomes healthy.
      const lb = await getRaw(cp.admin, lbRef);
      await requestOk(cp.admin, {
        method: 'PUT',
        path: '/api/v1/namespaces/guestbook/services/lb/status',
        body: { ...lb, status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } },
      });
      const done = await waitForApp(
        cp,
        'crash',
        'Succeeded',
        (a) => operationPhase(a) === 'Succeeded' && a['operation'] === undefined,
        90_000,
      );
      assert.equal(
        (done.status?.['operationState'] as { startedAt: string }).startedAt,
        startedAt,
        'the same operation, continued',
      );
      assert.equal(((done.status?.['history'] ?? []) as unknown[]).length, 1, 'recorded once');
      assert.ok(
        await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'after', namespace: 'guestbook' }),
        'wave 1 applied after the restart',
      );
    } finally {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await repo.remove();
      await rm(cwd, { recursive: true, force: true });
      await cp.stop();
    }
  },
);
