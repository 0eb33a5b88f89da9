// A render's own limits in the renderer process: past its memory or its time it fails with a
// source error naming the limit, and the renderer goes on serving other renders, during and after.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { request } from 'undici';
import { RendererClient } from '../../src/renderer/client.ts';
import { failsWith, withTestRenderer } from '../support/renderer.ts';
import { startGitHttpServer, TestRepo, type GitHttpServer } from '../support/git.ts';

const TOKEN = 'limits-token';
let work: string;
let git: GitHttpServer;

/** One ConfigMap per document, `count` of them: a legal file that costs parsing time and memory. */
function manyDocuments(count: number): string {
  const doc = (i: number) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${i}\ndata:\n  k: v${i}\n`;
  return Array.from({ length: count }, (_, i) => doc(i)).join('---\n');
}

/** One ConfigMap of one `size`-byte value used `uses` times: small in Git, `size * uses` as JSON. */
function aliasBomb(size: number, uses: number): string {
  const lines = [`  v0: &v "${'x'.repeat(size)}"`];
  for (let i = 1; i < uses; i++) lines.push(`  v${i}: *v`);
  return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: aliases\ndata:\n${lines.join('\n')}\n`;
}

before(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'impersync-limits-'));
  const repo = await TestRepo.create(path.join(work, 'repos', 'app'));
  await repo.commit({
    'small/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: small\n',
    'heavy/cms.yaml': manyDocuments(120_000),
    'aliases/cm.yaml': aliasBomb(1024 * 1024, 100),
    'deep/cm.json': `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":{"a":${'['.repeat(5000)}${']'.repeat(5000)}}}`,
  });
  git = await startGitHttpServer(path.join(work, 'repos'));
});
after(async () => {
  await git?.close();
  await rm(work, { recursive: true, force: true });
});

/** A renderer of this file's repository, with `opts`, for the time of `fn`. */
function withRenderer(
  limits: {
    renderMemoryBytes?: number;
    renderTimeoutMs?: number;
    limits?: { maxDocumentBytes?: number; maxDocumentNodes?: number };
  },
  fn: Parameters<typeof withTestRenderer>[2],
): Promise<void> {
  return withTestRenderer({ work, repoURL: git.url('app'), token: TOKEN }, limits, fn);
}

test('a render that needs more memory than its limit fails naming the limit; other renders go on', async () => {
  await withRenderer({ renderMemoryBytes: 64 * 1024 * 1024 }, async (client, renderer, input) => {
    const heavy = client.render(input('heavy'));
    // While the heavy one parses in its thread, the renderer answers and renders others.
    const small = await client.render(input('small'));
    assert.deepEqual(
      small.objects.map((o) => o.object.metadata.name),
      ['small'],
    );
    assert.equal((await request(`http://${renderer.server.address}/healthz`)).statusCode, 200);
    await assert.rejects(
      heavy,
      failsWith('TooLarge', /^the render of 'heavy' needed more than the renderer's memory limit of 64 MiB$/),
    );
    assert.equal(
      (await client.render(input('small'))).objects.length,
      1,
      'a new worker took the place of the one that ran out',
    );
  });
});

test('a render that takes longer than its time limit fails naming the limit; the renderer goes on', async () => {
  await withRenderer({ renderTimeoutMs: 1000 }, async (client, _renderer, input) => {
    await assert.rejects(
      client.render(input('heavy')),
      failsWith('Timeout', /^the render of 'heavy' took longer than the renderer's time limit of 1s$/),
    );
    assert.equal((await client.render(input('small'))).objects.length, 1);
  });
});

test('the controller reads no answer larger than its limit', async () => {
  await withRenderer({}, async (_client, renderer, input) => {
    const small = new RendererClient({
      url: `http://${renderer.server.address}`,
      token: () => TOKEN,
      maxAnswerBytes: 100,
    });
    try {
      await assert.rejects(
        small.render(input('small')),
        failsWith(
          'TooLarge',
          /^the rendered objects of 'small' of 'http:\/\/127\.0\.0\.1:\d+\/app' are more than 100 bytes$/,
        ),
      );
    } finally {
      await small.close();
    }
  });
});

test('rendered objects are measured as they are sent: a YAML alias counts every time, over the limit is TooLarge', async () => {
  // The one document is 100 MiB with its aliases expanded: the per-document limit (expand.ts,
  // 16 MiB) would refuse it first, so it is raised here to reach the check of the whole answer.
  await withRenderer({ limits: { maxDocumentBytes: 256 * 1024 * 1024 } }, async (client, _renderer, input) => {
    // 1 MiB in Git, 100 MiB as an answer: refused in the render's thread, before the controller reads it.
    await assert.rejects(
      client.render(input('aliases')),
      failsWith(
        'TooLarge',
        /^the rendered objects of 'aliases' are more than the renderer's limit of 64 MiB \(a YAML alias counts each time it is used\)$/,
      ),
    );
    assert.equal((await client.render(input('small'))).objects.length, 1);
  });
});

test('an object nested too deeply to be sent fails at once, not at the time limit', async () => {
  await withRenderer({ renderTimeoutMs: 20_000 }, async (client, _renderer, input) => {
    // InvalidManifest, not the time limit's Timeout: refused as it was read.
    await assert.rejects(
      client.render(input('deep')),
      failsWith('InvalidManifest', /^deep\/cm\.json: document 1 is nested more than 512 levels deep$/),
    );
  });
});
