// A Git chart's dependencies fetched before templating with the credentials the controller gives
// (issue 13), from a Helm repository and from an OCI registry, and multi-source `$ref/...` value
// files, rendered by the real helm. The attacks: a file:// dependency and a `$ref` value file that
// leave their repository, a dependency fetched without the credential it needs.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NeedsRepositories, SourceError } from '../../src/source/errors.ts';
import { SourceRenderer } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import {
  chartArchive,
  helmPush,
  startHelmRepo,
  startRegistry,
  type HelmRepoServer,
  type TestRegistry,
} from '../support/helm.ts';
import { testCA } from '../support/tls.ts';
import { toolsDir } from './tools.ts';

const USER = { username: 'deps', password: 'deps-Pa55word' };
let charts: HelmRepoServer;
let registry: TestRegistry;
let repo: TestRepo;
let values: TestRepo;
let cacheDir: string;
let renderer: SourceRenderer;

/** The project's sourceRepos: the chart repository and the registry the dependencies come from. */
const permitted = () => [charts.url, `oci://${registry.host}/*`];
const chartYaml = (deps: string) => `apiVersion: v2\nname: umbrella\nversion: 1.0.0\ndependencies:\n${deps}`;
const template =
  'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: umbrella\ndata:\n  greeting: {{ .Values.greeting | quote }}\n';

before(async () => {
  charts = await startHelmRepo({ auth: USER });
  charts.setCharts([{ name: 'lib', version: '2.1.0', archive: chartArchive('lib', '2.1.0') }]);
  registry = await startRegistry(USER);
  await helmPush(
    path.join(toolsDir(), 'helm'),
    chartArchive('ocilib', '0.3.0'),
    'ocilib',
    '0.3.0',
    registry.host,
    USER,
  );
  repo = await TestRepo.create();
  await repo.commit({
    'umbrella/Chart.yaml': chartYaml(
      `- name: lib\n  version: ">=2.0.0"\n  repository: ${charts.url}\n- name: local\n  version: 0.1.0\n  repository: file://../local\n`,
    ),
    'umbrella/values.yaml': 'greeting: from-git\n',
    'umbrella/templates/cm.yaml': template,
    'local/Chart.yaml': 'apiVersion: v2\nname: local\nversion: 0.1.0\n',
    'local/templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local-dep\n',
    'local/templates/file.yaml':
      '{{- if .Values.script }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-file\ndata:\n  script: {{ .Values.script | quote }}\n{{- end }}\n',
    'escape/Chart.yaml': chartYaml('- name: out\n  version: 0.1.0\n  repository: file://../../../etc\n'),
    'escape/templates/cm.yaml': template,
    'ocidep/Chart.yaml': chartYaml(`- name: ocilib\n  version: 0.3.0\n  repository: oci://${registry.host}/charts\n`),
    'ocidep/templates/cm.yaml': template,
  });
  values = await TestRepo.create();
  await values.commit({ 'env/prod.yaml': 'greeting: from-ref\n', 'env/script.sh': 'echo from-ref\n' });
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-deps-'));
  renderer = new SourceRenderer({ cacheDir, toolsDir: toolsDir() });
});

after(async () => {
  await Promise.all([charts.close(), registry.close()]);
  await repo.remove();
  await values.remove();
  await rm(cacheDir, { recursive: true, force: true });
});

