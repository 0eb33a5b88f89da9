// Charts from Helm repositories and OCI registries, rendered by the real helm (issue 13): a chart
// repository over HTTPS with basic auth and a private CA, and the CNCF distribution registry with
// htpasswd and TLS. Versions resolve as Argo CD resolves them; each defence has its attack (a wrong
// password, a missing CA, a digest that does not match, a chart URL on another host that must get no
// credential, archives with links and paths out of the chart).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RepositoryAccess } from '../../src/api/repository.ts';
import { SourceRenderer } from '../../src/source/index.ts';
import { maxVersion } from '../../src/source/versions.ts';
import {
  chartArchive,
  helmPush,
  startHelmRepo,
  startRegistry,
  tarGz,
  type HelmRepoServer,
  type TestRegistry,
} from '../support/helm.ts';
import { testCA } from '../support/tls.ts';
import { toolsDir } from './tools.ts';
import { refused } from '../support/renderer.ts';

const USER = { username: 'chartuser', password: 'chart-Pa55-secret' };
let repo: HelmRepoServer;
let foreign: HelmRepoServer;
let registry: TestRegistry;
let cacheDir: string;
let renderer: SourceRenderer;

before(async () => {
  repo = await startHelmRepo({ auth: USER });
  foreign = await startHelmRepo({ plain: true });
  repo.setCharts([
    { name: 'guestbook', version: '0.1.0', archive: chartArchive('guestbook', '0.1.0') },
    { name: 'guestbook', version: '0.2.0', archive: chartArchive('guestbook', '0.2.0') },
    { name: 'guestbook', version: '1.0.0-rc.1', archive: chartArchive('guestbook', '1.0.0-rc.1') },
    { name: 'tampered', version: '1.0.0', archive: chartArchive('tampered', '1.0.0'), digest: 'a'.repeat(64) },
    {
      name: 'elsewhere',
      version: '1.0.0',
      archive: chartArchive('elsewhere', '1.0.0'),
      url: `${foreign.url}/elsewhere-1.0.0.tgz`,
    },
    {
      name: 'linked',
      version: '1.0.0',
      archive: tarGz([
        { path: 'linked/Chart.yaml', content: 'apiVersion: v2\nname: linked\nversion: 1.0.0\n' },
        { path: 'linked/templates/x.yaml', type: '2', linkTo: '/etc/passwd' },
      ]),
    },
    {
      name: 'escaping',
      version: '1.0.0',
      archive: tarGz([{ path: 'escaping/../../outside.yaml', content: 'x: 1\n' }]),
    },
  ]);
  foreign.setCharts([{ name: 'elsewhere', version: '1.0.0', archive: chartArchive('elsewhere', '1.0.0') }]);
  registry = await startRegistry(USER);
  const helm = path.join(toolsDir(), 'helm');
  await helmPush(helm, chartArchive('ocichart', '1.2.0'), 'ocichart', '1.2.0', registry.host, USER);
  await helmPush(helm, chartArchive('ocichart', '1.3.0'), 'ocichart', '1.3.0', registry.host, USER);
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-charts-'));
  renderer = new SourceRenderer({ cacheDir, toolsDir: toolsDir() });
});

after(async () => {
  await Promise.all([repo.close(), foreign.close(), registry.close()]);
  await rm(cacheDir, { recursive: true, force: true });
});

const helmAccess = (extra: Partial<RepositoryAccess> = {}): RepositoryAccess => ({
  url: repo.url,
  type: 'helm',
  ...USER,
  caCerts: testCA().caCert,
  ...extra,
});

function renderChart(chart: string, targetRevision: string, repository?: RepositoryAccess, repoURL = repo.url) {
  return renderer.render({
    source: { repoURL, chart, targetRevision },
    appName: 'app',
    destinationNamespace: 'ns',
    kubeVersion: '1.31.2',
    apiVersions: ['v1', 'apps/v1', 'apps/v1/Deployment'],
    ...(repository ? { repository } : {}),
  });
}

describe('versions as Argo CD resolves targetRevision', () => {
  const tags = ['0.1.0', '0.2.0', 'v0.3', '1.0.0-rc.1', '1.0.0', '2.0.0'];
  it('an exact version is returned as written; a constraint gives the highest match in its original text', () => {
    assert.equal(maxVersion('0.1.0', tags), '0.1.0');
    assert.equal(maxVersion('>=0.1.0, <1.0.0', tags), 'v0.3');
    assert.equal(maxVersion('^1', tags), '1.0.0');
    assert.equal(maxVersion('*', tags), '2.0.0');
    assert.equal(maxVersion('>=0.1 <2 !=1.0.0', tags), 'v0.3');
  });
  it('a prerelease matches only a comparator that names one (Masterminds)', () => {
    assert.equal(maxVersion('>=1.0.0-0', ['1.0.0-rc.1']), '1.0.0-rc.1');
    assert.throws(() => maxVersion('>=0.5', ['1.0.0-rc.1']), /version matching constraint not found in 1 tags/);
  });
  it('neither a version nor a constraint is looked up as a tag', () => {
    assert.equal(maxVersion('latest', ['latest']), 'latest');
    assert.throws(() => maxVersion('not a version', []), /invalid revision: failed to determine semver constraint/);
  });
});

