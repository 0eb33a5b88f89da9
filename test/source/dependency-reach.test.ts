// Where the renderer may be made to send a request by a chart (issue "Repository credentials go
// only where they belong"), against real loopback servers: a Git chart's dependency in a repository
// the project's sourceRepos do not permit is refused before any request (the renderer's own check,
// whatever the controller let through), whether written as a URL, an `@name` or an oci:// URL; and
// a server that answers junk (an internal address's page) is named, never quoted, in the error.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SourceRenderer, type RenderInput } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { tarGz } from '../support/helm.ts';
import { startRecordingServer, type RecordingServer } from '../support/recorder.ts';
import { refused } from '../support/renderer.ts';
import { toolsDir } from './tools.ts';

const MARKER = 'internal-secret-7f3a';
/** What an internal page might answer: neither YAML nor JSON, with something worth stealing in it. */
const JUNK = `<html>\n  token: ${MARKER}: [unclosed\n</html>\n`;

let internal: RecordingServer;
let junk: RecordingServer;
let repo: TestRepo;
let cacheDir: string;
let renderer: SourceRenderer;

const chartYaml = (repository: string) =>
  `apiVersion: v2\nname: umbrella\nversion: 1.0.0\ndependencies:\n- name: lib\n  version: 0.1.0\n  repository: "${repository}"\n`;
const template = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: umbrella\n';
const brokenChart = tarGz([{ path: 'broken/Chart.yaml', content: JUNK }]);

before(async () => {
  internal = await startRecordingServer(() => ({ body: JUNK }));
  junk = await startRecordingServer((p) => {
    if (p === '/helm/index.yaml') return { body: JUNK };
    if (p === '/archives/index.yaml') {
      const digest = createHash('sha256').update(brokenChart).digest('hex');
      const entries = {
        lib: [{ version: '0.1.0', urls: ['junk.tgz'] }],
        broken: [{ version: '1.0.0', urls: ['broken-1.0.0.tgz'], digest }],
      };
      return { body: JSON.stringify({ apiVersion: 'v1', entries }) };
    }
    if (p === '/archives/broken-1.0.0.tgz') return { body: brokenChart };
    return { body: JUNK };
  });
  repo = await TestRepo.create();
  await repo.commit({
    'url/Chart.yaml': chartYaml(`${internal.url}/charts`),
    'url/templates/cm.yaml': template,
    'named/Chart.yaml': chartYaml('@internal'),
    'named/templates/cm.yaml': template,
    'oci/Chart.yaml': chartYaml(`oci://${internal.host}/charts`),
    'oci/templates/cm.yaml': template,
    'junk-index/Chart.yaml': chartYaml(`${junk.url}/helm`),
    'junk-index/templates/cm.yaml': template,
    'junk-archive/Chart.yaml': chartYaml(`${junk.url}/archives`),
    'junk-archive/templates/cm.yaml': template,
    'junk-manifest/Chart.yaml': chartYaml(`oci://${junk.host}/oci`),
    'junk-manifest/templates/cm.yaml': template,
  });
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-reach-'));
  renderer = new SourceRenderer({ cacheDir, toolsDir: toolsDir() });
});

after(async () => {
  await Promise.all([internal.close(), junk.close()]);
  await repo.remove();
  await rm(cacheDir, { recursive: true, force: true });
});

const input = (p: string, rest: Partial<RenderInput>): RenderInput => ({
  source: { repoURL: repo.url, path: p, targetRevision: 'main' },
  appName: 'app',
  ...rest,
});

