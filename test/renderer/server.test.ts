// The renderer's HTTP server and the controller's client to it, on real sockets and a real Git
// repository served over smart HTTP: the token is required before anything is read, requests are
// parsed strictly, source errors keep their reason, answers of unchanged inputs come from the cache,
// and a busy renderer says so instead of piling up work.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { createLogger } from '../../src/observability/logger.ts';
import { RendererClient } from '../../src/renderer/client.ts';
import { startRenderer, type RunningRenderer } from '../../src/renderer/run.ts';
import { type RenderInput, type SourceRenderer } from '../../src/source/index.ts';
import { rendererHandler, startRendererServer } from '../../src/renderer/server.ts';
import { startGitHttpServer, TestRepo, type GitHttpServer } from '../support/git.ts';
import { failsWith } from '../support/source-error.ts';

const cm = (name: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;
const silent = createLogger({ level: 'silent' });
const TOKEN = 'test-token-0123456789';

describe('renderer server', () => {
  let work: string;
  let repo: TestRepo;
  let git: GitHttpServer;
  let renderer: RunningRenderer;
  let client: RendererClient;
  let input: RenderInput;

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'impersync-renderer-test-'));
    repo = await TestRepo.create(path.join(work, 'repos', 'app'));
    await repo.commit({ 'guestbook/a.yaml': cm('a'), 'guestbook/b.yaml': cm('b') });
    git = await startGitHttpServer(path.join(work, 'repos'));
    renderer = await startRenderer({
      listen: `unix:${path.join(work, 'r.sock')}`,
      cacheDir: path.join(work, 'cache'),
      token: { value: TOKEN },
      logger: silent,
    });
    client = new RendererClient({ url: `unix:${renderer.server.address}`, token: () => TOKEN });
    input = { source: { repoURL: git.url('app'), path: 'guestbook' }, appName: 'guestbook' };
  });
  after(async () => {
    await client?.close();
    await renderer?.stop();
    await git?.close();
    await rm(work, { recursive: true, force: true });
  });

  const post = async (body: unknown, token: string | null = TOKEN, raw?: string) => {
    const res = await request('http://renderer/v1/render', {
      method: 'POST',
      dispatcher: new (await import('undici')).Agent({ connect: { socketPath: renderer.server.address } }),
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: raw ?? JSON.stringify(body),
    });
    return { status: res.statusCode, text: await res.body.text() };
  };

  test('renders a source over the socket: the commit, the source type and each object with its file', async () => {
    const r = await client.render(input);
    assert.equal(r.revision, repo.head());
    assert.equal(r.sourceType, 'Directory');
    assert.deepEqual(
      r.objects.map((o) => [o.object.metadata.name, o.location.file]),
      [
        ['a', 'guestbook/a.yaml'],
        ['b', 'guestbook/b.yaml'],
      ],
    );
    assert.equal(await client.resolveRevision({ ...input, revision: 'main' }), repo.head());
  });

  test('a request without the token, or with another, is refused before it is read', async () => {
    const before = renderer.stats.renders + renderer.stats.cacheHits;
    for (const token of [null, 'wrong', `${TOKEN}x`]) {
      const res = await post({ input }, token);
      assert.equal(res.status, 401);
      assert.match(res.text, /wrong or missing token/);
    }
    assert.equal(renderer.stats.renders + renderer.stats.cacheHits, before, 'nothing was rendered');
    const wrong = new RendererClient({ url: `unix:${renderer.server.address}`, token: () => 'wrong' });
    await assert.rejects(wrong.render(input), failsWith('RendererUnavailable', /refused the request \(401\)/));
    await wrong.close();
  });

  test('the probes answer without a token; without a token of its own the renderer is not ready', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'impersync-renderer-notoken-'));
    const unready = await startRenderer({
      listen: '127.0.0.1:0',
      cacheDir: dir,
      token: { file: path.join(dir, 'missing-token') },
      logger: silent,
    });
    try {
      const base = `http://${unready.server.address}`;
      assert.equal((await request(`${base}/healthz`)).statusCode, 200);
      assert.equal((await request(`${base}/readyz`)).statusCode, 503);
      const c = new RendererClient({ url: base, token: () => TOKEN });
      await assert.rejects(c.render(input), failsWith('RendererUnavailable', /has no token yet/));
      await c.close();
    } finally {
      await unready.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a request is parsed strictly: unknown fields, wrong types and oversized bodies are refused', async () => {
    const extra = await post({ input: { ...input, kubeconfig: '/etc/kubernetes/admin.conf' } });
    assert.equal(extra.status, 400);
    assert.match(extra.text, /input: Unrecognized key/);
    const typed = await post({ input: { ...input, appName: 7 } });
    assert.equal(typed.status, 400);
    assert.match(typed.text, /input\.appName/);
    const notJSON = await post(undefined, TOKEN, '{');
    assert.equal(notJSON.status, 400);
    const huge = await post(undefined, TOKEN, JSON.stringify({ input, pad: 'x'.repeat(5 * 1024 * 1024) }));
    assert.equal(huge.status, 413);
  });

  test("a source error keeps its reason and message, the repository's paths only", async () => {
    await assert.rejects(
      client.render({ ...input, source: { ...input.source, path: 'nope' } }),
      failsWith('InvalidSource', /^app path 'nope' does not exist$/),
    );
    await assert.rejects(
      client.render({ ...input, revision: 'v9' }),
      failsWith('RevisionNotFound', /^revision 'v9' not found in 'http:\/\/127\.0\.0\.1:\d+\/app'$/),
    );
  });

  test("answers are cached per project: a remote base one project's sourceRepos allowed is not handed to another", async () => {
    const base = await TestRepo.create(path.join(work, 'repos', 'base'));
    await base.commit({ 'app/kustomization.yaml': 'resources: [cm.yaml]\n', 'app/cm.yaml': cm('from-base') });
    await repo.commit({ 'remote/kustomization.yaml': `resources: ['${git.url('base')}//app?ref=main']\n` });
    const remote: RenderInput = { source: { repoURL: git.url('app'), path: 'remote' }, appName: 'remote' };
    const allowed = await client.render({ ...remote, sourceRepos: [git.url('base')] });
    assert.deepEqual(
      allowed.objects.map((o) => o.object.metadata.name),
      ['from-base'],
    );
    for (const sourceRepos of [[git.url('app')], undefined]) {
      await assert.rejects(
        client.render({ ...remote, ...(sourceRepos ? { sourceRepos } : {}) }),
        failsWith('InvalidSource', /^remote\/kustomization\.yaml: resources '.*\/base\/\/app\?ref=main' is refused/),
      );
    }
  });

  test('an unchanged input at an unchanged commit is answered from the cache; noCache and a new commit render', async () => {
    const other = { ...input, appName: 'cached' };
    const start = { ...renderer.stats };
    await client.render(other);
    await client.render(other);
    assert.equal(renderer.stats.renders - start.renders, 1);
    assert.equal(renderer.stats.cacheHits - start.cacheHits, 1);
    await client.render(other, { noCache: true });
    assert.equal(renderer.stats.renders - start.renders, 2, 'a hard refresh renders again');
    await repo.commit({ 'guestbook/c.yaml': cm('c') });
    const r = await client.render(other);
    assert.equal(renderer.stats.renders - start.renders, 3, 'a new commit renders again');
    assert.deepEqual(
      r.objects.map((o) => o.object.metadata.name),
      ['a', 'b', 'c'],
    );
  });

  test("a commit that leaves a plain folder as it was reuses the folder's answer under the new commit; a change in it renders again", async () => {
    await repo.commit({ 'mono/a/cm.yaml': cm('a1'), 'mono/b/cm.yaml': cm('b1') });
    const a = { ...input, appName: 'mono-a', source: { ...input.source, path: 'mono/a' } };
    const start = { ...renderer.stats };
    await client.render(a);
    const elsewhere = await repo.commit({ 'mono/b/cm.yaml': cm('b2') });
    const moved = await client.render(a);
    assert.equal(renderer.stats.renders - start.renders, 1, 'the commit changed nothing in mono/a: not rendered again');
    assert.equal(moved.revision, elsewhere, 'the answer is the new commit');
    assert.deepEqual(
      moved.objects.map((o) => [o.object.metadata.name, o.location.file]),
      [['a1', 'mono/a/cm.yaml']],
    );
    await client.render(a, { noCache: true });
    assert.equal(renderer.stats.renders - start.renders, 2, 'a hard refresh renders again');
    await repo.commit({ 'mono/a/cm.yaml': cm('a2') });
    const changed = await client.render(a);
    assert.equal(renderer.stats.renders - start.renders, 3, 'a change in mono/a renders again');
    assert.deepEqual(
      changed.objects.map((o) => o.object.metadata.name),
      ['a2'],
    );
  });

  test('a folder whose symlink leads to a file elsewhere renders again when that file changes, though the folder is as it was', async () => {
    // The attack: a tenant's folder of links to another folder's files, whose own tree never
    // changes, would keep the first answer for ever if folders were cached by their tree alone.
    await repo.commit({ 'target/cm.yaml': cm('t1') });
    await mkdir(path.join(repo.dir, 'links'), { recursive: true });
    await symlink('../target/cm.yaml', path.join(repo.dir, 'links/cm.yaml'));
    await repo.commit({});
    const links = { ...input, appName: 'links', source: { ...input.source, path: 'links' } };
    assert.deepEqual(
      (await client.render(links)).objects.map((o) => o.object.metadata.name),
      ['t1'],
    );
    await repo.commit({ 'target/cm.yaml': cm('t2') });
    assert.deepEqual(
      (await client.render(links)).objects.map((o) => o.object.metadata.name),
      ['t2'],
      'the file the link leads to changed: rendered again',
    );
  });

  test("a ref source's branch that moves is a new render, though the source's own commit stays", async () => {
    const values = await TestRepo.create(path.join(work, 'repos', 'values'));
    await values.commit({ 'values.yaml': 'a: 1\n' });
    const withRef = { ...input, appName: 'refs', refSources: { $values: { repoURL: git.url('values') } } };
    const start = { ...renderer.stats };
    await client.render(withRef);
    await client.render(withRef);
    assert.equal(renderer.stats.renders - start.renders, 1);
    assert.equal(renderer.stats.cacheHits - start.cacheHits, 1);
    await values.commit({ 'values.yaml': 'a: 2\n' });
    await client.render(withRef);
    assert.equal(renderer.stats.renders - start.renders, 2, 'the ref source moved: rendered again');
    assert.equal(renderer.stats.cacheHits - start.cacheHits, 1);
  });
});

