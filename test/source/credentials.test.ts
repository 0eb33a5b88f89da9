// The files git gets for one repository's credentials (source/credentials.ts): the askpass answers
// only for the repository's own origin (a redirect to another host gets nothing) and runs nothing
// of the host's name, git follows no redirect while it carries a credential, the folder is private
// and goes away, and the cache identity of a credential names nothing of it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ANONYMOUS, credentialId, gitCredentials } from '../../src/source/credentials.ts';
import { withGitConfig } from '../../src/source/git-env.ts';

test("the askpass answers for the repository's origin only, from files of a private folder that go away", async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'impersync-askpass-'));
  try {
    const access = { url: 'https://git.example.com:8443/org/app.git', username: 'alice', password: 'pw-123' };
    const creds = await gitCredentials(root, access);
    const askpass = creds.env.GIT_ASKPASS as string;
    const ask = (prompt: string) => spawnSync(askpass, [prompt], { encoding: 'utf8' }).stdout.trim();
    assert.equal(ask("Username for 'https://git.example.com:8443': "), 'alice');
    assert.equal(ask("Password for 'https://alice@git.example.com:8443': "), 'pw-123');
    assert.equal(ask("Password for 'https://alice@evil.example.com': "), '', 'another host gets nothing');
    assert.equal(ask("Password for 'https://git.example.com': "), '', 'another port gets nothing');
    assert.equal(statSync(path.dirname(askpass)).mode & 0o777, 0o700);
    assert.ok(!JSON.stringify(creds.env).includes('pw-123'), 'variables hold paths only');
    await creds.dispose();
    assert.ok(!existsSync(path.dirname(askpass)));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('a bearer token goes in a header scoped to its origin, in a file', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'impersync-askpass-'));
  try {
    const creds = await gitCredentials(root, { url: 'https://git.example.com/org/app', bearerToken: 'tok' });
    const config = await readFile(creds.env.GIT_CONFIG_GLOBAL as string, 'utf8');
    assert.match(config, /^\[http "https:\/\/git\.example\.com\/"\]\n\textraHeader = "Authorization: Bearer tok"\n$/);
    await creds.dispose();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("the askpass runs nothing of the URL's host and reads no pattern in it", async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'impersync-askpass-'));
  try {
    // A command on the askpass's PATH that leaves a mark when a host's `$(...)` or backticks run it.
    const bin = path.join(root, 'bin');
    const marker = path.join(root, 'ran');
    await mkdir(bin);
    await writeFile(path.join(bin, 'impersync-pwned'), `#!/bin/sh\ntouch '${marker}'\n`);
    await chmod(path.join(bin, 'impersync-pwned'), 0o755);
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` };
    const answers: string[] = [];
    for (const url of ['https://$(impersync-pwned).example/app.git', 'https://a`impersync-pwned`b.example/app.git']) {
      const creds = await gitCredentials(root, { url, username: 'alice', password: 'pw-123' });
      const ask = (prompt: string) =>
        spawnSync(creds.env.GIT_ASKPASS as string, [prompt], { encoding: 'utf8', env }).stdout.trim();
      answers.push(
        ask(`Password for 'https://alice@${new URL(url).host}': `),
        ask("Password for 'https://alice@evil': "),
      );
      await creds.dispose();
    }
    assert.ok(!existsSync(marker), "the askpass ran a command named in the URL's host");
    assert.deepEqual(answers, ['pw-123', '', 'pw-123', ''], 'its own host gets the password, no other');
    // `"*"` in a host is not a wildcard: git.example"*" is not git.example.evil.net.
    const creds = await gitCredentials(root, { url: 'https://git.example"*"/app.git', password: 'pw-123' });
    const ask = (prompt: string) => spawnSync(creds.env.GIT_ASKPASS as string, [prompt], { encoding: 'utf8' }).stdout;
    assert.equal(ask("Password for 'https://x-access-token@git.example.evil.net': ").trim(), '');
    assert.equal(ask(`Password for 'https://x-access-token@git.example"*"': `).trim(), 'pw-123');
    await creds.dispose();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('git follows no redirect while it carries a credential, whatever a configuration file says', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'impersync-redirects-'));
  try {
    const url = 'https://git.example.com/org/app';
    const ca = { tlsClientCertData: 'CERT', tlsClientCertKey: 'KEY' };
    for (const access of [
      { url, password: 'pw' },
      { url, bearerToken: 'tok' },
      { url, ...ca },
    ]) {
      const creds = await gitCredentials(root, access);
      assert.deepEqual(creds.config, [['http.followRedirects', 'false']], JSON.stringify(Object.keys(access)));
      await creds.dispose();
    }
    for (const access of [undefined, { url }, { url, username: 'alice' }, { url: 'git@git.example.com:org/app' }]) {
      const creds = await gitCredentials(root, access);
      assert.deepEqual(creds.config, [], 'without a credential git keeps its default');
      await creds.dispose();
    }
    // GIT_CONFIG_COUNT entries, appended last, win over the file of GIT_CONFIG_GLOBAL and earlier entries.
    const file = path.join(root, 'gitconfig');
    await writeFile(file, '[http]\n\tfollowRedirects = initial\n');
    const base = { ...process.env, GIT_CONFIG_GLOBAL: file, GIT_CONFIG_NOSYSTEM: '1' };
    const env = withGitConfig(withGitConfig({ ...base, GIT_CONFIG_COUNT: '0' }, [['http.followRedirects', 'true']]), [
      ['http.followRedirects', 'false'],
    ]);
    const got = spawnSync('git', ['config', '--get', 'http.followRedirects'], { env, encoding: 'utf8', cwd: root });
    assert.equal(got.stdout.trim(), 'false', got.stderr);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('a credential identity is a keyed digest: different credentials differ, none is anonymous', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'impersync-credid-'));
  try {
    const a = await credentialId(dir, { url: 'u', password: 'one' });
    const b = await credentialId(dir, { url: 'u', password: 'two' });
    assert.notEqual(a, b);
    assert.match(a, /^[0-9a-f]{20}$/);
    assert.equal(await credentialId(dir, undefined), ANONYMOUS);
    assert.equal(await credentialId(dir, { url: 'u' }), ANONYMOUS);
    assert.equal(await credentialId(dir, { url: 'other', password: 'one' }), a, 'the URL is keyed elsewhere');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
