// A repository's network settings as Argo CD honours them (issue 13): `proxy` and `noProxy` for Git
// over HTTPS and Helm repositories, `forceHttpBasicAuth` for a Git server that never challenges, and
// `insecure` for Git over HTTPS, and a client certificate for a Helm repository. Each is checked against the servers it changes: a loopback proxy
// that writes down every tunnel asked of it, a proxy that is down (the request must fail, so the
// setting is not ignored), and a server that answers 404 rather than 401 to a request without the
// credential.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RepositoryAccess } from '../../src/api/repository.ts';
import { SourceRenderer } from '../../src/source/index.ts';
import { TestRepo, startGitHttpServer, type GitHttpServer } from '../support/git.ts';
import { chartArchive, startHelmRepo, type HelmRepoServer } from '../support/helm.ts';
import { startProxy, type TestProxy } from '../support/proxy.ts';
import { testCA } from '../support/tls.ts';
import { toolsDir } from './tools.ts';
import { refused } from '../support/renderer.ts';

const GIT_USER = { username: 'alice', password: 'proxy-test-Pa55word' };
const HELM_USER = { username: 'charts', password: 'proxy-test-helm-Pa55' };
const files = { 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: networked\n' };

let repo: TestRepo;
let git: GitHttpServer;
let quiet: GitHttpServer;
let helm: HelmRepoServer;
let mtlsHelm: HelmRepoServer;
let proxy: TestProxy;
let downProxy: string;
let cacheDir: string;
let renderer: SourceRenderer;

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

before(async () => {
  repo = await TestRepo.create();
  await repo.commit(files);
  const ca = testCA();
  git = await startGitHttpServer('/', { tls: { cert: ca.cert, key: ca.key }, auth: GIT_USER });
  quiet = await startGitHttpServer('/', { tls: { cert: ca.cert, key: ca.key }, auth: GIT_USER, noChallenge: true });
  helm = await startHelmRepo({ auth: HELM_USER });
  helm.setCharts([{ name: 'guestbook', version: '0.1.0', archive: chartArchive('guestbook', '0.1.0') }]);
  mtlsHelm = await startHelmRepo({ requireClientCert: true });
  mtlsHelm.setCharts([{ name: 'guestbook', version: '0.1.0', archive: chartArchive('guestbook', '0.1.0') }]);
  proxy = await startProxy();
  downProxy = `http://127.0.0.1:${await closedPort()}`;
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-network-'));
  renderer = new SourceRenderer({ cacheDir, toolsDir: toolsDir() });
});

after(async () => {
  await Promise.all([git.close(), quiet.close(), helm.close(), mtlsHelm.close(), proxy.close()]);
  await repo.remove();
  await rm(cacheDir, { recursive: true, force: true });
});

const repoPath = () => repo.dir.split('/').map(encodeURIComponent).join('/');
const gitAccess = (server: GitHttpServer, extra: Partial<RepositoryAccess> = {}): RepositoryAccess => ({
  url: `${server.baseURL}${repoPath()}`,
  ...GIT_USER,
  caCerts: testCA().caCert,
  ...extra,
});
const helmAccess = (extra: Partial<RepositoryAccess> = {}): RepositoryAccess => ({
  url: helm.url,
  type: 'helm',
  ...HELM_USER,
  caCerts: testCA().caCert,
  ...extra,
});

function renderGit(repository: RepositoryAccess) {
  return renderer.render({
    source: { repoURL: repository.url, path: 'app', targetRevision: 'main' },
    appName: 'networked',
    repository,
  });
}

function renderChart(repository: RepositoryAccess) {
  return renderer.render({
    source: { repoURL: repository.url, chart: 'guestbook', targetRevision: '0.1.0' },
    appName: 'networked',
    destinationNamespace: 'ns',
    repository,
  });
}

const hostPort = (url: string) => new URL(url).host;

describe('proxy and noProxy', () => {
  it('Git over HTTPS goes through the proxy the repository names', async () => {
    const before = proxy.connects().length;
    const out = await renderGit(gitAccess(git, { proxy: proxy.url }));
    assert.equal(out.objects[0]?.object.metadata.name, 'networked');
    const tunnels = proxy.connects().slice(before);
    assert.ok(tunnels.includes(hostPort(git.baseURL)), `tunnels: ${JSON.stringify(tunnels)}`);
  });

  it('Git over HTTPS with a proxy that is down fails: the setting is not ignored', async () => {
    const err = await refused(renderGit(gitAccess(git, { proxy: downProxy })));
    assert.equal(err.reason, 'RepositoryUnreachable');
    assert.ok(!err.message.includes(GIT_USER.password));
  });

  it('a Git host listed in noProxy is reached directly', async () => {
    const [tunnels, served] = [proxy.connects().length, git.requests()];
    await renderGit(gitAccess(git, { proxy: downProxy, noProxy: 'example.com,127.0.0.1' }));
    assert.equal(proxy.connects().length, tunnels);
    assert.ok(git.requests() > served, 'the server was asked');
  });

  it("a Helm repository's index and chart go through its proxy", async () => {
    const before = proxy.connects().length;
    const out = await renderChart(helmAccess({ proxy: proxy.url }));
    assert.equal(out.revision, '0.1.0');
    assert.ok(proxy.connects().slice(before).includes(hostPort(helm.url)));
    const err = await refused(renderChart(helmAccess({ proxy: downProxy })));
    assert.equal(err.reason, 'RepositoryUnreachable');
  });

  it('a Helm host listed in noProxy is reached directly', async () => {
    const [tunnels, served] = [proxy.connects().length, helm.requests.length];
    const out = await renderChart(helmAccess({ proxy: downProxy, noProxy: '.example.com, 127.0.0.1' }));
    assert.equal(out.revision, '0.1.0');
    assert.equal(proxy.connects().length, tunnels);
    assert.ok(helm.requests.length > served, 'the repository was asked');
  });
});

describe('forceHttpBasicAuth and insecure for Git over HTTPS', () => {
  it('a server that never challenges is sent the credentials up front only with forceHttpBasicAuth', async () => {
    const err = await refused(renderGit(gitAccess(quiet)));
    assert.equal(err.reason, 'RepositoryUnreachable');
    const out = await renderGit(gitAccess(quiet, { forceHttpBasicAuth: true }));
    assert.equal(out.objects.length, 1);
  });

  it('insecure skips verifying a server certificate no CA vouches for', async () => {
    await refused(renderGit(gitAccess(git, { caCerts: undefined })));
    const out = await renderGit(gitAccess(git, { caCerts: undefined, insecure: true }));
    assert.equal(out.objects.length, 1);
  });
});

describe('a client certificate for a Helm repository', () => {
  it('is presented to a server that requires one; without it the server refuses', async () => {
    const ca = testCA();
    const access: RepositoryAccess = { url: mtlsHelm.url, type: 'helm', caCerts: ca.caCert };
    const err = await refused(renderChart(access));
    assert.equal(err.reason, 'RepositoryUnreachable');
    const out = await renderChart({ ...access, tlsClientCertData: ca.clientCert, tlsClientCertKey: ca.clientKey });
    assert.equal(out.revision, '0.1.0');
    assert.ok(!err.message.includes('PRIVATE KEY'));
  });
});
