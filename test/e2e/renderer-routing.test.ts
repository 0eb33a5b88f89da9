// Two real renderer processes (`impersync renderer`) on loopback, and `impersync run` given both:
// Applications of several repositories all sync, each repository rendered by exactly one renderer
// (the one its URL ranks first: each renderer's git metrics name the repositories it fetched), and
// when one renderer is killed, its repositories move to the other and sync again there while the
// other's stay where they were.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { rankReplicas, routingKey } from '../../src/renderer/routing.ts';
import { applyRaw, getRaw, requestOk } from '../support/index.ts';
import { TestRepo } from '../support/git.ts';
import { application, NS, startDeployersPlane, waitForApp } from './controller-fixture.ts';

const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const TEAMS = ['team-0', 'team-1', 'team-2', 'team-3', 'team-4', 'team-5'];

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

interface Proc {
  child: ChildProcess;
  out: () => string;
}

function impersync(args: string[], cwd: string): Proc {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', main, ...args], {
    cwd,
    env: { ...process.env, IMPERSYNC_CACHE_DIR: cwd },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  return { child, out: () => out };
}

/** The repositories a renderer ran git for, ls-remote or fetch (its argocd_git_request_total series). */
async function fetchedBy(metricsPort: number): Promise<Set<string>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const repos = new Set<string>();
  for (const m of text.matchAll(/^argocd_git_request_total\{([^}]*)\} (\d+)/gm)) {
    const labels = m[1] as string;
    const repo = /repo="([^"]*)"/.exec(labels)?.[1];
    if (repo && Number(m[2]) > 0) repos.add(repo);
  }
  return repos;
}

const synced = (a: { status?: Record<string, unknown> }, revision: string) =>
  (a.status?.['sync'] as { status?: string; revision?: string } | undefined)?.status === 'Synced' &&
  (a.status?.['sync'] as { revision?: string }).revision === revision;

