// A repository's credentials stay on its origin when the server redirects (issue "Repository
// credentials go only where they belong"). Each case has a recording HTTPS server on loopback that
// redirects to a second recording server, another origin (another port), which serves what it is
// asked for as an attacker's would, so that a client that followed would go on talking to it: the
// second must see no credential, and the user is told where the repository went. git runs with
// redirects off whenever it carries a credential; a redirect within the origin is followed by
// asking git again at the new URL, with redirects still off.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RepositoryAccess } from '../../src/api/repository.ts';
import { createHash } from 'node:crypto';
import { HelmRepositories } from '../../src/source/helm-repo.ts';
import { SourceRenderer } from '../../src/source/index.ts';
import { OciRegistries, ociReference } from '../../src/source/oci.ts';
import { TestRepo, startGitHttpServer, type GitHttpServer } from '../support/git.ts';
import { chartArchive, startHelmRepo, type HelmRepoServer } from '../support/helm.ts';
import { refused } from '../support/renderer.ts';
import { testCA } from '../support/tls.ts';

const TOKEN = 'redirect-bearer-token-0123456789';
const USER = { username: 'alice', password: 'redirect-Pa55word-xyzzy' };
const files = { 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moved\n' };

let repo: TestRepo;
let cacheDir: string;
let renderer: SourceRenderer;
const servers: Array<GitHttpServer | HelmRepoServer> = [];

/** A git server over HTTPS with the test CA (recording every request's Authorization). */
async function gitServer(opts: Parameters<typeof startGitHttpServer>[1] = {}): Promise<GitHttpServer> {
  const ca = testCA();
  const server = await startGitHttpServer('/', { tls: { cert: ca.cert, key: ca.key }, ...opts });
  servers.push(server);
  return server;
}

before(async () => {
  repo = await TestRepo.create();
  await repo.commit(files);
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-redirects-'));
  renderer = new SourceRenderer({ cacheDir });
});

after(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await repo.remove();
  await rm(cacheDir, { recursive: true, force: true });
});

const repoPath = () => repo.dir.split('/').map(encodeURIComponent).join('/');

function render(repository: RepositoryAccess) {
  return renderer.render({
    source: { repoURL: repository.url, path: 'app', targetRevision: 'main' },
    appName: 'moved',
    repository,
  });
}

/** A server that sends every request to `target` (another origin), and `target`, serving the repository openly. */
async function movedAway(opts: Parameters<typeof startGitHttpServer>[1] = {}) {
  const target = await gitServer();
  const from = await gitServer({ ...opts, redirects: [{ prefix: '/', to: `${target.baseURL}/` }] });
  return { from, target, url: `${from.baseURL}${repoPath()}` };
}

