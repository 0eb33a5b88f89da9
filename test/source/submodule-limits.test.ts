// Git submodules against the renderer's checkout limits and its symlink rule, rendered with the
// real git from repositories on the loopback smart-HTTP server (submodule URLs must be network
// ones): submodules count with their superproject, so a superproject whose submodules are each
// within the limits but together over them is refused naming the limit; and a submodule's symlinks
// are judged as the top-level repository's are, alone when its checkout is written and again in the
// assembled whole, where links that are harmless in each repository alone can combine to lead out.
import assert from 'node:assert/strict';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { NeedsRepositories } from '../../src/source/errors.ts';
import { SourceError, SourceRenderer, type RenderLimits } from '../../src/source/index.ts';
import { TestRepo, git } from '../support/git.ts';
import { toolsDir } from './tools.ts';

const KiB = 1024;
const cm = (name: string, pad = 0) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  pad: "${'x'.repeat(pad)}"\n`;

describe('submodules, the checkout limits and symlinks', () => {
  let top: string;
  const repos: TestRepo[] = [];
  let n = 0;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-submodule-limits-'));
  });
  after(async () => {
    for (const r of repos) await r.remove();
    if (top) await rm(top, { recursive: true, force: true });
  });

  async function repo(files: Record<string, string>, links: Record<string, string> = {}): Promise<TestRepo> {
    const r = await TestRepo.create();
    repos.push(r);
    await r.commit(files);
    if (Object.keys(links).length > 0) {
      for (const [at, target] of Object.entries(links)) await symlink(target, path.join(r.dir, at));
      git(r.dir, 'add', '--all');
      git(r.dir, 'commit', '--quiet', '-m', 'links');
    }
    return r;
  }

  /** A superproject with `app/own.yaml` and a gitlink (plus .gitmodules entry) for each submodule. */
  async function superproject(subs: Array<{ at: string; repo: TestRepo }>, links: Record<string, string> = {}) {
    const gitmodules = subs.map((s) => `[submodule "${s.at}"]\n\tpath = ${s.at}\n\turl = ${s.repo.url}\n`).join('');
    const r = await repo({ 'app/own.yaml': cm('own'), '.gitmodules': gitmodules }, links);
    for (const s of subs) git(r.dir, 'update-index', '--add', '--cacheinfo', `160000,${s.repo.head()},${s.at}`);
    git(r.dir, 'commit', '--quiet', '-m', 'submodules');
    return r;
  }

  const renderer = (limits: Partial<RenderLimits> = {}) =>
    new SourceRenderer({ cacheDir: path.join(top, `cache-${++n}`), toolsDir: toolsDir(), limits });

  /** Renders `where` of `r`, answering the renderer's question for the submodules' repositories as the controller would. */
  async function render(r: SourceRenderer, superRepo: TestRepo, where = 'app') {
    const input = {
      source: { repoURL: superRepo.url, path: where, directory: { recurse: true } } as ApplicationSource,
      appName: 'app',
      sourceRepos: ['*'],
    };
    let given: Array<{ url: string }> = [];
    for (let round = 0; round < 10; round++) {
      try {
        return await r.render({ ...input, submoduleRepositories: given });
      } catch (err) {
        if (!(err instanceof NeedsRepositories)) throw err;
        const urls = err.needs.map((x) => x.url).filter((u): u is string => u !== undefined);
        assert.ok(urls.length > 0 && urls.every((u) => !given.some((g) => g.url === u)), 'new URLs each round');
        given = [...given, ...urls.map((url) => ({ url }))];
      }
    }
    throw new Error('the renderer kept asking for repositories');
  }

  const refused = (reason: string, message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof SourceError, String(err));
    assert.equal(err.reason, reason, err.message);
    assert.match(err.message, message);
    assert.doesNotMatch(err.message, new RegExp(top), 'no folder of the renderer in the message');
    return true;
  };

  test('submodules within the limits render with the superproject', async () => {
    const a = await repo({ 'a1.yaml': cm('a1'), 'a2.yaml': cm('a2') });
    const sup = await superproject([{ at: 'app/a', repo: a }]);
    const names = (await render(renderer({ checkoutMaxFiles: 10 }), sup)).objects.map((o) => o.object.metadata.name);
    assert.deepEqual(names.sort(), ['a1', 'a2', 'own']);
  });

  test('submodules each within the file limit but over it together are refused naming the file limit', async () => {
    const files = (p: string) => Object.fromEntries([1, 2, 3, 4].map((i) => [`${p}${i}.yaml`, cm(`${p}${i}`)]));
    const a = await repo(files('a'));
    const b = await repo(files('b'));
    const sup = await superproject([
      { at: 'app/a', repo: a },
      { at: 'app/b', repo: b },
    ]);
    // The superproject has 2 files, each submodule 4: every repository alone is within 8, the whole is 10.
    const r = renderer({ checkoutMaxFiles: 8 });
    await assert.rejects(
      render(r, sup),
      refused(
        'TooLarge',
        new RegExp(
          `^commit ${sup.head()} of '[^']+' with its submodules has 10 files, over the renderer's checkout limit of 8 files \\(at submodule 'app/b' `,
        ),
      ),
    );
    // Each repository alone renders under the same limit.
    assert.equal((await render(r, b, '.')).objects.length, 4);
  });

  test('submodules each within the byte limit but over it together are refused naming the byte limit', async () => {
    const a = await repo({ 'a.yaml': cm('a', 40 * KiB) });
    const b = await repo({ 'b.yaml': cm('b', 40 * KiB) });
    const sup = await superproject([
      { at: 'app/a', repo: a },
      { at: 'app/b', repo: b },
    ]);
    const r = renderer({ checkoutMaxBytes: 64 * KiB });
    await assert.rejects(
      render(r, sup),
      refused(
        'TooLarge',
        new RegExp(
          `^commit ${sup.head()} of '[^']+' with its submodules has 80(\\.\\d)? KiB of files, over the renderer's checkout limit of 64 KiB \\(at submodule 'app/b' `,
        ),
      ),
    );
    assert.equal((await render(r, a, '.')).objects.length, 1, 'a submodule alone is within the limit');
  });

  test("a submodule's symlink out of the checkout is refused as the top-level repository's is", async () => {
    for (const target of ['/etc/passwd', '../../../../../../../../etc/passwd']) {
      const evil = await repo({ 'ok.yaml': cm('ok') }, { 'leak.yaml': target });
      // The same link in the top-level repository, and the message it gets.
      await assert.rejects(
        render(renderer(), evil, '.'),
        refused('InvalidSource', /^repository contains out-of-bounds symlinks\. file: leak\.yaml$/),
      );
      const sup = await superproject([{ at: 'app/sub', repo: evil }]);
      await assert.rejects(
        render(renderer(), sup),
        refused('InvalidSource', new RegExp('^repository contains out-of-bounds symlinks\\. file: leak\\.yaml$')),
      );
    }
  });

  test("a submodule's symlink out of itself into the superproject is refused (each checkout is judged alone)", async () => {
    // Argo CD checks the whole work tree, submodules included, and would let this link through; the
    // renderer checks each repository's checkout alone, as it writes it, so it is refused here.
    const evil = await repo({ 'ok.yaml': cm('ok') }, { 'peek.yaml': '../own.yaml' });
    const sup = await superproject([{ at: 'app/sub', repo: evil }]);
    await assert.rejects(
      render(renderer(), sup),
      refused('InvalidSource', new RegExp('^repository contains out-of-bounds symlinks\\. file: peek\\.yaml$')),
    );
  });

  test('links harmless in each repository alone that lead out of the assembled whole are refused', async () => {
    // The nested submodule's `up -> .` is inside it. In the middle submodule, `n` (its gitlink) is
    // empty, so `l -> n/up/up/../../..` resolves lexically to the submodule itself. Assembled,
    // `n/up/up` is `n`, and three `..` from there leave the superproject.
    const nested = await repo({ 'nested.yaml': cm('nested') }, { up: '.' });
    const middle = await superproject([{ at: 'n', repo: nested }], { l: 'n/up/up/../../..' });
    const sup = await superproject([{ at: 'sub', repo: middle }]);
    // Each alone is within its own checkout.
    assert.equal((await render(renderer(), nested, '.')).objects.length, 1);
    await assert.rejects(
      render(renderer(), sup, 'app'),
      refused('InvalidSource', new RegExp('^repository contains out-of-bounds symlinks\\. file: sub/l$')),
    );
  });
});
