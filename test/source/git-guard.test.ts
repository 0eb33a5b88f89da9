// The git kustomize runs (kustomize-git.ts, git-guard.ts), called directly as kustomize calls it:
// only the commands of kustomize's clone pass, only for URLs the policy's sourceRepos allow, and
// they run the real git with the renderer's git configuration (file protocol never).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GUARD_POLICY_ENV, kustomizeEnvironment, writeGitShim } from '../../src/source/kustomize-git.ts';
import { TestRepo, startGitHttpServer, type GitHttpServer } from '../support/git.ts';

describe("kustomize's git", () => {
  let top: string;
  let shim: string;
  let server: GitHttpServer;
  let allowed: string;
  let other: string;
  let n = 0;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-guard-'));
    shim = await writeGitShim(path.join(top, 'bin'));
    const served = path.join(top, 'served');
    await (await TestRepo.create(path.join(served, 'org', 'allowed.git'))).commit({ 'a.yaml': 'a: 1\n' });
    await (await TestRepo.create(path.join(served, 'org', 'other.git'))).commit({ 'b.yaml': 'b: 1\n' });
    server = await startGitHttpServer(served);
    allowed = server.url('org/allowed.git');
    other = server.url('org/other.git');
  });
  after(async () => {
    await server?.close();
    if (top) await rm(top, { recursive: true, force: true });
  });

  /** A fresh clone folder, as kustomize makes one, and a function running the guard in it. */
  async function clone(
    sourceRepos: string[] | null = [allowed],
    checkout = { checkoutMaxBytes: 1 << 30, checkoutMaxFiles: 1000 },
  ) {
    const dir = path.join(top, `clone-${++n}`);
    await mkdir(dir);
    const env = kustomizeEnvironment(process.env, path.dirname(shim), {
      git: 'git',
      sourceRepos,
      enableHelm: false,
      checkout,
    });
    // Asynchronous: the git server answering these runs in this process.
    const git = (...args: string[]) =>
      new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const child = spawn(shim, args, { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
        child.on('close', (status) => resolve({ status, stderr }));
      });
    return { dir, env, git };
  }
  const refusedBy = (r: { status: number | null; stderr: string }, message: RegExp) => {
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, message);
  };

  test("kustomize's clone of an allowed repository goes through", async () => {
    const { git } = await clone();
    for (const args of [['init'], ['remote', 'add', 'origin', allowed], ['fetch', '--depth=1', allowed, 'main']]) {
      const r = await git(...args);
      assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    assert.equal((await git('checkout', 'FETCH_HEAD')).status, 0);
    assert.equal((await git('submodule', 'update', '--init', '--recursive')).status, 0);
  });

  test('a repository the policy does not allow is refused at remote add and at fetch', async () => {
    const { git } = await clone();
    assert.equal((await git('init')).status, 0);
    refusedBy(
      await git('remote', 'add', 'origin', other),
      /^refused by the renderer: kustomize remote base '.*org\/other\.git' is refused: the project's sourceRepos do not allow/,
    );
    refusedBy(await git('fetch', '--depth=1', other, 'main'), /kustomize remote base '.*org\/other\.git' is refused/);
    const none = await clone(null);
    assert.equal((await none.git('init')).status, 0);
    refusedBy(await none.git('fetch', '--depth=1', allowed, 'main'), /sourceRepos is empty/);
  });

  test('local repositories are refused whatever the policy says, and git itself has file off', async () => {
    const { git, env } = await clone(['*']);
    assert.equal((await git('init')).status, 0);
    const local = `file://${path.join(top, 'served', 'org', 'allowed.git')}`;
    refusedBy(await git('fetch', '--depth=1', local, 'main'), /is not a network repository/);
    const real = { ...env, PATH: process.env.PATH };
    const direct = spawnSync('git', ['ls-remote', '--', local], { env: real, encoding: 'utf8', cwd: top });
    assert.match(
      direct.stderr,
      /transport 'file' not allowed/,
      'the real git kustomize gets refuses file:// on its own',
    );
  });

  test('commands and options kustomize does not use are refused', async () => {
    const { git } = await clone(['*']);
    assert.equal((await git('init')).status, 0);
    for (const args of [
      ['fetch', '--upload-pack=touch /tmp/x', allowed, 'main'],
      ['fetch', '--depth=1', allowed, 'main', 'extra'],
      ['-c', 'protocol.file.allow=always', 'fetch', allowed],
      ['config', 'core.sshCommand', 'touch /tmp/x'],
      ['clone', allowed],
      ['remote', 'add', 'evil', allowed],
      ['checkout', 'main'],
      ['upload-pack', '.'],
    ]) {
      refusedBy(await git(...args), /refused by the renderer: .* is not a command kustomize runs for a remote base/);
    }
  });

  test('a remote base over the checkout limits is not checked out', async () => {
    for (const [limits, over] of [
      [
        { checkoutMaxBytes: 1 << 30, checkoutMaxFiles: 0 },
        /has 1 files, over the renderer's checkout limit of 0 files/,
      ],
      [
        { checkoutMaxBytes: 3, checkoutMaxFiles: 1000 },
        /has 5 bytes of files, over the renderer's checkout limit of 3 bytes/,
      ],
    ] as const) {
      const { git, dir } = await clone([allowed], limits);
      for (const args of [['init'], ['remote', 'add', 'origin', allowed], ['fetch', '--depth=1', allowed, 'main']]) {
        assert.equal((await git(...args)).status, 0);
      }
      refusedBy(await git('checkout', 'FETCH_HEAD'), new RegExp(`remote base '.*org/allowed\\.git' ${over.source}`));
      assert.ok(!existsSync(path.join(dir, 'a.yaml')), 'nothing was checked out');
    }
  });

  test('submodules of a remote base are refused', async () => {
    const { git, dir } = await clone();
    await writeFile(path.join(dir, '.gitmodules'), '[submodule "x"]\n\tpath = x\n\turl = file:///etc\n');
    refusedBy(
      await git('submodule', 'update', '--init', '--recursive'),
      /git submodules, which the renderer does not fetch/,
    );
  });

  test('without the policy nothing is allowed', async () => {
    const { git, env } = await clone();
    delete env[GUARD_POLICY_ENV];
    refusedBy(await git('init'), /without the renderer policy/);
  });
});