test('a busy renderer queues what it can and refuses the rest with 503, naming the queue', async () => {
  // A renderer whose renders wait until released: the fault a real render cannot produce on cue.
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const fake = {
    resolveRevision: async () => {
      await gate;
      return '0'.repeat(40);
    },
    render: async () => ({ revision: '0'.repeat(40), sourceType: 'Directory', objects: [] }),
    folderKey: async () => undefined,
  } as unknown as SourceRenderer;
  const handler = rendererHandler({
    renderer: fake,
    token: () => TOKEN,
    logger: silent,
    maxConcurrent: 1,
    maxQueued: 1,
  });
  const server = await startRendererServer('127.0.0.1:0', handler);
  const client = new RendererClient({ url: `http://${server.address}`, token: () => TOKEN });
  const input = (n: number): RenderInput => ({ source: { repoURL: 'https://git.example/r.git' }, appName: `a${n}` });
  try {
    const first = client.render(input(1));
    const second = client.render(input(2));
    await until(() => handler.stats.running === 1 && handler.stats.queued === 1);
    await assert.rejects(client.render(input(3)), failsWith('RendererUnavailable', /is busy \(1 requests waiting\)/));
    release();
    assert.equal((await first).revision, '0'.repeat(40));
    assert.equal((await second).revision, '0'.repeat(40));
    assert.equal(handler.stats.running, 0);
  } finally {
    await client.close();
    await server.close();
  }
});

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), 'condition not reached');
}
