// The Git cache against real repositories: a local path, file:// and http:// (git http-backend).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import net, { type AddressInfo, type Socket } from 'node:net';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GitRepoCache } from '../../src/source/git.ts';
import { SourceRenderer } from '../../src/source/index.ts';
import { SourceError } from '../../src/source/errors.ts';
import { TestRepo, git, startGitHttpServer, type GitHttpServer } from '../support/git.ts';
import { failsWith } from '../support/source-error.ts';
import { checkoutBombRepo } from '../support/attacks.ts';

const temps: string[] = [];
async function tempDir(prefix: string): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), prefix));
  temps.push(d);
  return d;
}
after(async () => {
  for (const d of temps) await rm(d, { recursive: true, force: true });
});

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(cond(), 'condition not reached within 5 s');
}

describe('GitRepoCache', () => {
  let repo: TestRepo;
  let first: string;
  let second: string;
  let onBranch: string;

  before(async () => {
    const root = await tempDir('impersync-git-');
    repo = await TestRepo.create(path.join(root, 'apps'));
    first = await repo.commit({ 'guestbook/cm.yaml': 'kind: ConfigMap\n' }, 'first');
    repo.tag('v1');
    repo.tag('v1-annotated', { message: 'release 1' });
    second = await repo.commit({ 'guestbook/cm.yaml': 'kind: ConfigMap # two\n' }, 'second');
    repo.branch('feature');
    onBranch = await repo.commit({ 'guestbook/extra.yaml': 'x: 1\n' }, 'on feature');
    repo.switch('main');
  });

  test('resolves HEAD (also when empty), a branch, a tag, an annotated tag and a SHA', async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    assert.equal(await cache.resolveRevision(repo.dir, 'HEAD'), second);
    assert.equal(await cache.resolveRevision(repo.dir, ''), second);
    assert.equal(await cache.resolveRevision(repo.dir), second);
    assert.equal(await cache.resolveRevision(repo.dir, 'main'), second);
    assert.equal(await cache.resolveRevision(repo.dir, 'feature'), onBranch);
    assert.equal(await cache.resolveRevision(repo.dir, 'refs/heads/feature'), onBranch);
    assert.equal(await cache.resolveRevision(repo.dir, 'v1'), first);
    assert.equal(
      await cache.resolveRevision(repo.dir, 'v1-annotated'),
      first,
      'an annotated tag resolves to its commit',
    );
    assert.equal(await cache.resolveRevision(repo.dir, first), first);
    assert.equal(
      await cache.resolveRevision(repo.dir, first.slice(0, 8)),
      first,
      'a short SHA resolves to the full one',
    );
  });

  test('a branch is asked of the remote on every call, so a new commit is seen at once', async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    const r = await TestRepo.create();
    temps.push(r.dir);
    const a = await r.commit({ 'a.yaml': 'a: 1\n' });
    assert.equal(await cache.resolveRevision(r.dir, 'main'), a);
    const b = await r.commit({ 'a.yaml': 'a: 2\n' });
    assert.equal(await cache.resolveRevision(r.dir, 'main'), b);
    const co = await cache.checkout(r.dir, b);
    assert.equal(await readFile(path.join(co.dir, 'a.yaml'), 'utf8'), 'a: 2\n');
    co.release();
  });

  test('checks out the files of a given commit, and of several commits at once', async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    const [c1, c2, c3] = await Promise.all([
      cache.checkout(repo.dir, first),
      cache.checkout(repo.dir, second),
      cache.checkout(repo.fileURL, onBranch),
    ]);
    assert.equal(await readFile(path.join(c1.dir, 'guestbook/cm.yaml'), 'utf8'), 'kind: ConfigMap\n');
    assert.equal(await readFile(path.join(c2.dir, 'guestbook/cm.yaml'), 'utf8'), 'kind: ConfigMap # two\n');
    assert.equal(await readFile(path.join(c3.dir, 'guestbook/extra.yaml'), 'utf8'), 'x: 1\n');
    const again = await cache.checkout(repo.dir, first);
    assert.equal(again.dir, c1.dir, 'a commit already checked out is reused');
    for (const c of [c1, c2, c3, again]) c.release();
  });

  test('a SHA already in the cache resolves without the remote', async () => {
    const cacheDir = await tempDir('impersync-cache-');
    const r = await TestRepo.create();
    const sha = await r.commit({ 'a.yaml': 'a: 1\n' });
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir });
    (await cache.checkout(r.dir, await cache.resolveRevision(r.dir, 'main'))).release();
    await r.remove();
    assert.equal(await cache.resolveRevision(r.dir, sha), sha);
    await assert.rejects(
      cache.resolveRevision(r.dir, 'main'),
      failsWith('RepositoryUnreachable', /^repository '.*' not reachable: .+/),
    );
  });

  test('a commit checked out here is resolved and listed again with no git run', async () => {
    // 500 Applications of one commit resolved its SHA and listed its submodules 500 times, five git
    // processes a render, one at a time under the repository's lock.
    const dir = await tempDir('impersync-git-count-');
    const { counting, runs } = await countingGit(dir);
    const r = await TestRepo.create(path.join(dir, 'repo'));
    const sha = await r.commit({ 'a.yaml': 'a: 1\n' });
    const cache = new GitRepoCache({
      allowLocalRepositories: true,
      cacheDir: path.join(dir, 'cache'),
      gitBinary: counting,
    });
    const renderOnce = async () => {
      const co = await cache.checkout(r.dir, await cache.resolveRevision(r.dir, sha));
      const listing = await cache.submodules(r.dir, sha, undefined);
      co.release();
      return listing;
    };
    const first = await renderOnce();
    const afterFirst = await runs();
    assert.ok(afterFirst > 0, 'the first render runs git');
    assert.deepEqual(await renderOnce(), first);
    assert.equal(await runs(), afterFirst, 'the second render of the commit runs none');
  });

  test('a commit refused for what it holds is refused again with the same words and no git run', async () => {
    // A tenant's commit over the checkout limit, or with a symlink that leads out, was listed (and
    // the symlinks written and walked) again at every checkout of it: twice a render, each refresh.
    const dir = await tempDir('impersync-git-refused-');
    const { counting, runs } = await countingGit(dir);
    const r = await TestRepo.create(path.join(dir, 'repo'));
    const atLimit = await r.commit({ 'a.yaml': 'a\n', 'b.yaml': 'b\n', 'c.yaml': 'c\n' });
    await symlink('../../../etc/passwd', path.join(r.dir, 'out.yaml'));
    const fourFiles = await r.commit({});
    const cache = new GitRepoCache({
      allowLocalRepositories: true,
      cacheDir: path.join(dir, 'cache'),
      gitBinary: counting,
      checkoutLimits: { checkoutMaxFiles: 3 },
    });
    await assert.rejects(cache.checkout(r.dir, fourFiles), failsWith('TooLarge', /has 4 files, over/));
    const out = await r.commit({ 'a.yaml': 'a\n', 'b.yaml': null, 'c.yaml': null });
    await assert.rejects(
      cache.checkout(r.dir, out),
      failsWith('InvalidSource', /out-of-bounds symlinks\. file: out\.yaml/),
    );
    const before = await runs();
    await assert.rejects(cache.checkout(r.dir, fourFiles), failsWith('TooLarge', /has 4 files, over/));
    await assert.rejects(
      cache.checkout(r.dir, out),
      failsWith('InvalidSource', /out-of-bounds symlinks\. file: out\.yaml/),
    );
    assert.equal(await runs(), before, 'no git run for either');
    (await cache.checkout(r.dir, atLimit)).release();
  });

  test('a ref outside branches and tags (a pull request head) resolves and checks out', async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    const r = await TestRepo.create();
    temps.push(r.dir);
    await r.commit({ 'a.yaml': 'a: 1\n' });
    r.branch('pr');
    const pr = await r.commit({ 'a.yaml': 'a: pr\n' });
    r.switch('main');
    git(r.dir, 'update-ref', 'refs/pull/1/head', pr);
    git(r.dir, 'branch', '-D', 'pr');
    assert.equal(await cache.resolveRevision(r.fileURL, 'refs/pull/1/head'), pr);
    const co = await cache.checkout(r.fileURL, pr);
    assert.equal(await readFile(path.join(co.dir, 'a.yaml'), 'utf8'), 'a: pr\n');
    co.release();
  });

  test('file:// URLs work like local paths', async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    assert.equal(await cache.resolveRevision(repo.fileURL, 'v1'), first);
  });

  test('an unknown revision is RevisionNotFound and names the revision and repository', async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    await assert.rejects(
      cache.resolveRevision(repo.dir, 'v9'),
      failsWith('RevisionNotFound', new RegExp(`^revision 'v9' not found in '${repo.dir}'$`)),
    );
    await assert.rejects(
      cache.resolveRevision(repo.dir, 'deadbeefdeadbeef'),
      failsWith('RevisionNotFound', /^revision 'deadbeefdeadbeef' not found in /),
    );
    await assert.rejects(
      cache.resolveRevision(repo.dir, '--upload-pack=touch x'),
      failsWith('InvalidSource', /is not a valid revision/),
    );
  });

  test('a branch deleted upstream is no longer found', async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    const r = await TestRepo.create();
    temps.push(r.dir);
    await r.commit({ 'a.yaml': 'a: 1\n' });
    r.branch('gone');
    await r.commit({ 'b.yaml': 'b: 1\n' });
    assert.ok(await cache.resolveRevision(r.dir, 'gone'));
    r.switch('main');
    git(r.dir, 'branch', '-D', 'gone');
    await assert.rejects(
      cache.resolveRevision(r.dir, 'gone'),
      failsWith('RevisionNotFound', /revision 'gone' not found/),
    );
  });

  test("an unreachable repository is RepositoryUnreachable with git's reason", async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    const missing = path.join(os.tmpdir(), 'impersync-no-such-repo');
    await assert.rejects(
      cache.resolveRevision(missing, 'HEAD'),
      failsWith(
        'RepositoryUnreachable',
        /^repository '.*impersync-no-such-repo' not reachable: .*(does not appear to be a git repository|does not exist)/s,
      ),
    );
    await assert.rejects(
      cache.resolveRevision('http://127.0.0.1:1/x.git', 'HEAD'),
      failsWith(
        'RepositoryUnreachable',
        /^repository 'http:\/\/127\.0\.0\.1:1\/x\.git' not reachable: .*(Failed to connect|Could not connect|Connection refused)/s,
      ),
    );
  });

  test('a password in the URL is not shown in errors', async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    await assert.rejects(cache.resolveRevision('http://user:s3cret@127.0.0.1:1/x.git', 'HEAD'), (err: unknown) => {
      assert.ok(err instanceof SourceError);
      assert.doesNotMatch(err.message, /s3cret/);
      assert.match(err.message, /user:\*\*\*@127\.0\.0\.1/);
      return true;
    });
  });

  test('a missing git binary is ToolMissing', async () => {
    const cache = new GitRepoCache({
      allowLocalRepositories: true,
      cacheDir: await tempDir('impersync-cache-'),
      gitBinary: '/nonexistent/git',
    });
    await assert.rejects(
      cache.resolveRevision(repo.dir, 'main'),
      failsWith('ToolMissing', /^\/nonexistent\/git not found: install git/),
    );
  });

  test('a symlink out of the repository refuses the checkout', async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    const r = await TestRepo.create();
    temps.push(r.dir);
    await r.commit({ 'ok.yaml': 'a: 1\n' });
    await symlink('/etc/passwd', path.join(r.dir, 'leak.yaml'));
    const sha = await r.commit({});
    await assert.rejects(
      cache.checkout(r.dir, sha),
      failsWith('InvalidSource', /^repository contains out-of-bounds symlinks\. file: leak\.yaml$/),
    );
  });

  // Each link below looks in-bounds when read lexically; resolved physically, each leaves the checkout.
  for (const { name, links, bad } of [
    { name: 'a chain: l -> . then x -> l/..', links: { l: '.', x: 'l/..' }, bad: 'x' },
    {
      name: 'a link into a directory link, then ..',
      links: { 'a/b/c/d': '../../..', 'a/b/c/e': 'd/..' },
      bad: 'a/b/c/e',
    },
    {
      name: 'a dangling link through a directory link',
      links: { 'a/b/c/d': '../../..', 'a/b/c/f': 'd/../gone' },
      bad: 'a/b/c/f',
    },
  ]) {
    test(`symlinks are resolved physically: ${name}`, async () => {
      const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
      const r = await TestRepo.create();
      temps.push(r.dir);
      await r.commit({ 'a/b/c/ok.yaml': 'a: 1\n' });
      for (const [link, target] of Object.entries(links)) await symlink(target, path.join(r.dir, link));
      const sha = await r.commit({});
      const escaped = new RegExp(`^repository contains out-of-bounds symlinks\\. file: ${bad.replaceAll('/', '\\/')}$`);
      await assert.rejects(cache.checkout(r.dir, sha), failsWith('InvalidSource', escaped));
    });
  }

  test('symlinks that stay inside, through other links, are kept', async () => {
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    const r = await TestRepo.create();
    temps.push(r.dir);
    await r.commit({ 'a/b/c/ok.yaml': 'a: 1\n' });
    await symlink('a/b', path.join(r.dir, 'ab'));
    await symlink('ab/c/../c/ok.yaml', path.join(r.dir, 'ok.yaml'));
    await symlink('../../ab/c/missing', path.join(r.dir, 'a/b/dangling'));
    const co = await cache.checkout(r.dir, await r.commit({}));
    assert.equal(await readFile(path.join(co.dir, 'ok.yaml'), 'utf8'), 'a: 1\n');
    co.release();
  });

  test('unused checkouts beyond maxTrees are removed; ones in use are kept', async () => {
    const cache = new GitRepoCache({
      allowLocalRepositories: true,
      cacheDir: await tempDir('impersync-cache-'),
      maxTrees: 1,
    });
    const a = await cache.checkout(repo.dir, first);
    const b = await cache.checkout(repo.dir, second);
    assert.ok(existsSync(a.dir) && existsSync(b.dir), 'both are in use');
    a.release();
    await waitFor(() => !existsSync(a.dir));
    assert.ok(existsSync(b.dir));
    b.release();
  });

  /** Three commits of a 4 KiB file each, and a cache with room for two of their trees (10,000 bytes). */
  async function threeCommitsOver10000Bytes(prefix: string) {
    const r = await TestRepo.create(await tempDir(prefix));
    const sha: string[] = [];
    for (let i = 0; i < 3; i++) sha.push(await r.commit({ 'big.txt': `${i}`.repeat(4096) }));
    const cache = new GitRepoCache({
      allowLocalRepositories: true,
      cacheDir: await tempDir('impersync-cache-'),
      checkoutLimits: { checkoutMaxBytes: 5000 },
      treeCacheMaxBytes: 10_000,
    });
    return { r, sha, cache };
  }

  test('checked-out commits are bounded in bytes: unused ones go first, a new one waits for room', async () => {
    const { r, sha, cache } = await threeCommitsOver10000Bytes('impersync-bytes-');
    const a = await cache.checkout(r.dir, sha[0] as string);
    const b = await cache.checkout(r.dir, sha[1] as string);
    const got: { third?: Awaited<ReturnType<GitRepoCache['checkout']>> } = {};
    const c = cache.checkout(r.dir, sha[2] as string).then((co) => (got.third = co));
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(got.third, undefined, 'two trees of 4 KiB in use: no room for a third in 10,000 bytes');
    a.release();
    const third = await c;
    assert.ok(existsSync(third.dir), 'the third was written once the first was released');
    await waitFor(() => !existsSync(a.dir));
    b.release();
    third.release();
  });

  test('a checkout waits for room no later than its deadline: a render holding trees cannot wait on itself', async () => {
    const { r, sha, cache } = await threeCommitsOver10000Bytes('impersync-room-deadline-');
    // As a multi-source render: two trees held while it asks for a third.
    const a = await cache.checkout(r.dir, sha[0] as string);
    const b = await cache.checkout(r.dir, sha[1] as string);
    await assert.rejects(cache.checkout(r.dir, sha[2] as string, { deadline: Date.now() + 200 }), (err: unknown) => {
      assert.ok(err instanceof SourceError);
      assert.equal(err.reason, 'Timeout');
      assert.match(
        err.message,
        /^no room in the checkout cache for the 4 KiB of '.*' within the render's time limit: the checkouts in use fill its 10 KiB$/,
      );
      return true;
    });
    a.release();
    const third = await cache.checkout(r.dir, sha[2] as string, { deadline: Date.now() + 10_000 });
    assert.ok(existsSync(third.dir), 'the room the failed checkout asked for was not kept');
    b.release();
    third.release();
  });

  test('clones are bounded in bytes: past the budget the least recently used clone nobody uses goes', async () => {
    const x = await TestRepo.create(await tempDir('impersync-clone-x-'));
    const y = await TestRepo.create(await tempDir('impersync-clone-y-'));
    const xs = await x.commit({ 'a.yaml': 'a: 1\n' });
    const ys = await y.commit({ 'b.yaml': 'b: 1\n' });
    const cacheDir = await tempDir('impersync-cache-');
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir, cloneCacheMaxBytes: 1 });
    (await cache.checkout(x.dir, xs)).release();
    const clones = () => readdir(path.join(cacheDir, 'repos'));
    assert.equal((await clones()).length, 1);
    (await cache.checkout(y.dir, ys)).release();
    for (let i = 0; i < 50 && (await clones()).length > 1; i++) await new Promise((res) => setTimeout(res, 50));
    assert.equal((await clones()).length, 1, 'the older clone was removed');
    const again = await cache.checkout(x.dir, await x.commit({ 'a.yaml': 'a: 2\n' }));
    assert.equal(await readFile(path.join(again.dir, 'a.yaml'), 'utf8'), 'a: 2\n', 'and is cloned again when needed');
    again.release();
    // A commit whose tree outlived its clone is resolved through the clone again, not from the
    // tree: what reads the clone next (a signature check) finds the commit there.
    assert.equal(await cache.resolveRevision(y.dir, ys), ys);
    (await cache.checkout(y.dir, ys)).release();
    const r = await cache.inClone(y.dir, undefined, ['cat-file', '-t', ys], {});
    assert.equal(r.stdout.toString('utf8').trim(), 'commit');
  });

  test('a commit of a few KiB in Git that checks out to 2.5 GiB is refused from its tree listing, nothing written', async () => {
    const bomb = await checkoutBombRepo();
    temps.push(bomb.dir);
    const cacheDir = await tempDir('impersync-cache-');
    const cache = new GitRepoCache({ cacheDir });
    const sha = await cache.resolveRevision(bomb.url, 'HEAD');
    await assert.rejects(
      cache.checkout(bomb.url, sha),
      failsWith(
        'TooLarge',
        new RegExp(`^commit ${sha} of '.*' has 2\\.4 GiB of files, over the renderer's checkout limit of 1 GiB$`),
      ),
    );
    const written = await readdir(path.join(cacheDir, 'trees'), { recursive: true }).catch(() => []);
    assert.deepEqual(
      written.filter((f) => String(f).includes(sha)),
      [],
    );
  });

  test('a remote that never answers is a Timeout, not a hang', async () => {
    const sockets: Socket[] = [];
    const silent = net.createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as AddressInfo;
      const cache = new GitRepoCache({
        allowLocalRepositories: true,
        cacheDir: await tempDir('impersync-cache-'),
        networkTimeoutMs: 1500,
      });
      await assert.rejects(
        cache.resolveRevision(`http://127.0.0.1:${port}/x.git`, 'main'),
        failsWith('Timeout', /^git ls-remote of 'http:\/\/127\.0\.0\.1:\d+\/x\.git' timed out after 1\.5s$/),
      );
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  describe('over http (git http-backend)', () => {
    let server: GitHttpServer;
    before(async () => {
      server = await startGitHttpServer(path.dirname(repo.dir));
    });
    after(async () => {
      await server.close();
    });

    test('resolves refs and checks out over smart HTTP', async () => {
      const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
      const url = server.url('apps');
      const before = server.requests();
      assert.equal(await cache.resolveRevision(url, 'HEAD'), second);
      assert.equal(await cache.resolveRevision(url, 'v1-annotated'), first);
      const co = await cache.checkout(url, onBranch);
      assert.equal(await readFile(path.join(co.dir, 'guestbook/extra.yaml'), 'utf8'), 'x: 1\n');
      co.release();
      assert.ok(server.requests() > before, 'git talked to the http server');
      await assert.rejects(
        cache.resolveRevision(server.url('nope'), 'HEAD'),
        failsWith('RepositoryUnreachable', /not reachable: .*(not found|404)/s),
      );
    });
  });
});

