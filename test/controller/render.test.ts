// The controller's side of rendering (controller/render.ts): each source's request carries its own
// repository's credentials and nothing of other repositories, `ref` sources are resolved and not
// rendered, a chart's dependency needs are answered with credentials the project permits, and what
// cannot be rendered is refused with Argo CD's messages before anything is sent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AppProject, Application } from '../../src/api/index.ts';
import { parseRepositorySecret } from '../../src/api/repository.ts';
import { renderApplication } from '../../src/controller/render.ts';
import type { Renderer } from '../../src/renderer/client.ts';
import type { RepositoryState } from '../../src/repository/access.ts';
import { NeedsRepositories, SourceError } from '../../src/source/errors.ts';
import type { RenderInput } from '../../src/source/index.ts';

const secret = (name: string, type: string, data: Record<string, string>) =>
  parseRepositorySecret({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': type } },
    stringData: data,
  });

const repositories: RepositoryState = {
  configs: [
    secret('app', 'repository', { url: 'https://git.example.com/app', password: 'app-pw' }),
    secret('values', 'repository', { url: 'https://git.example.com/values', password: 'values-pw' }),
    secret('charts', 'repository', {
      url: 'https://charts.example.com',
      type: 'helm',
      name: 'charts',
      password: 'charts-pw',
    }),
    secret('gh', 'repository', { url: 'https://github.com/org/gh', githubAppPrivateKey: 'k', githubAppID: '1' }),
  ],
  errors: [],
  knownHosts: '',
  tlsCerts: {},
};
const project = { metadata: { name: 'p' }, spec: { sourceRepos: ['*'] } } as unknown as AppProject;
const app = (spec: Record<string, unknown>) =>
  ({
    metadata: { name: 'guestbook', namespace: 'argocd' },
    spec: { destination: { namespace: 'team' }, ...spec },
  }) as Application;

function fakeRenderer(needs?: Array<{ url: string }>): Renderer & { inputs: RenderInput[]; resolved: RenderInput[] } {
  const inputs: RenderInput[] = [];
  const resolved: RenderInput[] = [];
  return {
    inputs,
    resolved,
    render: async (input) => {
      inputs.push(input);
      if (needs && input.dependencyRepositories === undefined) throw new NeedsRepositories(needs);
      return { revision: `rev-of-${input.source.repoURL}`, sourceType: 'Helm', objects: [] };
    },
    resolveRevision: async (input) => {
      resolved.push(input as RenderInput);
      return `sha-of-${input.source.repoURL}`;
    },
    close: async () => {},
  };
}

