// The renderer's limits on what a repository can make its tools do: an address-space limit and a
// limit on the size of one written file for every git, helm and kustomize process (through
// prlimit), and a checkout limit (files, bytes) checked from the commit's tree before anything is
// written. Each failure is a SourceError that names the limit.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError, SourceRenderer, type RenderLimits } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { toolsDir } from './tools.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

describe('limits', () => {
  let repo: TestRepo;
  let top: string;
  let n = 0;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-limits-'));
    repo = await TestRepo.create();
    await repo.commit({
      'ok/Chart.yaml': 'apiVersion: v2\nname: ok\nversion: 0.1.0\n',
      'ok/templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n',
      // A template that doubles a string 25 times: half a GiB, more than helm can hold in 1 GiB of address space.
      'hungry/Chart.yaml': 'apiVersion: v2\nname: hungry\nversion: 0.1.0\n',
      'hungry/templates/cm.yaml':
        '{{- $s := "xxxxxxxxxxxxxxxx" }}{{- range until 25 }}{{ $s = print $s $s }}{{ end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: n{{ len $s }}\n',
      'files/a.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n',
    });
  });
  after(async () => {
    await repo?.remove();
    if (top) await rm(top, { recursive: true, force: true });
  });

  const renderer = (limits: Partial<RenderLimits>, extra: { prlimit?: string } = {}) =>
    new SourceRenderer({
      cacheDir: path.join(top, `cache-${++n}`),
      toolsDir: toolsDir(),
      allowLocalRepositories: true,
      limits,
      ...(extra.prlimit ? { toolPaths: { prlimit: extra.prlimit } } : {}),
    });
  const render = (r: SourceRenderer, where: string, url = repo.dir) =>
    r.render({ source: { repoURL: url, path: where } as ApplicationSource, appName: 'app' });
  const tooLarge = (message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof SourceError, String(err));
    assert.equal(err.reason, 'TooLarge', err.message);
    assert.match(err.message, message);
    return true;
  };

  test('git, helm and kustomize work under the default limits', async () => {
    const r = renderer({});
    assert.equal((await render(r, 'ok')).objects[0]?.object.metadata.name, 'ok');
    const k = await TestRepo.create();
    try {
      await k.commit({
        'k/kustomization.yaml': 'resources: [cm.yaml]\nnamePrefix: p-\n',
        'k/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k\n',
      });
      assert.equal((await render(r, 'k', k.dir)).objects[0]?.object.metadata.name, 'p-k');
    } finally {
      await k.remove();
    }
  });

  test("a template that needs more memory than the limit fails naming the renderer's memory limit", async () => {
    const r = renderer({ toolMemoryBytes: GiB });
    assert.equal((await render(r, 'ok')).objects.length, 1, 'a small chart still renders under 1 GiB');
    await assert.rejects(
      render(r, 'hungry'),
      tooLarge(/^helm template of 'hungry' exceeded the renderer's memory limit of 1 GiB$/),
    );
  });

  test("a tool that writes a file over the limit fails naming the renderer's write limit", async () => {
    const big = await TestRepo.create();
    try {
      // 2 MiB of zeros is 2 KiB packed: the fetch writes little, the checkout writes one 2 MiB file.
      const sha = await big.commit({ 'zeros.bin': '\0'.repeat(2 * MiB), 'a/cm.yaml': 'kind: x\n' });
      await assert.rejects(
        render(renderer({ writeMaxBytes: MiB }), 'a', big.dir),
        tooLarge(
          new RegExp(`^checkout of ${sha} from '.*' exceeded the renderer's limit of 1 MiB for one file it writes$`),
        ),
      );
      // Random bytes do not pack: the fetch itself writes an object over 64 KiB.
      const rnd = await TestRepo.create();
      try {
        await rnd.commit({ 'random.bin': (await import('node:crypto')).randomBytes(512 * 1024).toString('latin1') });
        await assert.rejects(
          render(renderer({ writeMaxBytes: 64 * 1024 }), '.', rnd.dir),
          tooLarge(/^git fetch of '.*' exceeded the renderer's limit of 64 KiB for one file it writes$/),
        );
      } finally {
        await rnd.remove();
      }
    } finally {
      await big.remove();
    }
  });

  test('a commit over the checkout limits is refused before anything is written', async () => {
    const sha = repo.head();
    for (const [limits, message] of [
      [{ checkoutMaxFiles: 4 }, `^commit ${sha} of '.*' has 5 files, over the renderer's checkout limit of 4 files$`],
      [
        { checkoutMaxBytes: 100 },
        `^commit ${sha} of '.*' has \\d+ bytes of files, over the renderer's checkout limit of 100 bytes$`,
      ],
    ] as const) {
      const r = renderer(limits);
      await assert.rejects(render(r, 'files'), tooLarge(new RegExp(message)));
      const trees = path.join(top, `cache-${n}`, 'git', 'trees');
      const written = existsSync(trees) ? await readdir(trees, { recursive: true }) : [];
      assert.deepEqual(
        written.filter((f) => f.includes(sha)),
        [],
        'no folder of the commit was made',
      );
    }
    assert.equal((await render(renderer({ checkoutMaxFiles: 5 }), 'files')).objects.length, 1, 'at the limit is fine');
  });

  test('without prlimit, rendering fails saying how to get it', async () => {
    await assert.rejects(render(renderer({}, { prlimit: '/nonexistent/prlimit' }), 'ok'), (err: unknown) => {
      assert.ok(err instanceof SourceError, String(err));
      assert.equal(err.reason, 'ToolMissing');
      assert.match(err.message, /^prlimit not found at '\/nonexistent\/prlimit' .*apt-get install util-linux/);
      return true;
    });
  });
});