describe("a Git chart's dependencies", () => {
  const source = () => ({ repoURL: repo.url, path: 'umbrella', targetRevision: 'main' });

  it('names the repositories it needs first, then fetches them with the credentials given', async () => {
    const first = await renderer.render({ source: source(), appName: 'app' }).then(
      () => assert.fail('the first answer names the needed repositories'),
      (e: unknown) => e,
    );
    assert.ok(first instanceof NeedsRepositories);
    assert.deepEqual(first.needs, [{ url: charts.url }]);
    const out = await renderer.render({
      source: source(),
      appName: 'app',
      sourceRepos: permitted(),
      dependencyRepositories: [{ url: charts.url, repository: { url: charts.url, ...USER, caCerts: testCA().caCert } }],
    });
    const names = out.objects.map((o) => o.object.metadata.name).sort();
    assert.deepEqual(names, ['lib-app', 'local-dep', 'umbrella']);
    assert.deepEqual(out.dependencies, [charts.url]);
  });

  it('without credentials for the dependency repository the render fails clearly', async () => {
    const err = await renderer
      .render({
        source: source(),
        appName: 'app',
        sourceRepos: permitted(),
        dependencyRepositories: [{ url: charts.url, repository: { url: charts.url, caCerts: testCA().caCert } }],
      })
      .then(
        () => assert.fail('refused'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof SourceError);
    assert.match(err.message, /Helm repository 'https:\/\/127\.0\.0\.1:\d+' not reachable: the server answered 401/);
  });

  it('an oci:// dependency is pulled from the registry with the credentials given, and refused without', async () => {
    const source = { repoURL: repo.url, path: 'ocidep', targetRevision: 'main' };
    const first = await renderer.render({ source, appName: 'app' }).then(
      () => assert.fail('the first answer names the needed repositories'),
      (e: unknown) => e,
    );
    assert.ok(first instanceof NeedsRepositories);
    const url = `oci://${registry.host}/charts`;
    assert.deepEqual(first.needs, [{ url }]);
    const access = { url: `${registry.host}/charts`, type: 'helm' as const, enableOCI: true, caCerts: testCA().caCert };
    const out = await renderer.render({
      source,
      appName: 'app',
      sourceRepos: permitted(),
      dependencyRepositories: [{ url, repository: { ...access, ...USER } }],
    });
    assert.deepEqual(out.objects.map((o) => o.object.metadata.name).sort(), ['ocilib-app', 'umbrella']);
    const err = await renderer
      .render({
        source,
        appName: 'app',
        sourceRepos: permitted(),
        dependencyRepositories: [{ url, repository: access }],
      })
      .then(
        () => assert.fail('refused'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof SourceError);
    assert.match(err.message, /not reachable: the server answered 401/);
  });

  it('a file:// dependency outside the repository is refused', async () => {
    const err = await renderer
      .render({
        source: { repoURL: repo.url, path: 'escape', targetRevision: 'main' },
        appName: 'app',
        sourceRepos: permitted(),
        dependencyRepositories: [],
      })
      .then(
        () => assert.fail('refused'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof SourceError);
    assert.match(err.message, /dependency 'out' of 'escape': 'file:\/\/..\/..\/..\/etc' is outside the repository/);
  });
});

describe('multi-source $ref value files', () => {
  const render = (valueFiles: string[]) =>
    renderer.render({
      source: { repoURL: repo.url, path: 'local', targetRevision: 'main', helm: { valueFiles } },
      appName: 'app',
      refSources: { $values: { repoURL: values.url, targetRevision: 'main' } },
    });

  it('reads a value file from the ref source checkout', async () => {
    const out = await renderer.render({
      source: {
        repoURL: repo.url,
        path: 'umbrella',
        targetRevision: 'main',
        helm: { valueFiles: ['$values/env/prod.yaml'] },
      },
      appName: 'app',
      refSources: { $values: { repoURL: values.url, targetRevision: 'main' } },
      sourceRepos: permitted(),
      dependencyRepositories: [{ url: charts.url, repository: { url: charts.url, ...USER, caCerts: testCA().caCert } }],
    });
    const cm = out.objects.find((o) => o.object.metadata.name === 'umbrella')?.object as unknown as {
      data: { greeting: string };
    };
    assert.equal(cm.data.greeting, 'from-ref');
  });

  it('a helm.fileParameters `$ref/...` path is read from the ref source checkout; one that leaves it is refused', async () => {
    const withFile = (path: string) =>
      renderer.render({
        source: {
          repoURL: repo.url,
          path: 'local',
          targetRevision: 'main',
          helm: { fileParameters: [{ name: 'script', path }] },
        },
        appName: 'app',
        refSources: { $values: { repoURL: values.url, targetRevision: 'main' } },
      });
    const out = await withFile('$values/env/script.sh');
    const cm = out.objects.find((o) => o.object.metadata.name === 'from-file')?.object as unknown as {
      data: { script: string };
    };
    assert.equal(cm.data.script, 'echo from-ref\n');
    const err = await withFile('$values/../../../../etc/passwd').then(
      () => assert.fail('refused'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SourceError);
    assert.match(err.message, /helm file parameter 'script' .* of 'local' is outside the repository of \$values/);
  });

  it('a $ref value file that leaves the ref repository is refused', async () => {
    const err = await render(['$values/../../../../etc/passwd']).then(
      () => assert.fail('refused'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SourceError);
    assert.match(err.message, /helm value file '\$values\/\.\.\/.*' of 'local' is outside the repository of \$values/);
  });
});
