// The controller's side of a chart's dependencies (controller/render.ts) with a real renderer over
// its protocol: a dependency repository the project's sourceRepos do not permit, as a URL or as the
// `@name` of a repository Secret, is refused in Argo CD's words before the render that would fetch
// it, and the internal address it names receives no request at all; a permitted one that answers
// junk ends in a ComparisonError that names it and does not quote it.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AppProject, Application } from '../../src/api/index.ts';
import { parseRepositorySecret } from '../../src/api/repository.ts';
import { renderApplication } from '../../src/controller/render.ts';
import { EMPTY_REPOSITORY_STATE, type RepositoryState } from '../../src/repository/access.ts';
import { TestRepo } from '../support/git.ts';
import { startRecordingServer, type RecordingServer } from '../support/recorder.ts';
import { refused, withTestRenderer } from '../support/renderer.ts';
import { toolsDir } from '../source/tools.ts';

const MARKER = 'internal-secret-51c9';
const JUNK = `<html>\n  token: ${MARKER}: [unclosed\n</html>\n`;
const TOKEN = 'render-dependencies-token';

let internal: RecordingServer;
let repo: TestRepo;
let work: string;
let repositories: RepositoryState;

const chartYaml = (repository: string) =>
  `apiVersion: v2\nname: umbrella\nversion: 1.0.0\ndependencies:\n- name: lib\n  version: 0.1.0\n  repository: "${repository}"\n`;
const template = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: umbrella\n';

before(async () => {
  internal = await startRecordingServer(() => ({ body: JUNK }));
  repo = await TestRepo.create();
  await repo.commit({
    'url/Chart.yaml': chartYaml(`${internal.url}/charts`),
    'url/templates/cm.yaml': template,
    'named/Chart.yaml': chartYaml('@internal'),
    'named/templates/cm.yaml': template,
  });
  work = await mkdtemp(path.join(os.tmpdir(), 'impersync-render-deps-'));
  // An admin's Helm repository Secret for the internal address: its name is what `@internal` means.
  const secret = parseRepositorySecret({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'internal', namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': 'repository' } },
    stringData: { url: `${internal.url}/charts`, type: 'helm', name: 'internal' },
  });
  repositories = { ...EMPTY_REPOSITORY_STATE, configs: [secret] };
});

after(async () => {
  await internal.close();
  await repo.remove();
  await rm(work, { recursive: true, force: true });
});

const project = (sourceRepos: string[]) =>
  ({ metadata: { name: 'team' }, spec: { sourceRepos } }) as unknown as AppProject;
const app = (p: string) =>
  ({
    metadata: { name: 'umbrella', namespace: 'argocd' },
    spec: { source: { repoURL: repo.url, path: p, targetRevision: 'main' }, destination: { namespace: 'team' } },
  }) as Application;

function withRenderer(fn: (render: (p: string, sourceRepos: string[]) => Promise<unknown>) => Promise<void>) {
  return withTestRenderer({ work, repoURL: repo.url, token: TOKEN }, { toolsDir: toolsDir() }, (client) =>
    fn((p, sourceRepos) =>
      renderApplication(client, app(p), { project: project(sourceRepos), controllerNamespace: 'argocd', repositories }),
    ),
  );
}

describe("a chart's dependency repositories, judged by the controller before the renderer fetches them", () => {
  it("a URL the project does not permit: Argo CD's message, and no request to it", async () => {
    await withRenderer(async (render) => {
      const err = await refused(render('url', [repo.url]));
      assert.equal(err.reason, 'InvalidSource');
      assert.equal(
        err.message,
        `helm repos ${internal.url}/charts are not permitted in project 'team': add them to its sourceRepos, or vendor the charts in charts/`,
      );
    });
    assert.deepEqual(internal.requests, [], 'the internal address received no request');
  });

  it("an @name whose repository Secret's URL the project does not permit: refused by that URL", async () => {
    await withRenderer(async (render) => {
      const err = await refused(render('named', [repo.url]));
      assert.match(err.message, /^helm repos http:\/\/127\.0\.0\.1:\d+\/charts are not permitted in project 'team'/);
    });
    assert.deepEqual(internal.requests, []);
  });

  it('a permitted repository that answers junk: the error names it and its size, and quotes nothing', async () => {
    await withRenderer(async (render) => {
      const err = await refused(render('url', [repo.url, `${internal.url}/*`]));
      assert.ok(!err.message.includes(MARKER) && !err.message.includes('unclosed'), err.message);
      assert.equal(
        err.message,
        `the index.yaml of Helm repository '${internal.url}/charts' does not parse as YAML (${JUNK.length} bytes; its content is not shown)`,
      );
    });
    assert.deepEqual(internal.requests, ['/charts/index.yaml'], 'asked once, for the index');
    internal.requests.length = 0;
  });
});