describe('rendering an Application', () => {
  it('a single source: its credentials, its revision, no multi-source shapes', async () => {
    const r = fakeRenderer();
    const out = await renderApplication(r, app({ source: { repoURL: 'https://git.example.com/app', path: '.' } }), {
      project,
      controllerNamespace: 'argocd',
      repositories,
      revisionMaxAgeMs: 180_000,
    });
    assert.equal(out.multiSource, false);
    assert.deepEqual(out.revisions, ['rev-of-https://git.example.com/app']);
    assert.equal(r.inputs[0]?.repository?.password, 'app-pw');
    assert.equal(r.inputs[0]?.revisionMaxAgeMs, 180_000);
    assert.equal(r.inputs[0]?.destinationNamespace, 'team');
    assert.equal(r.inputs[0]?.project, 'p', 'ARGOCD_APP_PROJECT_NAME');
    assert.equal(r.inputs[0]?.instanceName, 'guestbook');
  });

  it("an Application outside the controller's namespace is <namespace>_<name> to its render (Argo CD's InstanceName)", async () => {
    const r = fakeRenderer();
    const elsewhere = app({ source: { repoURL: 'https://git.example.com/app', path: '.' } });
    elsewhere.metadata.namespace = 'team-apps';
    await renderApplication(r, elsewhere, { project, controllerNamespace: 'argocd', repositories });
    assert.equal(r.inputs[0]?.appName, 'guestbook', 'the release name');
    assert.equal(r.inputs[0]?.instanceName, 'team-apps_guestbook', 'ARGOCD_APP_NAME and .argocd-source-<name>.yaml');
  });

  it("multi-source: a ref source is resolved, not rendered; only the refs a source's value files name travel with it", async () => {
    const r = fakeRenderer();
    const sources = [
      {
        repoURL: 'https://charts.example.com',
        chart: 'c',
        targetRevision: '1.0.0',
        helm: { valueFiles: ['$values/prod.yaml'] },
      },
      { repoURL: 'https://git.example.com/values', targetRevision: 'main', ref: 'values' },
      { repoURL: 'https://git.example.com/app', path: 'x', ref: 'unused' },
    ];
    const out = await renderApplication(r, app({ sources }), { project, controllerNamespace: 'argocd', repositories });
    assert.equal(out.multiSource, true);
    assert.deepEqual(out.sourceTypes, ['Helm', '', 'Helm']);
    assert.deepEqual(out.revisions, [
      'rev-of-https://charts.example.com',
      'sha-of-https://git.example.com/values',
      'rev-of-https://git.example.com/app',
    ]);
    assert.equal(r.resolved[0]?.repository?.password, 'values-pw');
    const chart = r.inputs[0] as RenderInput;
    assert.equal(chart.repository?.password, 'charts-pw');
    assert.deepEqual(Object.keys(chart.refSources ?? {}), ['$values']);
    assert.equal(chart.refSources?.['$values']?.repository?.password, 'values-pw');
    assert.equal(r.inputs[1]?.refSources, undefined, 'the third source names no ref');
    // Every ref's name travels, so a `$ref/...` a source parameter file adds is refused, not misread.
    assert.deepEqual(chart.refNames, ['$values', '$unused']);
    assert.deepEqual(r.inputs[1]?.refNames, ['$values', '$unused']);
  });

  it("multi-source: a ref a source's helm.fileParameters path names travels with it too (Argo CD's refCandidates)", async () => {
    const r = fakeRenderer();
    const sources = [
      {
        repoURL: 'https://charts.example.com',
        chart: 'c',
        targetRevision: '1.0.0',
        helm: { fileParameters: [{ name: 'script', path: '$values/script.sh' }] },
      },
      { repoURL: 'https://git.example.com/values', targetRevision: 'main', ref: 'values' },
    ];
    await renderApplication(r, app({ sources }), { project, controllerNamespace: 'argocd', repositories });
    const chart = r.inputs[0] as RenderInput;
    assert.deepEqual(Object.keys(chart.refSources ?? {}), ['$values']);
    assert.equal(chart.refSources?.['$values']?.repository?.password, 'values-pw');
  });

  it("a rollback renders the operation's sources at the operation's revisions", async () => {
    const r = fakeRenderer();
    const sources = [
      { repoURL: 'https://git.example.com/app', path: 'a' },
      { repoURL: 'https://git.example.com/values', ref: 'values' },
    ];
    await renderApplication(r, app({ sources: [{ repoURL: 'https://other.example.com/x', path: 'y' }] }), {
      project,
      controllerNamespace: 'argocd',
      repositories,
      operation: { sources, revisions: ['aaa', 'bbb'] },
    });
    assert.equal(r.inputs[0]?.source.repoURL, 'https://git.example.com/app');
    assert.equal(r.inputs[0]?.revision, 'aaa');
    assert.equal(r.resolved[0]?.revision, 'bbb');
  });

  it("a chart's dependency needs are answered with the credentials the project permits, then asked again", async () => {
    const r = fakeRenderer([{ url: 'https://charts.example.com' }]);
    const out = await renderApplication(r, app({ source: { repoURL: 'https://git.example.com/app', path: 'chart' } }), {
      project,
      controllerNamespace: 'argocd',
      repositories,
    });
    assert.equal(r.inputs.length, 2);
    assert.equal(r.inputs[1]?.dependencyRepositories?.[0]?.repository?.password, 'charts-pw');
    assert.equal(out.revisions.length, 1);
    // A dependency repository the project does not permit is refused before the second request, in
    // Argo CD's words (Argo CD gives them only once the fetch has failed).
    const narrow = { ...project, spec: { sourceRepos: ['https://git.example.com/*'] } } as AppProject;
    const r2 = fakeRenderer([{ url: 'https://charts.example.com' }]);
    await assert.rejects(
      renderApplication(r2, app({ source: { repoURL: 'https://git.example.com/app', path: 'chart' } }), {
        project: narrow,
        controllerNamespace: 'argocd',
        repositories,
      }),
      (e: unknown) =>
        e instanceof SourceError &&
        e.reason === 'InvalidSource' &&
        e.message ===
          "helm repos https://charts.example.com are not permitted in project 'p': add them to its sourceRepos, or vendor the charts in charts/",
    );
    assert.equal(r2.inputs.length, 1, 'only the request that named the needs was sent');
  });

  it("a chart's @name dependency is judged by its repository Secret's URL, an oci:// one in either form", async () => {
    const judged = async (needs: Array<{ url?: string; name?: string }>, sourceRepos: string[]) => {
      const r = fakeRenderer(needs as Array<{ url: string }>);
      const p = { ...project, spec: { sourceRepos } } as AppProject;
      const source = { repoURL: 'https://git.example.com/app', path: 'chart' };
      return renderApplication(r, app({ source }), { project: p, controllerNamespace: 'argocd', repositories }).then(
        () => r.inputs.length,
        (e: unknown) => (e instanceof SourceError ? e.message : String(e)),
      );
    };
    // `@charts`: the repository Secret named `charts`, https://charts.example.com.
    assert.match(
      String(await judged([{ name: 'charts' }], ['https://git.example.com/*'])),
      /^helm repos https:\/\/charts\.example\.com are not permitted in project 'p'/,
    );
    assert.equal(await judged([{ url: 'oci://registry.example.com/charts' }], ['registry.example.com/*']), 2);
    assert.equal(await judged([{ url: 'oci://registry.example.com/charts' }], ['oci://registry.example.com/*']), 2);
    assert.match(
      String(await judged([{ url: 'oci://registry.example.com/charts' }], ['*', '!registry.example.com/*'])),
      /^helm repos oci:\/\/registry\.example\.com\/charts are not permitted in project 'p'/,
    );
  });

  it("refusals, in Argo CD's words, before anything is sent", async () => {
    const refused = async (spec: Record<string, unknown>, message: RegExp) => {
      const r = fakeRenderer();
      await assert.rejects(
        renderApplication(r, app(spec), { project, controllerNamespace: 'argocd', repositories }),
        (e: unknown) => e instanceof SourceError && message.test(e.message),
      );
      assert.equal(r.inputs.length, 0);
    };
    await refused({}, /^spec\.source is missing$/);
    await refused(
      { source: { repoURL: 'https://github.com/org/gh', path: '.' } },
      /repository Secret argocd\/gh: field 'githubAppPrivateKey' \(GitHub App credentials\) is not supported by impersync/,
    );
    await refused(
      { sources: [{ repoURL: 'https://g/a', ref: 'bad ref!' }] },
      /sources\.ref bad ref! cannot contain any special characters except '_' and '-'/,
    );
    await refused(
      {
        sources: [
          { repoURL: 'https://g/a', ref: 'x' },
          { repoURL: 'https://g/b', ref: 'x' },
        ],
      },
      /invalid sources: multiple sources had the same `ref` key/,
    );
    await refused(
      { sources: [{ repoURL: 'https://g/a' }] },
      /source 1 of 1: spec\.source\.repoURL and either source\.path, source\.chart, or source\.ref are required/,
    );
  });
});