describe('GitRepoCache folderContent', () => {
  test("a folder's key is the same at every commit that holds its files as they are, and moves with them and with the .gitattributes above it", async () => {
    const r = await TestRepo.create(path.join(await tempDir('impersync-git-folder-'), 'mono'));
    const c1 = await r.commit({ 'apps/a/cm.yaml': 'kind: ConfigMap\n', 'apps/b/cm.yaml': 'kind: ConfigMap\n' });
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    const key = async (sha: string, dir: string) => {
      (await cache.checkout(r.dir, sha)).release();
      return cache.folderContent(r.dir, sha, dir, undefined);
    };
    const a1 = await key(c1, 'apps/a');
    assert.ok(a1 !== undefined, 'a plain folder has a key');
    assert.equal(await key(c1, './apps/a/'), a1, 'the path is read as Argo CD cleans it');
    const c2 = await r.commit({ 'apps/b/cm.yaml': 'kind: ConfigMap # b moved\n' });
    assert.equal(await key(c2, 'apps/a'), a1, 'a commit elsewhere leaves the key as it was');
    assert.notEqual(await key(c2, 'apps/b'), await key(c1, 'apps/b'), 'the folder that changed has a new key');
    const c3 = await r.commit({ '.gitattributes': '*.yaml text eol=crlf\n' });
    assert.notEqual(await key(c3, 'apps/a'), a1, 'a .gitattributes above the folder changes how its files are written');
    const c4 = await r.commit({ 'apps/a/cm.yaml': 'kind: ConfigMap # a moved\n' });
    assert.notEqual(await key(c4, 'apps/a'), await key(c3, 'apps/a'));
    for (const dir of ['apps/missing', 'apps/a/cm.yaml', '../apps', '/apps'])
      assert.equal(await key(c4, dir), undefined, `${dir} is not a folder of the commit`);
    assert.ok((await key(c4, '')) !== undefined, 'the root is a folder too');
  });

  test('no key for a folder whose render may read what lies outside it: a symlink, a Jsonnet file, a commit with submodules', async () => {
    const r = await TestRepo.create(path.join(await tempDir('impersync-git-folder-'), 'mono'));
    await r.commit({ 'shared/cm.yaml': 'kind: ConfigMap\n', 'jn/main.jsonnet': "import '../lib.libsonnet'\n" });
    await mkdir(path.join(r.dir, 'linked'), { recursive: true });
    await symlink('../shared/cm.yaml', path.join(r.dir, 'linked/cm.yaml'));
    await mkdir(path.join(r.dir, 'dirlink'), { recursive: true });
    await symlink('../shared', path.join(r.dir, 'dirlink/shared'));
    await symlink('shared', path.join(r.dir, 'alias'));
    const sha = await r.commit({ 'plain/cm.yaml': 'kind: ConfigMap\n' });
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    const key = async (sha: string, dir: string) => {
      (await cache.checkout(r.dir, sha)).release();
      return cache.folderContent(r.dir, sha, dir, undefined);
    };
    assert.ok((await key(sha, 'plain')) !== undefined);
    assert.equal(await key(sha, 'linked'), undefined, 'a symlinked file');
    assert.equal(await key(sha, 'dirlink'), undefined, 'a symlinked folder');
    assert.equal(await key(sha, 'alias'), undefined, 'a path that is itself a symlink');
    assert.equal(await key(sha, 'jn'), undefined, 'a Jsonnet file, which may import from elsewhere');
    assert.equal(await key(sha, ''), undefined, 'the root holds them all');
    const deep = await r.commit({ 'deep/a/b/lib.libsonnet': '{}\n', 'deep/c/cm.yaml': 'kind: ConfigMap\n' });
    assert.equal(await key(deep, 'deep/a'), undefined, 'a Jsonnet file further down');
    assert.equal(await key(deep, 'deep'), undefined, 'and every folder above it');
    assert.ok((await key(deep, 'deep/c')) !== undefined, 'its sibling has a key');
    const withModules = await r.commit({
      '.gitmodules': '[submodule "x"]\n\tpath = x\n\turl = https://example.com/x\n',
    });
    assert.equal(await key(withModules, 'plain'), undefined, 'a commit with submodules');
  });

  test('no key in a commit whose listing gives two entries one name: a name that is not UTF-8, a tree that lists a name twice', async () => {
    // The attack: folders "\xff" and a real U+FFFD read alike as UTF-8, and a tree may list "app"
    // twice (git writes both to disk): a key would then name another folder's tree, and that tree's
    // answer would be served for files that are not those of this commit.
    const r = await TestRepo.create(path.join(await tempDir('impersync-git-folder-'), 'odd'));
    const base = await r.commit({ 'README.md': 'x\n' });
    const plumb = (args: string[], input: Buffer | string) =>
      execFileSync('git', args, { cwd: r.dir, input }).toString('utf8').trim();
    const blob = (text: string) => plumb(['hash-object', '-w', '--stdin'], text);
    const tree = (entries: Array<[string, string, string | Buffer]>) =>
      plumb(
        ['mktree', '-z'],
        Buffer.concat(
          entries.map(([mode, id, name]) =>
            Buffer.concat([
              Buffer.from(`${mode} ${mode === '040000' ? 'tree' : 'blob'} ${id}\t`),
              Buffer.from(name),
              Buffer.from([0]),
            ]),
          ),
        ),
      );
    const a = tree([['100644', blob('kind: ConfigMap # a\n'), 'cm.yaml']]);
    const b = tree([['100644', blob('kind: ConfigMap # b\n'), 'other.yaml']]);
    const commitOf = (root: string) => {
      const sha = plumb(['commit-tree', root, '-p', base, '-m', 'odd'], '');
      git(r.dir, 'update-ref', 'refs/heads/main', sha);
      return sha;
    };
    const cache = new GitRepoCache({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    const key = async (sha: string, dir: string) => {
      (await cache.checkout(r.dir, sha)).release();
      return cache.folderContent(r.dir, sha, dir, undefined);
    };
    const clean = commitOf(tree([['040000', b, '\uFFFD']]));
    assert.ok((await key(clean, '\uFFFD')) !== undefined, 'a folder named U+FFFD alone has a key');
    const notUtf8 = commitOf(
      tree([
        ['040000', a, '\uFFFD'],
        ['040000', b, Buffer.from([0xff])],
      ]),
    );
    assert.equal(await key(notUtf8, '\uFFFD'), undefined, 'beside a folder named 0xff');
    const twice = commitOf(
      tree([
        ['040000', a, 'app'],
        ['040000', b, 'app'],
      ]),
    );
    const once = commitOf(tree([['040000', b, 'app']]));
    assert.ok((await key(once, 'app')) !== undefined);
    assert.equal(await key(twice, 'app'), undefined, 'a tree listing app twice');
  });

  test('a listing that failed (a timeout on a busy machine) is tried again at the next lookup', async () => {
    const dir = await tempDir('impersync-git-folder-');
    const fail = path.join(dir, 'fail-next-ls-tree');
    // The fault a real git gives only on a busy machine (a timeout): the next ls-tree fails once.
    const { counting: wrapper } = await countingGit(
      dir,
      `if [ "$1" = ls-tree ] && [ -e '${fail}' ]; then rm '${fail}'; exit 1; fi\n`,
    );
    const r = await TestRepo.create(path.join(dir, 'repo'));
    const sha = await r.commit({ 'app/cm.yaml': 'kind: ConfigMap\n' });
    const cache = new GitRepoCache({
      allowLocalRepositories: true,
      cacheDir: path.join(dir, 'cache'),
      gitBinary: wrapper,
    });
    (await cache.checkout(r.dir, sha)).release();
    await writeFile(fail, '');
    assert.equal(await cache.folderContent(r.dir, sha, 'app', undefined), undefined, 'the listing failed');
    assert.ok((await cache.folderContent(r.dir, sha, 'app', undefined)) !== undefined, 'and is tried again');
  });

  test('no key for a source whose type an installed plugin may discover from files outside its folder', async () => {
    const r = await TestRepo.create(path.join(await tempDir('impersync-git-folder-'), 'mono'));
    const sha = await r.commit({ 'app/cm.yaml': 'kind: ConfigMap\n' });
    const cacheDir = await tempDir('impersync-cache-');
    const input = (source: Record<string, unknown>) => ({
      appName: 'a',
      source: { repoURL: r.dir, path: 'app', ...source },
    });
    const sockets = await tempDir('impersync-cmp-');
    const renderer = new SourceRenderer({ allowLocalRepositories: true, cacheDir, pluginSocketDir: sockets });
    assert.ok(
      (await renderer.folderKey(input({}), sha)) !== undefined,
      'no plugin installed: a plain folder has a key',
    );
    await writeFile(path.join(sockets, 'some-plugin.sock'), '');
    assert.equal(await renderer.folderKey(input({}), sha), undefined, 'a plugin installed, and no type named');
    assert.ok(
      (await renderer.folderKey(input({ directory: { recurse: true } }), sha)) !== undefined,
      'a plugin installed, and a directory named',
    );
  });

  test("a commit whose folders would take more than the listing cache's bytes gives no key, and is kept as its absence", async () => {
    const base = await tempDir('impersync-git-folder-');
    const wide = await TestRepo.create(path.join(base, 'wide'));
    const files: Record<string, string> = {};
    for (let i = 0; i < 60; i++) files[`apps/app-${i}/cm.yaml`] = 'kind: ConfigMap\n';
    const wideSha = await wide.commit(files);
    const small = await TestRepo.create(path.join(base, 'small'));
    const smallSha = await small.commit({ 'app/cm.yaml': 'kind: ConfigMap\n' });
    const limit = 2048;
    const cache = new GitRepoCache({
      allowLocalRepositories: true,
      cacheDir: await tempDir('impersync-cache-'),
      listingCacheBytes: limit,
    });
    const key = async (repo: TestRepo, sha: string, dir: string) => {
      (await cache.checkout(repo.dir, sha)).release();
      return cache.folderContent(repo.dir, sha, dir, undefined);
    };
    assert.equal(await key(wide, wideSha, 'apps/app-1'), undefined, '61 folders are more than 2 KiB');
    assert.ok(cache.listingBytes < 256, `the wide commit is kept as its absence (${cache.listingBytes} bytes)`);
    assert.ok((await key(small, smallSha, 'app')) !== undefined, 'a small commit still has keys');
    assert.equal(await key(wide, wideSha, 'apps/app-2'), undefined);
    assert.ok(cache.listingBytes <= limit, `${cache.listingBytes} bytes kept, of ${limit}`);
  });

  test("the renderer's --metadata-cache bounds the folder listings it keeps: a ninth of it", async () => {
    const wide = await TestRepo.create(path.join(await tempDir('impersync-git-folder-'), 'wide'));
    const files: Record<string, string> = {};
    for (let i = 0; i < 60; i++) files[`apps/app-${i}/cm.yaml`] = 'kind: ConfigMap\n';
    const sha = await wide.commit(files);
    const input = { appName: 'a', source: { repoURL: wide.dir, path: 'apps/app-1' } };
    const small = new SourceRenderer({
      allowLocalRepositories: true,
      cacheDir: await tempDir('impersync-cache-'),
      metadataCacheBytes: 9 * 2048,
    });
    assert.equal(await small.folderKey(input, sha), undefined, '61 folders are more than a ninth of 18 KiB');
    const roomy = new SourceRenderer({ allowLocalRepositories: true, cacheDir: await tempDir('impersync-cache-') });
    assert.ok((await roomy.folderKey(input, sha)) !== undefined, 'they fit in the default 288 MiB');
  });
});

/** A git that logs each run to a file in `dir` (after shell lines `first`), and how many runs it has logged. */
async function countingGit(dir: string, first = ''): Promise<{ counting: string; runs: () => Promise<number> }> {
  const log = path.join(dir, 'runs');
  const counting = path.join(dir, 'git');
  await writeFile(counting, `#!/bin/sh\n${first}echo "$1" >> '${log}'\nexec git "$@"\n`);
  await chmod(counting, 0o755);
  return {
    counting,
    runs: async () => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean).length,
  };
}
