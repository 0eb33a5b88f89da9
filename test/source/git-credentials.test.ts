// Private Git repositories with the real git (issue 13): HTTPS with basic auth, a bearer token or a
// client certificate behind a private CA, and SSH with a key and known hosts. Each defence has its
// attack: a wrong password, a missing CA, an unknown host key, a request without the credential
// after one with it (never served from the clone made with it), and the git processes' argv and
// environment, which never hold a secret.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RepositoryAccess } from '../../src/api/repository.ts';
import { SourceRenderer } from '../../src/source/index.ts';
import { TestRepo, startGitHttpServer, type GitHttpServer } from '../support/git.ts';
import { sshKeyPair, startGitSshServer, type GitSshServer } from '../support/ssh.ts';
import { testCA } from '../support/tls.ts';
import { refused } from '../support/renderer.ts';

const PASSWORD = 's3cret-Pa55word-xyzzy';
const TOKEN = 'bearer-token-0123456789';
const files = { 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: private\ndata:\n  a: "1"\n' };

let repo: TestRepo;
let basic: GitHttpServer;
let bearer: GitHttpServer;
let mtls: GitHttpServer;
let sshServer: GitSshServer;
const client = sshKeyPair();
let cacheDir: string;
let shimLog: string;
let renderer: SourceRenderer;

before(async () => {
  repo = await TestRepo.create();
  await repo.commit(files);
  const ca = testCA();
  const tls = { cert: ca.cert, key: ca.key };
  basic = await startGitHttpServer('/', { tls, auth: { username: 'alice', password: PASSWORD } });
  bearer = await startGitHttpServer('/', { tls, auth: { bearer: TOKEN } });
  mtls = await startGitHttpServer('/', { tls: { ...tls, ca: ca.caCert, requireClientCert: true } });
  sshServer = await startGitSshServer(path.dirname(repo.dir), client.publicKey);
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-creds-'));
  // A git that writes down its argv and environment before running the real one.
  shimLog = path.join(cacheDir, 'git-calls.log');
  const shim = path.join(cacheDir, 'git-shim');
  await writeFile(shim, `#!/bin/sh\n{ printf 'ARGV %s\\n' "$*"; env; } >> '${shimLog}'\nexec git "$@"\n`);
  await chmod(shim, 0o755);
  renderer = new SourceRenderer({ cacheDir: path.join(cacheDir, 'cache'), toolPaths: { git: shim } });
});

after(async () => {
  await Promise.all([basic.close(), bearer.close(), mtls.close(), sshServer.close()]);
  await repo.remove();
  await rm(cacheDir, { recursive: true, force: true });
});

const pathOf = (r: TestRepo) => r.dir.split('/').map(encodeURIComponent).join('/');

function render(repoURL: string, repository?: RepositoryAccess) {
  return renderer.render({
    source: { repoURL, path: 'app', targetRevision: 'main' },
    appName: 'private',
    ...(repository ? { repository } : {}),
  });
}

describe('Git over HTTPS with a private CA', () => {
  it('clones with basic auth when the CA is given, and the secret is in no argv or environment', async () => {
    const url = `${basic.baseURL}${pathOf(repo)}`;
    const out = await render(url, { url, username: 'alice', password: PASSWORD, caCerts: testCA().caCert });
    assert.equal(out.objects[0]?.object.metadata.name, 'private');
    const log = await readFile(shimLog, 'utf8');
    assert.match(log, /ARGV ls-remote/);
    assert.ok(!log.includes(PASSWORD), 'the password reached a git argv or environment');
  });

  it('a wrong password ends in a clear error that does not hold it', async () => {
    const url = `${basic.baseURL}${pathOf(repo)}`;
    const err = await refused(
      render(url, { url, username: 'alice', password: 'wrong-password', caCerts: testCA().caCert }),
    );
    assert.equal(err.reason, 'RepositoryUnreachable');
    assert.match(err.message, /not reachable: .*(Authentication failed|could not read|403|401)/is);
    assert.ok(!err.message.includes('wrong-password'));
  });

  it('without the CA the server certificate is refused', async () => {
    const url = `${basic.baseURL}${pathOf(repo)}`;
    const err = await refused(render(url, { url, username: 'alice', password: PASSWORD }));
    assert.equal(err.reason, 'RepositoryUnreachable');
    assert.match(err.message, /certificate/i);
  });

  it('a request without the credential is not served from the clone made with it', async () => {
    const url = `${basic.baseURL}${pathOf(repo)}`;
    await render(url, { url, username: 'alice', password: PASSWORD, caCerts: testCA().caCert });
    // Same URL, same revision, the CA but no password: the answer must come from the server, which refuses.
    const err = await refused(render(url, { url, caCerts: testCA().caCert }));
    assert.equal(err.reason, 'RepositoryUnreachable');
    // And by commit SHA, which needs no ls-remote when the clone has it: still refused.
    const sha = repo.head();
    const bySha = await refused(
      renderer.render({
        source: { repoURL: url, path: 'app', targetRevision: sha },
        appName: 'private',
        repository: { url, caCerts: testCA().caCert },
      }),
    );
    assert.match(bySha.reason, /RepositoryUnreachable|RevisionNotFound/);
  });

  it('a bearer token goes in a header scoped to the repository host', async () => {
    const url = `${bearer.baseURL}${pathOf(repo)}`;
    const out = await render(url, { url, bearerToken: TOKEN, caCerts: testCA().caCert });
    assert.equal(out.objects.length, 1);
    assert.ok(!(await readFile(shimLog, 'utf8')).includes(TOKEN));
  });

  it('a client certificate (mutual TLS) is presented from a private file', async () => {
    const url = `${mtls.baseURL}${pathOf(repo)}`;
    const ca = testCA();
    const out = await render(url, {
      url,
      caCerts: ca.caCert,
      tlsClientCertData: ca.clientCert,
      tlsClientCertKey: ca.clientKey,
    });
    assert.equal(out.objects.length, 1);
    const err = await refused(render(url, { url, caCerts: ca.caCert }));
    assert.equal(err.reason, 'RepositoryUnreachable');
    assert.ok(!(await readFile(shimLog, 'utf8')).includes('PRIVATE KEY'));
  });

  it('refs are listed once per repository and credential within the allowed age', async () => {
    const url = `${basic.baseURL}${pathOf(repo)}`;
    const access = { url, username: 'alice', password: PASSWORD, caCerts: testCA().caCert };
    const source = { repoURL: url, path: 'app', targetRevision: 'main' };
    const start = renderer.lsRemoteCount;
    await renderer.resolveRevision({ source, repository: access });
    for (let i = 0; i < 5; i++)
      await renderer.resolveRevision({ source, repository: access, revisionMaxAgeMs: 60_000 });
    assert.equal(renderer.lsRemoteCount - start, 1);
    // Another credential for the same URL has refs of its own.
    await refused(
      renderer.resolveRevision({ source, repository: { ...access, password: 'other' }, revisionMaxAgeMs: 60_000 }),
    );
    const before = renderer.lsRemoteCount;
    await renderer.resolveRevision({ source, repository: access });
    assert.equal(renderer.lsRemoteCount - before, 1, 'no age allowed: the remote is asked again');
  });
});

describe('Git over SSH with known hosts', () => {
  it('clones with the key when the host key is known', async () => {
    const url = sshServer.url(repo.dir);
    const out = await render(url, {
      url,
      sshPrivateKey: client.privateKey,
      knownHosts: `${sshServer.knownHostsLine}\n`,
    });
    assert.equal(out.objects[0]?.object.metadata.name, 'private');
    assert.ok(!(await readFile(shimLog, 'utf8')).includes('OPENSSH PRIVATE KEY'));
  });

  it('an unknown host key refuses the connection', async () => {
    const url = sshServer.url(repo.dir);
    const other = sshKeyPair('someone-else').publicKey.split(' ');
    const err = await refused(
      render(url, {
        url,
        sshPrivateKey: client.privateKey,
        knownHosts: `[127.0.0.1]:${sshServer.port} ${other[0]} ${other[1]}\n`,
      }),
    );
    assert.equal(err.reason, 'RepositoryUnreachable');
    assert.match(err.message, /Host key verification failed/);
    const none = await refused(render(url, { url, sshPrivateKey: client.privateKey }));
    assert.match(none.message, /Host key verification failed/);
  });

  it('insecureIgnoreHostKey skips the check, as Argo CD does', async () => {
    const url = sshServer.url(repo.dir);
    const out = await render(url, { url, sshPrivateKey: client.privateKey, insecureIgnoreHostKey: true });
    assert.equal(out.objects.length, 1);
  });

  it('a key the server does not accept is refused', async () => {
    const url = sshServer.url(repo.dir);
    const err = await refused(
      render(url, { url, sshPrivateKey: sshKeyPair().privateKey, knownHosts: `${sshServer.knownHostsLine}\n` }),
    );
    assert.match(err.message, /Permission denied|Could not read from remote/);
  });
});
