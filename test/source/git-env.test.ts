// The environment the renderer's git runs with (git-env.ts), against real git: nothing of the
// machine's or the user's git configuration applies, only network protocols (and file when local
// repositories are allowed), no hooks, no askpass from the environment.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SourceError } from '../../src/source/errors.ts';
import { gitEnvironment } from '../../src/source/git-env.ts';
import { GitRepoCache } from '../../src/source/git.ts';
import { TestRepo, git } from '../support/git.ts';

describe('git environment', () => {
  let top: string;
  let repo: TestRepo;
  let n = 0;
  const cacheDir = () => path.join(top, `cache-${++n}`);
  const script = async (name: string, marker: string): Promise<string> => {
    const file = path.join(top, name);
    await writeFile(file, `#!/bin/sh\ntouch '${marker}'\necho x\n`);
    await chmod(file, 0o755);
    return file;
  };

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-gitenv-'));
    repo = await TestRepo.create(path.join(top, 'repo'));
    await repo.commit({ 'a.yaml': 'a: 1\n' });
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  test("the operator's and the machine's git configuration do not apply", async () => {
    // Each way of configuring git from outside would send this network URL to the local repository.
    const lure = 'http://127.0.0.1:1/lure';
    const cfg = path.join(top, 'gitconfig');
    await writeFile(cfg, `[url "${repo.dir}"]\n\tinsteadOf = ${lure}\n`);
    for (const env of [
      { GIT_CONFIG_GLOBAL: cfg },
      { GIT_CONFIG_SYSTEM: cfg, GIT_CONFIG_NOSYSTEM: '' },
      { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: `url.${repo.dir}.insteadOf`, GIT_CONFIG_VALUE_0: lure },
      { GIT_CONFIG_PARAMETERS: `'url.${repo.dir}.insteadOf'='${lure}'` },
    ]) {
      const cache = new GitRepoCache({
        cacheDir: cacheDir(),
        allowLocalRepositories: true,
        env: { ...process.env, ...env },
      });
      await assert.rejects(cache.resolveRevision(lure, 'HEAD'), (err: unknown) => {
        assert.ok(err instanceof SourceError, String(err));
        assert.equal(err.reason, 'RepositoryUnreachable', `${JSON.stringify(env)}: ${err.message}`);
        return true;
      });
    }
  });

  test('only network protocols, file only when local repositories are allowed, ext never', () => {
    const marker = path.join(top, 'ext-ran');
    const strict = gitEnvironment(process.env, { allowFile: false });
    const lsRemote = (env: NodeJS.ProcessEnv, url: string) =>
      spawnSync('git', ['ls-remote', '--', url], { env, cwd: top, encoding: 'utf8' });
    const file = lsRemote(strict, repo.fileURL);
    assert.notEqual(file.status, 0);
    assert.match(file.stderr, /transport 'file' not allowed/);
    assert.notEqual(lsRemote(strict, repo.dir).status, 0, 'a bare path is the file protocol too');
    assert.equal(lsRemote(gitEnvironment(process.env, { allowFile: true }), repo.fileURL).status, 0);
    const ext = lsRemote(gitEnvironment(process.env, { allowFile: true }), `ext::sh -c touch% ${marker}`);
    assert.match(ext.stderr, /transport 'ext' not allowed/);
    assert.ok(!existsSync(marker));
  });

  test('no hooks run, even ones present in the repository git works in', async () => {
    const marker = path.join(top, 'hook-ran');
    const bare = path.join(top, 'hooked.git');
    git(top, 'init', '--quiet', '--bare', bare);
    await mkdir(path.join(bare, 'hooks'), { recursive: true });
    await script(path.join('hooked.git', 'hooks', 'reference-transaction'), marker);
    const r = spawnSync('git', ['fetch', '--quiet', '--', repo.dir, '+refs/heads/*:refs/heads/*'], {
      cwd: bare,
      env: { ...gitEnvironment(process.env, { allowFile: true }), GIT_DIR: bare },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(!existsSync(marker), 'the reference-transaction hook did not run');
  });

  test('no askpass or credential helper from the environment', async () => {
    const marker = path.join(top, 'askpass-ran');
    const askpass = await script('askpass.sh', marker);
    const server = http.createServer((_req, res) => {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="x"' });
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const cache = new GitRepoCache({
        cacheDir: cacheDir(),
        env: { ...process.env, GIT_ASKPASS: askpass, SSH_ASKPASS: askpass },
      });
      await assert.rejects(cache.resolveRevision(`http://127.0.0.1:${port}/private.git`, 'HEAD'), /not reachable/);
      assert.ok(!existsSync(marker), 'the askpass program did not run');
    } finally {
      server.close();
    }
  });
});
