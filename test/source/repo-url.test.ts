// Which repoURLs the Git cache fetches from: network transports only, local ones when the operator
// allows them, remote helpers (ext::, fd::) never; refusals happen before git runs and name the
// repository with its password hidden.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { redactURL, SourceError } from '../../src/source/errors.ts';
import { GitRepoCache } from '../../src/source/git.ts';
import { classifyRepoURL } from '../../src/source/repo-url.ts';
import { redactURLsIn } from '../../src/source/scrub.ts';
import { TestRepo } from '../support/git.ts';

describe('repository URLs', () => {
  let top: string;
  let repo: TestRepo;
  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-urls-'));
    repo = await TestRepo.create(path.join(top, 'repo'));
    await repo.commit({ 'a.yaml': 'a: 1\n' });
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const refused = (message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof SourceError, String(err));
    assert.equal(err.reason, 'InvalidSource', err.message);
    assert.match(err.message, message);
    return true;
  };

  test('file://, bare paths and relative paths are refused unless local repositories are allowed', async () => {
    const cache = new GitRepoCache({ cacheDir: path.join(top, 'cache-strict') });
    await assert.rejects(
      cache.resolveRevision('file:///etc', 'HEAD'),
      refused(
        /^repository 'file:\/\/\/etc' is refused: only network repositories \(https, http, ssh, git\) are allowed$/,
      ),
    );
    for (const url of [repo.fileURL, repo.dir, 'repo', './repo', '../x', 'FILE:///etc']) {
      await assert.rejects(cache.resolveRevision(url, 'HEAD'), refused(/is refused: only network repositories/));
      await assert.rejects(cache.checkout(url, 'a'.repeat(40)), refused(/is refused: only network repositories/));
    }
    const local = new GitRepoCache({ cacheDir: path.join(top, 'cache-local'), allowLocalRepositories: true });
    assert.equal(await local.resolveRevision(repo.fileURL, 'HEAD'), repo.head());
    assert.equal(await local.resolveRevision(repo.dir, 'HEAD'), repo.head());
  });

  test('remote helpers (ext::, fd::, any transport::address) and other schemes are refused even when local ones are allowed', async () => {
    const marker = path.join(top, 'ext-ran');
    const cache = new GitRepoCache({ cacheDir: path.join(top, 'cache-ext'), allowLocalRepositories: true });
    for (const url of [
      `ext::sh -c touch% ${marker}`,
      'fd::17',
      'fd::0,1/repo',
      'https::example.com/repo',
      'transport::address',
      'ftp://example.com/repo.git',
      'git+ssh://example.com/repo.git',
      'rsync://example.com/repo.git',
    ]) {
      await assert.rejects(cache.resolveRevision(url, 'HEAD'), refused(/is refused \(.*\): only network repositories/));
    }
    assert.ok(!existsSync(marker), 'the ext:: command never ran');
  });

  test('an option hidden in a URL is refused', async () => {
    const cache = new GitRepoCache({ cacheDir: path.join(top, 'cache-dash'), allowLocalRepositories: true });
    for (const url of [
      '-oProxyCommand=touch /tmp/x',
      'ssh://-oProxyCommand=x/repo',
      'git@-oProxyCommand=x:repo',
      '--upload-pack=x',
    ]) {
      await assert.rejects(cache.resolveRevision(url, 'HEAD'), refused(/is refused/));
    }
  });

  test('network URLs are the ones let through', () => {
    for (const url of [
      'https://github.com/argoproj/argocd-example-apps.git',
      'HTTP://127.0.0.1:8080/repo',
      'ssh://git@example.com:2222/org/repo.git',
      'git://example.com/repo.git',
      'git@github.com:argoproj/argocd-example-apps.git',
      'user@[::1]:repo.git',
    ]) {
      assert.equal(classifyRepoURL(url).kind, 'network', url);
    }
    assert.equal(classifyRepoURL('github.com:org/repo').kind, 'refused', 'scp-like without a user is not guessed at');
  });

  test('a password is hidden in refusals, also one holding an @', async () => {
    assert.equal(redactURL('https://user:p@ss@host/repo'), 'https://user:***@host/repo');
    assert.equal(redactURL('https://ghp_token@host/repo'), 'https://***@host/repo');
    assert.equal(redactURL('ssh://git@host/repo'), 'ssh://git@host/repo');
    assert.equal(
      redactURLsIn('fatal: https://ghp_token@host/repo and http://u:p@h/x'),
      'fatal: https://***@host/repo and http://u:***@h/x',
    );
    const cache = new GitRepoCache({ cacheDir: path.join(top, 'cache-pw') });
    await assert.rejects(cache.resolveRevision('ftp://user:s3cr@t@host/repo', 'HEAD'), (err: unknown) => {
      assert.ok(err instanceof SourceError);
      assert.doesNotMatch(err.message, /s3cr|@t@/);
      assert.match(err.message, /^repository 'ftp:\/\/user:\*\*\*@host\/repo' is refused/);
      return true;
    });
  });
});
