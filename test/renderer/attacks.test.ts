// Issue 12's hostile repositories against the renderer process (the attack files are
// test/support/attacks.ts): each either renders within the renderer's limits or is refused, alone,
// with a source error naming the file, the document and the limit; and an Application's own
// limits (argocd-cm, sent with the request) are applied to its render, whether rendered or cached.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { DEFAULT_APPLICATION_LIMITS } from '../../src/api/limits.ts';
import { aliasBomb, manyKeysConfigMap } from '../support/attacks.ts';
import { failsWith, withTestRenderer } from '../support/renderer.ts';
import { startGitHttpServer, TestRepo, type GitHttpServer } from '../support/git.ts';

const TOKEN = 'attacks-token';
let work: string;
let git: GitHttpServer;

const manyObjects = (n: number) =>
  Array.from({ length: n }, (_, i) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${i}\n`).join('---\n');

before(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'impersync-attacks-'));
  const repo = await TestRepo.create(path.join(work, 'repos', 'app'));
  await repo.commit({
    'keys/cm.yaml': manyKeysConfigMap(),
    // Four times 'keys': some 600 ms of parsing, three times the time limit the test below sets.
    ...Object.fromEntries([1, 2, 3, 4].map((i) => [`slow/cm-${i}.yaml`, manyKeysConfigMap(`many-keys-${i}`)])),
    'bomb/cm.yaml': aliasBomb(),
    'small/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: small\n',
    'many/cms.yaml': manyObjects(30),
  });
  git = await startGitHttpServer(path.join(work, 'repos'));
});
after(async () => {
  await git?.close();
  await rm(work, { recursive: true, force: true });
});

/** A renderer of this file's repository, with `opts`, for the time of `fn`. */
function withRenderer(
  opts: { renderTimeoutMs?: number; cacheBytes?: number },
  fn: Parameters<typeof withTestRenderer>[2],
): Promise<void> {
  return withTestRenderer({ work, repoURL: git.url('app'), token: TOKEN }, opts, fn);
}

test(
  'a legal 1 MiB ConfigMap of 88,000 keys renders within a 30 s time limit (the quadratic key check took 85 s)',
  { timeout: 120_000 },
  async () => {
    await withRenderer({ renderTimeoutMs: 30_000 }, async (client, _r, input) => {
      const [cm] = (await client.render(input('keys'))).objects;
      assert.equal(Object.keys((cm?.object as unknown as { data: object }).data).length, 88_000);
    });
  },
);

test('490 KiB of aliases that expand to 480 MB are refused by their expansion, naming the file and the limit', async () => {
  await withRenderer({}, async (client, renderer, input) => {
    await assert.rejects(
      client.render(input('bomb')),
      failsWith(
        'TooLarge',
        /^bomb\/cm\.yaml: document 1 is larger than 16 MiB \(aliases counted at every use\), the renderer's limit for one document$/,
      ),
    );
    assert.equal(renderer.stats.running, 0);
    assert.equal((await client.render(input('small'))).objects.length, 1, 'the renderer goes on');
  });
});

test("an Application's limits of objects and bytes are applied to its render, rendered or from the cache", async () => {
  await withRenderer({ cacheBytes: 16 * 1024 * 1024 }, async (client, renderer, input) => {
    const limits = { ...DEFAULT_APPLICATION_LIMITS, maxObjects: 29 };
    await assert.rejects(
      client.render(input('many'), { limits }),
      failsWith(
        'TooLarge',
        /^'many' of 'http:\/\/127\.0\.0\.1:\d+\/app' renders 30 objects, more than this Application's limit of 29 \(argocd-cm impersync\.application\.maxObjects\)$/,
      ),
    );
    assert.equal((await client.render(input('many'))).objects.length, 30, 'without the limit');
    const cached = renderer.stats.cacheHits;
    await assert.rejects(
      client.render(input('many'), { limits: { ...DEFAULT_APPLICATION_LIMITS, maxRenderedBytes: 1024 } }),
      failsWith(
        'TooLarge',
        /^the rendered objects of 'many' of '.*' are \d+ KiB, more than this Application's limit of 1 KiB \(argocd-cm impersync\.application\.maxRenderedSize\)$/,
      ),
    );
    assert.equal(renderer.stats.cacheHits, cached + 1, 'the cached answer was held to the limit too');
  });
});

test(
  "an Application's time limit, lower than the renderer's, ends its render naming the argocd-cm key",
  { timeout: 120_000 },
  async () => {
    await withRenderer({}, async (client, _r, input) => {
      await assert.rejects(
        client.render(input('slow'), { limits: { ...DEFAULT_APPLICATION_LIMITS, renderTimeoutMs: 200 } }),
        failsWith(
          'Timeout',
          /^the render of 'slow' took longer than this Application's time limit of 0\.2s \(argocd-cm impersync\.application\.renderTimeout\)$/,
        ),
      );
    });
  },
);