describe('a Helm repository over HTTPS with basic auth', () => {
  it('renders an exact version with the destination .Capabilities, its revision the version', async () => {
    const out = await renderChart('guestbook', '0.1.0', helmAccess());
    assert.equal(out.revision, '0.1.0');
    assert.equal(out.sourceType, 'Helm');
    const cm = out.objects[0]?.object as unknown as { metadata: { name: string }; data: Record<string, string> };
    assert.equal(cm.metadata.name, 'guestbook-app');
    assert.equal(cm.data['version'], '0.1.0');
    assert.equal(cm.data['kube'], 'v1.31.2');
    assert.equal(cm.data['hasApps'], 'true');
  });

  it('resolves a range to the highest matching version, prereleases left out', async () => {
    assert.equal((await renderChart('guestbook', '>=0.1.0 <2.0.0', helmAccess())).revision, '0.2.0');
  });

  it('fetches the index once per repository and credential within the allowed age', async () => {
    const source = { repoURL: repo.url, chart: 'guestbook', targetRevision: '*' };
    await renderer.resolveRevision({ source, repository: helmAccess() });
    const start = renderer.indexFetches;
    for (let i = 0; i < 10; i++)
      await renderer.resolveRevision({ source, repository: helmAccess(), revisionMaxAgeMs: 60_000 });
    assert.equal(renderer.indexFetches - start, 0);
    await renderer.resolveRevision({ source, repository: helmAccess() });
    assert.equal(renderer.indexFetches - start, 1);
  });

  it('a wrong password, no credential and a missing CA end in clear errors', async () => {
    const wrong = await refused(renderChart('guestbook', '0.1.0', helmAccess({ password: 'wrong' })));
    assert.match(wrong.message, /Helm repository 'https:\/\/127\.0\.0\.1:\d+' not reachable: the server answered 401/);
    assert.ok(!wrong.message.includes('wrong'.repeat(1) + '@'));
    const none = await refused(renderChart('guestbook', '0.1.0', { url: repo.url, caCerts: testCA().caCert }));
    assert.match(none.message, /401/);
    const noCA = await refused(renderChart('guestbook', '0.1.0', helmAccess({ caCerts: undefined })));
    assert.equal(noCA.reason, 'RepositoryUnreachable');
    assert.match(noCA.message, /certificate|self.signed|UNABLE_TO_VERIFY/i);
  });

  it('an archive whose digest is not the index one is refused', async () => {
    const err = await refused(renderChart('tampered', '1.0.0', helmAccess()));
    assert.match(err.message, /sha256 digest .* is not the index's a{64}/);
  });

  it('a chart URL on another host gets no credential (helm.passCredentials off)', async () => {
    const before = foreign.requests.length;
    await renderChart('elsewhere', '1.0.0', helmAccess());
    const got = foreign.requests.slice(before);
    assert.ok(got.length > 0, 'the chart came from the other host');
    assert.ok(
      got.every((r) => r.authorization === undefined),
      `credentials went to another host: ${JSON.stringify(got)}`,
    );
  });

  it('archives with a symlink or a path out of the chart are refused', async () => {
    const link = await refused(renderChart('linked', '1.0.0', helmAccess()));
    assert.match(link.message, /holds a symlink \(linked\/templates\/x\.yaml\)/);
    const out = await refused(renderChart('escaping', '1.0.0', helmAccess()));
    assert.match(out.message, /holds a path outside the archive/);
  });

  it('a version unpacked before is not downloaded again; each render reads the index once', async () => {
    const count = (since: number, p: string) =>
      repo.requests.slice(since).filter((r) => r.path === p && r.authorization !== undefined).length;
    const first = repo.requests.length;
    await renderChart('guestbook', '>=0.1.0 <0.2.0', helmAccess());
    assert.equal(count(first, '/index.yaml'), 1, 'the version is resolved and found in one read of the index');
    const second = repo.requests.length;
    const again = await renderChart('guestbook', '>=0.1.0 <0.2.0', helmAccess());
    assert.equal(again.revision, '0.1.0');
    assert.deepEqual([count(second, '/index.yaml'), count(second, '/guestbook-0.1.0.tgz')], [1, 0]);
  });

  it("an index that claims the digest of another repository's chart gets its own archive, not that chart", async () => {
    // Two repositories read with no credential: the genuine one's chart is unpacked first.
    const genuine = await startHelmRepo({ plain: true });
    const hostile = await startHelmRepo({ plain: true });
    try {
      const archive = chartArchive('private', '1.0.0', { 'values.yaml': 'greeting: the genuine chart\n' });
      const digest = createHash('sha256').update(archive).digest('hex');
      genuine.setCharts([{ name: 'private', version: '1.0.0', archive }]);
      hostile.setCharts([{ name: 'private', version: '1.0.0', archive: chartArchive('private', '1.0.0'), digest }]);
      const got = await renderChart('private', '1.0.0', undefined, genuine.url);
      assert.equal(
        (got.objects[0]?.object as unknown as { data: Record<string, string> }).data['greeting'],
        'the genuine chart',
      );
      const err = await refused(renderChart('private', '1.0.0', undefined, hostile.url));
      assert.match(err.message, new RegExp(`sha256 digest [0-9a-f]{64} is not the index's ${digest}`));
      assert.ok(
        hostile.requests.some((r) => r.path === '/private-1.0.0.tgz'),
        'the hostile archive was fetched',
      );
    } finally {
      await Promise.all([genuine.close(), hostile.close()]);
    }
  });

  it('the same archive served under two chart names renders under each name', async () => {
    const one = await startHelmRepo({ plain: true });
    const other = await startHelmRepo({ plain: true });
    try {
      // Byte for byte the same archive (one digest), named alpha by one repository and beta by the other.
      const archive = chartArchive('same', '1.0.0');
      one.setCharts([{ name: 'alpha', version: '1.0.0', archive }]);
      other.setCharts([{ name: 'beta', version: '1.0.0', archive }]);
      const a = await renderChart('alpha', '1.0.0', undefined, one.url);
      const b = await renderChart('beta', '1.0.0', undefined, other.url);
      assert.deepEqual(
        [a, b].map((r) => (r.objects[0]?.object as unknown as { metadata: { name: string } }).metadata.name),
        ['same-app', 'same-app'],
      );
    } finally {
      await Promise.all([one.close(), other.close()]);
    }
  });

  it('an unpacked chart is never reused for a request with another credential', async () => {
    await renderChart('guestbook', '0.2.0', helmAccess());
    const err = await refused(renderChart('guestbook', '0.2.0', { url: repo.url, caCerts: testCA().caCert }));
    assert.match(err.message, /401/);
  });
});

describe('an OCI registry with htpasswd and TLS', () => {
  const ociAccess = (extra: Partial<RepositoryAccess> = {}): RepositoryAccess => ({
    url: `${registry.host}/charts`,
    type: 'helm',
    enableOCI: true,
    ...USER,
    caCerts: testCA().caCert,
    ...extra,
  });

  it('pulls a chart pushed by helm, an exact tag and a range', async () => {
    const exact = await renderChart('ocichart', '1.2.0', ociAccess(), `${registry.host}/charts`);
    assert.equal(exact.revision, '1.2.0');
    assert.equal((exact.objects[0]?.object as unknown as { data: Record<string, string> }).data['version'], '1.2.0');
    const range = await renderChart('ocichart', '~1', ociAccess(), `${registry.host}/charts`);
    assert.equal(range.revision, '1.3.0');
  });

  it('an oci:// repoURL is an OCI source whose chart is rendered at its path', async () => {
    const out = await renderer.render({
      source: { repoURL: `oci://${registry.host}/charts/ocichart`, targetRevision: '1.3.0', path: '.' },
      appName: 'app',
      repository: { ...ociAccess(), url: `oci://${registry.host}/charts/ocichart` },
    });
    assert.equal(out.sourceType, 'Helm');
    assert.equal((out.objects[0]?.object as unknown as { data: Record<string, string> }).data['version'], '1.3.0');
  });

  it('a wrong password and a missing CA end in clear errors', async () => {
    const wrong = await refused(
      renderChart('ocichart', '1.2.0', ociAccess({ password: 'nope' }), `${registry.host}/charts`),
    );
    assert.match(wrong.message, /not reachable: the server answered 401/);
    const noCA = await refused(
      renderChart('ocichart', '1.2.0', ociAccess({ caCerts: undefined }), `${registry.host}/charts`),
    );
    assert.match(noCA.message, /certificate|self.signed|UNABLE_TO_VERIFY/i);
  });
});

void createHash;
