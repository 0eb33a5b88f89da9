// The child renderer: tenant content rendered where the controller's credentials are not. Its
// process environment holds PATH, a private HOME and TMPDIR and a locale, nothing else, and so
// does every tool it runs for a tenant's repository (seen here in the environment of the git it
// runs against a server that never answers). The same render in the controller's own process hands
// the controller's variables to git, which the control case shows. (The pinned kustomize and helm
// give a repository no way to read a variable; files are kept out by the path and symlink checks of
// source/.) A killed child is replaced on the next render.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ChildRenderer } from '../../src/renderer/child.ts';
import { SourceRenderer, type RenderInput } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { toolsDir } from '../source/tools.ts';

/** What a controller's environment holds in a cluster and on a laptop. */
const SECRETS: Record<string, string> = {
  KUBECONFIG: '/home/admin/.kube/config',
  KUBERNETES_SERVICE_HOST: '10.96.0.1',
  KUBERNETES_SERVICE_PORT: '443',
  AWS_SECRET_ACCESS_KEY: 'aws-secret-value',
  IMPERSYNC_TEST_TOKEN: 'controller-token-value',
};

let work: string;
let repo: TestRepo;
let tools: string;
const saved: Record<string, string | undefined> = {};

before(async () => {
  tools = toolsDir();
  work = await mkdtemp(path.join(os.tmpdir(), 'impersync-child-'));
  repo = await TestRepo.create(path.join(work, 'repo'));
  await repo.commit({
    'leak/kustomization.yaml':
      'configMapGenerator:\n  - name: leak\n    envs: [leak.env]\ngeneratorOptions:\n  disableNameSuffixHash: true\n',
    'leak/leak.env': `${Object.keys(SECRETS).join('\n')}\nHOME\nPATH\n`,
    'plain/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n',
  });
  for (const [k, v] of Object.entries(SECRETS)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
});

after(async () => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await rm(work, { recursive: true, force: true });
});

/** A Git server that accepts requests and never answers: the tool asking it waits, inspectable. */
async function stallingServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/stall.git`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The environment of the first `git` process descending from `ancestor`, once there is one. */
async function gitEnvironmentUnder(ancestor: number): Promise<Record<string, string>> {
  for (let i = 0; i < 500; i++) {
    for (const pid of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(pid)) continue;
      const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
      if (!comm.startsWith('git') || !(await descendsFrom(Number(pid), ancestor))) continue;
      const raw = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
      return Object.fromEntries(
        raw
          .split('\0')
          .filter(Boolean)
          .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no git process under ${ancestor}`);
}

async function descendsFrom(pid: number, ancestor: number): Promise<boolean> {
  for (let p = pid, hops = 0; p > 1 && hops < 20; hops++) {
    if (p === ancestor) return true;
    const stat = await readFile(`/proc/${p}/stat`, 'utf8').catch(() => '');
    p = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }
  return false;
}

function leaked(env: Record<string, string>): string[] {
  return Object.entries(SECRETS)
    .filter(([k, v]) => env[k] === v)
    .map(([k]) => k);
}

test("a child renderer's environment holds only PATH, HOME, TMPDIR and LANG", async () => {
  const child = new ChildRenderer({
    cacheDir: path.join(work, 'env-cache'),
    toolsDir: tools,
    allowLocalRepositories: true,
  });
  try {
    const pid = await child.pid();
    const environ = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0').filter(Boolean);
    assert.deepEqual(environ.map((e) => e.slice(0, e.indexOf('='))).sort(), ['HOME', 'LANG', 'PATH', 'TMPDIR']);
    assert.ok(environ.includes(`HOME=${path.join(work, 'env-cache', 'home')}`), environ.join('\n'));
  } finally {
    await child.close();
  }
});

test("the tools a child renderer runs for a tenant's repository see none of the controller's variables", async () => {
  const stall = await stallingServer();
  const child = new ChildRenderer({ cacheDir: path.join(work, 'leak-cache'), toolsDir: tools });
  try {
    const pending = child.render({ source: { repoURL: stall.url, path: '.' }, appName: 'leak' }).catch(() => undefined);
    const env = await gitEnvironmentUnder((await child.pid()) as number);
    assert.deepEqual(leaked(env), []);
    assert.equal(env['HOME'], path.join(work, 'leak-cache', 'home'), 'what it has is its own');
    await stall.close();
    await pending;
  } finally {
    await child.close();
    await stall.close();
  }
});

test("control: rendering in the controller's own process would have handed them over", async () => {
  const stall = await stallingServer();
  const inProcess = new SourceRenderer({ cacheDir: path.join(work, 'control-cache'), toolsDir: tools });
  try {
    const pending = inProcess
      .render({ source: { repoURL: stall.url, path: '.' }, appName: 'leak' })
      .catch(() => undefined);
    const env = await gitEnvironmentUnder(process.pid);
    assert.deepEqual(leaked(env).sort(), Object.keys(SECRETS).sort());
    await stall.close();
    await pending;
  } finally {
    await stall.close();
  }
});

test('a child renderer that dies is replaced on the next render; closing it ends the process', async () => {
  const child = new ChildRenderer({
    cacheDir: path.join(work, 'restart-cache'),
    toolsDir: tools,
    allowLocalRepositories: true,
  });
  const input: RenderInput = { source: { repoURL: repo.fileURL, path: 'plain' }, appName: 'plain' };
  try {
    const first = await child.pid();
    assert.equal((await child.render(input)).objects.length, 1);
    process.kill(first as number, 'SIGKILL');
    await until(() => !alive(first as number));
    assert.equal((await child.render(input)).objects.length, 1, 'rendered by a new child');
    const second = await child.pid();
    assert.notEqual(second, first);
    await child.close();
    assert.equal(alive(second as number), false, 'close() ends the child');
  } finally {
    await child.close();
  }
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), 'condition not reached');
}