/** The refusal a redirect to another origin must end in: both origins named, no credential shown. */
function assertCrossOrigin(message: string, from: GitHttpServer, target: GitHttpServer, secret: string): void {
  assert.ok(message.includes(`${from.baseURL} -> ${target.baseURL}`), message);
  assert.match(message, /redirects to another origin/);
  assert.match(message, /set the repository's URL to where it now lives/);
  assert.ok(!message.includes(secret), 'the message holds the credential');
}

const sent = (s: GitHttpServer) => s.authorizations().filter((a) => a !== undefined);
const sentHelm = (s: HelmRepoServer) => s.requests.filter((r) => r.authorization !== undefined);

/** Waits for `p` either way: what the servers received is checked before how it ended. */
const settled = (p: Promise<unknown>): Promise<unknown> => p.catch(() => undefined);

describe('git with a credential does not follow a redirect to another origin', () => {
  it('a bearer token is not sent to where the repository redirects', async () => {
    const { from, target, url } = await movedAway();
    const outcome = render({ url, bearerToken: TOKEN, caCerts: testCA().caCert });
    await settled(outcome);
    assert.deepEqual(sent(target), [], 'the other origin received a credential');
    const err = await refused(outcome);
    assert.equal(err.reason, 'RepositoryUnreachable');
    assert.ok(sent(from).includes(`Bearer ${TOKEN}`), 'the repository itself was sent the token');
    assertCrossOrigin(err.message, from, target, TOKEN);
  });

  it('forceHttpBasicAuth credentials are not sent to where the repository redirects', async () => {
    const { from, target, url } = await movedAway();
    const outcome = render({ url, ...USER, forceHttpBasicAuth: true, caCerts: testCA().caCert });
    await settled(outcome);
    assert.deepEqual(sent(target), [], 'the other origin received a credential');
    const err = await refused(outcome);
    assert.equal(sent(from).length > 0, true, 'the repository itself was sent the credentials');
    assertCrossOrigin(err.message, from, target, USER.password);
  });

  it('a username and password are not sent to where the repository redirects, and the user is told', async () => {
    const { from, target, url } = await movedAway();
    const outcome = render({ url, ...USER, caCerts: testCA().caCert });
    await settled(outcome);
    assert.deepEqual(sent(target), [], 'the other origin received a credential');
    const err = await refused(outcome);
    assertCrossOrigin(err.message, from, target, USER.password);
  });

  it('a server that redirects only requests with the password is asked with it, on its own origin', async () => {
    const { from, target, url } = await movedAway({ auth: USER });
    const outcome = render({ url, ...USER, caCerts: testCA().caCert });
    await settled(outcome);
    assert.deepEqual(sent(target), [], 'the other origin received a credential');
    assertCrossOrigin((await refused(outcome)).message, from, target, USER.password);
  });

  it('without a credential git follows the redirect, as git does', async () => {
    const { target, url } = await movedAway();
    const out = await render({ url, caCerts: testCA().caCert });
    assert.equal(out.objects[0]?.object.metadata.name, 'moved');
    assert.ok(target.requests() > 0, 'the redirect was followed');
  });
});

describe('a redirect within the origin', () => {
  it('is followed at the new URL, the token staying on the origin', async () => {
    const server = await gitServer({ auth: { bearer: TOKEN }, redirects: [{ prefix: '/old/', to: '/' }] });
    const out = await render({
      url: `${server.baseURL}/old${repoPath()}`,
      bearerToken: TOKEN,
      caCerts: testCA().caCert,
    });
    assert.equal(out.objects[0]?.object.metadata.name, 'moved');
    assert.ok(server.requestLog().some((r) => r.startsWith(`POST ${repoPath()}/git-upload-pack`)));
  });

  it('that redirects again to another origin is refused there, not followed', async () => {
    const target = await gitServer();
    const server = await gitServer({
      redirects: [
        { prefix: '/old/', to: '/hop/' },
        { prefix: '/hop/', to: `${target.baseURL}/` },
      ],
    });
    const outcome = render({ url: `${server.baseURL}/old${repoPath()}`, bearerToken: TOKEN, caCerts: testCA().caCert });
    await settled(outcome);
    assert.deepEqual(sent(target), [], 'the other origin received a credential');
    const err = await refused(outcome);
    assertCrossOrigin(err.message, server, target, TOKEN);
    assert.ok(err.message.includes(`${server.baseURL}/hop${repoPath()}`), err.message);
  });
});

const HELM_USER = { username: 'charts', password: 'redirect-helm-Pa55' };
const archive = chartArchive('guestbook', '0.1.0');

/** A chart repository at another origin (its requests recorded), open or asking for `auth`. */
async function chartsElsewhere(auth?: typeof HELM_USER): Promise<HelmRepoServer> {
  const charts = await startHelmRepo(auth ? { auth } : {});
  charts.setCharts([{ name: 'guestbook', version: '0.1.0', archive }]);
  servers.push(charts);
  return charts;
}

// The git test server's auth and redirect rules answer before git is involved: here it is the
// front of a Helm repository or registry that sends its requests to another origin.
describe('Helm repositories and OCI registries over HTTP', () => {
  const helm = new HelmRepositories({ credentialId: async () => 'test' });
  const oci = new OciRegistries({
    limits: { maxLayerBytes: 1 << 20, timeoutMs: 10_000 },
    credentialId: async () => 't',
  });

  it("a Helm repository's index redirected to another origin gets no credential there, and a refusal says why", async () => {
    const target = await chartsElsewhere(HELM_USER);
    const from = await gitServer({ redirects: [{ prefix: '/', to: `${target.url}/` }] });
    const access = { url: from.baseURL, type: 'helm' as const, ...HELM_USER, caCerts: testCA().caCert };
    const outcome = helm.resolve(from.baseURL, 'guestbook', '0.1.0', access);
    await settled(outcome);
    assert.deepEqual(sentHelm(target), [], 'the other origin received a credential');
    assert.equal(sent(from).length, 1, 'the repository itself was sent the credentials');
    const err = await refused(outcome);
    assert.equal(err.reason, 'RepositoryUnreachable');
    assert.ok(err.message.includes(`was redirected from ${from.baseURL} to ${target.url}`), err.message);
    assert.match(err.message, /where its credentials are not sent, and answered 401 there/);
    assert.ok(!err.message.includes(HELM_USER.password));
  });

  it('a Helm index that another origin serves openly is read there, without the credential', async () => {
    const target = await chartsElsewhere();
    const from = await gitServer({ redirects: [{ prefix: '/', to: `${target.url}/` }] });
    const access = { url: from.baseURL, type: 'helm' as const, ...HELM_USER, caCerts: testCA().caCert };
    assert.equal(await helm.resolve(from.baseURL, 'guestbook', '0.1.x', access), '0.1.0');
    assert.deepEqual(sentHelm(target), [], 'the other origin received a credential');
  });

  it('an OCI registry that sends its requests to another origin: no credential there, a refusal naming both', async () => {
    const target = await chartsElsewhere(HELM_USER);
    const from = await gitServer({ redirects: [{ prefix: '/', to: `${target.url}/` }] });
    const access = {
      url: `${new URL(from.baseURL).host}/charts`,
      enableOCI: true,
      ...HELM_USER,
      caCerts: testCA().caCert,
    };
    const outcome = oci.tags(ociReference(`${access.url}/guestbook`, access), access);
    await settled(outcome);
    assert.deepEqual(sentHelm(target), [], 'the other origin received a credential');
    assert.ok(sent(from).length > 0, 'the registry itself was sent the credentials');
    const err = await refused(outcome);
    assert.ok(err.message.includes(`was redirected from ${from.baseURL} to ${target.url}`), err.message);
    assert.ok(!err.message.includes(HELM_USER.password));
  });

  it("an OCI registry's blob sent to a CDN is downloaded from there, without the credential", async () => {
    const cdn = await chartsElsewhere();
    const layerDigest = `sha256:${createHash('sha256').update(archive).digest('hex')}`;
    const blob = `/v2/charts/guestbook/blobs/${layerDigest}`;
    const registry = await gitServer({
      auth: HELM_USER,
      redirects: [{ prefix: blob, to: `${cdn.url}/guestbook-0.1.0.tgz` }],
    });
    const access = {
      url: `${new URL(registry.baseURL).host}/charts`,
      enableOCI: true,
      ...HELM_USER,
      caCerts: testCA().caCert,
    };
    const ref = ociReference(`${access.url}/guestbook`, access);
    const manifest = { digest: 'sha256:unused', shown: 'guestbook', layerDigest, mediaType: '' };
    assert.deepEqual(await oci.layer(ref, manifest, access), archive);
    assert.ok(sent(registry).length > 0, 'the registry was sent the credentials');
    assert.deepEqual(sentHelm(cdn), [], 'the CDN received a credential');
  });
});