test(
  'renders are routed by repository over two renderers, and a killed one hands its repositories to the other',
  { timeout: 300_000 },
  async () => {
    const cp = await startDeployersPlane({
      settings: { 'application.sync.impersonation.enabled': 'true' },
      project: 'default',
      namespaces: TEAMS,
    });
    const work = await mkdtemp(path.join(os.tmpdir(), 'impersync-routing-'));
    const repos: TestRepo[] = [];
    const procs: Proc[] = [];
    try {
      const token = path.join(work, 'token');
      await writeFile(token, 'routing-test-token\n', { mode: 0o600 });
      const renderers = await Promise.all(
        ['a', 'b'].map(async (name) => ({ name, port: await freePort(), metrics: await freePort() })),
      );
      const urls = renderers.map((r) => `http://127.0.0.1:${r.port}`);
      for (const r of renderers) {
        const dir = await mkdtemp(path.join(work, `renderer-${r.name}-`));
        procs.push(
          impersync(
            [
              'renderer',
              `--listen=127.0.0.1:${r.port}`,
              `--metrics-listen=127.0.0.1:${r.metrics}`,
              `--token-file=${token}`,
              `--cache-dir=${dir}`,
              '--answer-cache=0',
            ],
            dir,
          ),
        );
      }
      // One Application per repository, each in its own namespace.
      // Three repositories that rank renderer a first and three that rank b first (the ports, and
      // so the rankings, differ from run to run): both renderers have work, and a's move.
      const firstOf = (repo: TestRepo) => rankReplicas(urls, routingKey(repo.url))[0];
      const sides = new Map<string | undefined, TestRepo[]>([
        [urls[0], []],
        [urls[1], []],
      ]);
      while ((sides.get(urls[0]) as TestRepo[]).length < 3 || (sides.get(urls[1]) as TestRepo[]).length < 3) {
        const repo = await TestRepo.create();
        const side = sides.get(firstOf(repo)) as TestRepo[];
        if (side.length < 3) side.push(repo);
        else await repo.remove();
      }
      repos.push(...(sides.get(urls[0]) as TestRepo[]), ...(sides.get(urls[1]) as TestRepo[]));
      const revisions = new Map<string, string>();
      for (const [i, team] of TEAMS.entries()) {
        const repo = repos[i] as TestRepo;
        revisions.set(
          team,
          await repo.commit({
            'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: routed\ndata:\n  team: ${team}\n`,
          }),
        );
        await applyRaw(
          cp.admin,
          application(team, repo.url, { destination: { server: 'https://kubernetes.default.svc', namespace: team } }),
        );
      }
      const health = await freePort();
      const controller = impersync(
        [
          'run',
          '--kubeconfig',
          await cp.kubeconfigFileFor('controller'),
          `--namespace=${NS}`,
          `--health-port=${health}`,
          '--status-processors=4',
          `--renderer=${urls[0]}`,
          `--renderer=${urls[1]}`,
          `--renderer-token-file=${token}`,
        ],
        work,
      );
      procs.push(controller);
      const log = () => procs.map((p) => p.out().slice(-1500)).join('\n---\n');

      for (const team of TEAMS)
        await waitForApp(cp, team, 'Synced', (a) => synced(a, revisions.get(team) as string), 120_000).catch(
          (err: Error) => {
            throw new Error(`${err.message}\n${log()}`);
          },
        );

      // Each repository's git ran on one renderer only: the one its URL ranks first.
      const [onA, onB] = await Promise.all(renderers.map((r) => fetchedBy(r.metrics)));
      for (const repo of repos) {
        const where = [onA?.has(repo.url) ? urls[0] : undefined, onB?.has(repo.url) ? urls[1] : undefined].filter(
          Boolean,
        );
        assert.deepEqual(where, [firstOf(repo)], `${repo.url} was fetched by ${where.join(' and ') || 'none'}`);
      }
      const metrics = await (await fetch(`http://127.0.0.1:${health}/metrics`)).text();
      for (const url of urls)
        assert.match(
          metrics,
          new RegExp(`impersync_renderer_requests_total\\{replica="${url}",request="render",outcome="ok"\\} [1-9]`),
        );
      assert.match(metrics, /impersync_renderer_replicas 2/);

      // Renderer a killed: its repositories (at a new commit) are rendered on b and sync again.
      (procs[0] as Proc).child.kill('SIGKILL');
      for (const [i, team] of TEAMS.entries()) {
        const repo = repos[i] as TestRepo;
        revisions.set(
          team,
          await repo.commit({
            'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: routed\ndata:\n  team: ${team}\n  after: kill\n`,
          }),
        );
        await requestOk(cp.admin, {
          method: 'PATCH',
          path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/${team}`,
          body: { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'normal' } } },
          contentType: 'application/merge-patch+json',
        });
      }
      for (const team of TEAMS)
        await waitForApp(cp, team, 'Synced again', (a) => synced(a, revisions.get(team) as string), 120_000).catch(
          (err: Error) => {
            throw new Error(`${err.message}\n${log()}`);
          },
        );
      for (const team of TEAMS) {
        const cm = await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'routed', namespace: team });
        assert.equal((cm?.['data'] as Record<string, string>)['after'], 'kill', `${team}'s new commit applied`);
      }
      // a's three repositories are now b's too (b had none of them before the kill).
      const afterKill = await fetchedBy(renderers[1]?.metrics as number);
      for (const repo of sides.get(urls[0]) as TestRepo[]) {
        assert.ok(!onB?.has(repo.url), `${repo.url} was not on b before`);
        assert.ok(afterKill.has(repo.url), `${repo.url} now fetched by b`);
      }
      const later = await (await fetch(`http://127.0.0.1:${health}/metrics`)).text();
      assert.match(
        later,
        new RegExp(
          `impersync_renderer_requests_total\\{replica="${urls[0]}",request="(render|resolve)",outcome="unreachable"\\} [1-9]`,
        ),
      );
    } finally {
      for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      for (const r of repos) await r.remove();
      await rm(work, { recursive: true, force: true });
      await cp.stop();
    }
  },
);