describe('a chart dependency in a repository the project does not permit', () => {
  it('as a URL: refused before any request, naming the dependency, the URL and what to do', async () => {
    const url = `${internal.url}/charts`;
    // As if the controller had let it through: the renderer judges it again.
    const err = await refused(
      renderer.render(input('url', { sourceRepos: [repo.url], dependencyRepositories: [{ url }] })),
    );
    assert.equal(err.reason, 'InvalidSource');
    assert.equal(
      err.message,
      `dependency 'lib' of 'url': the project's sourceRepos do not allow '${url}' (no sourceRepos entry matches): add the repository to the AppProject's sourceRepos, or vendor the chart in charts/`,
    );
    assert.deepEqual(internal.requests, [], 'the internal address received no request');
  });

  it("as @name: judged by the repository Secret's URL it names", async () => {
    const url = `${internal.url}/charts`;
    const err = await refused(
      renderer.render(
        input('named', {
          sourceRepos: [repo.url],
          dependencyRepositories: [{ name: 'internal', url, repository: { url, type: 'helm' } }],
        }),
      ),
    );
    assert.match(
      err.message,
      /^dependency 'lib' of 'named': the project's sourceRepos do not allow 'http:\/\/127\.0\.0\.1:\d+\/charts'/,
    );
    assert.deepEqual(internal.requests, []);
  });

  it('as oci://: a `!` entry denies it whether written with the scheme or without (as Argo CD writes OCI repositories)', async () => {
    const url = `oci://${internal.host}/charts`;
    const access = { url: `${internal.host}/charts`, enableOCI: true, insecureOCIForceHttp: true };
    for (const deny of [`!oci://${internal.host}/*`, `!${internal.host}/*`]) {
      const err = await refused(
        renderer.render(
          input('oci', { sourceRepos: ['*', deny], dependencyRepositories: [{ url, repository: access }] }),
        ),
      );
      assert.ok(err.message.includes(`do not allow '${url}' (denied by sourceRepos entry '${deny}')`), err.message);
    }
    assert.deepEqual(internal.requests, []);
  });

  it('a request that carries no sourceRepos permits no dependency repository', async () => {
    const err = await refused(
      renderer.render(input('url', { dependencyRepositories: [{ url: `${internal.url}/charts` }] })),
    );
    assert.match(err.message, /do not allow 'http:\/\/127\.0\.0\.1:\d+\/charts' \(sourceRepos is empty\)/);
    assert.deepEqual(internal.requests, []);
  });
});

describe('a permitted server that answers junk is named and measured, never quoted', () => {
  const fetched = async (p: string, rest: Partial<RenderInput>) => {
    const err = await refused(
      renderer.render(input(p, { sourceRepos: [repo.url, `${junk.url}/*`, `${junk.host}/*`], ...rest })),
    );
    assert.ok(!err.message.includes(MARKER), `the answer is quoted: ${err.message}`);
    assert.ok(!err.message.includes('unclosed'), `the answer is quoted: ${err.message}`);
    return err;
  };

  it("a dependency repository's index.yaml", async () => {
    const url = `${junk.url}/helm`;
    const err = await fetched('junk-index', { dependencyRepositories: [{ url }] });
    assert.equal(err.reason, 'InvalidSource');
    assert.equal(
      err.message,
      `the index.yaml of Helm repository '${url}' does not parse as YAML (${JUNK.length} bytes; its content is not shown)`,
    );
    assert.ok(junk.requests.includes('/helm/index.yaml'));
  });

  it("a dependency's chart archive", async () => {
    const url = `${junk.url}/archives`;
    const err = await fetched('junk-archive', { dependencyRepositories: [{ url }] });
    assert.equal(
      err.message,
      `the archive of '${url}' version '0.1.0' does not parse as a gzipped tar archive (${JUNK.length} bytes; its content is not shown)`,
    );
  });

  it("an OCI dependency's manifest", async () => {
    const url = `oci://${junk.host}/oci`;
    const repository = { url: `${junk.host}/oci`, enableOCI: true, insecureOCIForceHttp: true };
    const err = await fetched('junk-manifest', { dependencyRepositories: [{ url, repository }] });
    assert.equal(
      err.message,
      `the manifest of 'oci://${junk.host}/oci/lib:0.1.0' does not parse as JSON (${JUNK.length} bytes; its content is not shown)`,
    );
    assert.ok(junk.requests.includes('/v2/oci/lib/manifests/0.1.0'));
  });

  it('the Chart.yaml of a chart downloaded from a Helm repository', async () => {
    const url = `${junk.url}/archives`;
    const err = await refused(
      renderer.render({
        source: { repoURL: url, chart: 'broken', targetRevision: '1.0.0' },
        appName: 'app',
        sourceRepos: [url],
      }),
    );
    assert.ok(!err.message.includes(MARKER), `the answer is quoted: ${err.message}`);
    assert.equal(
      err.message,
      `broken/Chart.yaml of the chart downloaded from '${url}' does not parse as YAML (${JUNK.length} bytes; its content is not shown)`,
    );
  });
});
