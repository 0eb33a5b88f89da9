// SourceRenderer end to end on a real Git repository: directory (recurse on/off, include/exclude),
// kustomize and helm with the pinned tools, explicit types, and the errors a user sees.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceRenderer, type RenderInput, type RenderResult } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { failsWith } from '../support/source-error.ts';
import { toolsDir } from './tools.ts';

const cm = (name: string, extra = ''): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}`;

const FILES: Record<string, string> = {
  'plain/a.yaml': cm('a'),
  'plain/b.json': JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b' } }),
  'plain/README.md': '# not a manifest\n',
  'plain/values.yaml': 'replicas: 3\nimage: nginx\n',
  'plain/skip.yaml': `# +argocd:skip-file-rendering\n${cm('skipped')}`,
  'plain/nested/c.yml': cm('c'),
  'plain/nested/deeper/d.yaml': `${cm('d')}---\n${cm('e')}`,
  'broken/bad.yaml': `${cm('ok')}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  a: [1, 2\n  b: c: d\n`,
  'notk8s/x.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n',
  'jsonnet/a.jsonnet': '{}',
  'kbase/kustomization.yaml': 'resources: [cm.yaml, deploy.yaml]\n',
  'kbase/cm.yaml': cm('settings', 'data:\n  mode: "0644"\n'),
  'kbase/deploy.yaml':
    'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx:1.25}]\n',
  'koverlay/kustomization.yaml': 'resources: [../kbase]\nnamePrefix: prod-\n',
  'klabels/kustomization.yaml': 'resources: [../kbase]\ncommonLabels: {team: base}\n',
  'chart/Chart.yaml': 'apiVersion: v2\nname: demo\nversion: 0.1.0\n',
  'chart/values.yaml': 'replicas: 1\ncolor: blue\nlist: "a"\n',
  'chart/values-prod.yaml': 'replicas: 3\n',
  'chart/templates/cm.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\n  namespace: {{ .Release.Namespace }}\ndata:\n  replicas: "{{ .Values.replicas }}"\n  color: {{ .Values.color | quote }}\n  list: {{ .Values.list | quote }}\n',
  'chart/templates/two.yaml': `${cm('first')}---\n${cm('second')}`,
  'both/kustomization.yaml': 'resources: [cm.yaml]\n',
  'both/Chart.yaml': 'apiVersion: v2\nname: both\nversion: 0.1.0\n',
  'both/cm.yaml': cm('from-kustomize'),
  'both/templates/cm.yaml': cm('from-helm'),
};

/** The render input of an Application named guestbook (by default) deploying to team-a. */
function app(
  source: Record<string, unknown>,
  extra: { name?: string; namespace?: string; revision?: string } = {},
): RenderInput {
  return {
    source: source as ApplicationSource,
    appName: extra.name ?? 'guestbook',
    destinationNamespace: extra.namespace ?? 'team-a',
    ...(extra.revision !== undefined ? { revision: extra.revision } : {}),
  };
}

const names = (r: RenderResult): string[] => r.objects.map((o) => o.object.metadata.name);

describe('SourceRenderer', () => {
  let repo: TestRepo;
  let head: string;
  let cacheDir: string;
  let renderer: SourceRenderer;
  let url: string;

  before(async () => {
    repo = await TestRepo.create();
    head = await repo.commit(FILES, 'fixtures');
    url = repo.fileURL;
    cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-render-'));
    renderer = new SourceRenderer({ allowLocalRepositories: true, cacheDir, toolsDir: toolsDir() });
  });
  after(async () => {
    await repo?.remove();
    if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  });

  describe('Directory', () => {
    test('only the folder itself without recurse; unrelated YAML, other files and skip markers are left out', async () => {
      const r = await renderer.render(app({ repoURL: url, path: 'plain', targetRevision: 'main' }));
      assert.equal(r.revision, head);
      assert.equal(r.sourceType, 'Directory');
      assert.deepEqual(names(r), ['a', 'b']);
      assert.deepEqual(
        r.objects.map((o) => o.location),
        [
          { file: 'plain/a.yaml', document: 1 },
          { file: 'plain/b.json', document: 1 },
        ],
      );
    });

    test('sub-folders with directory.recurse, in path order', async () => {
      const r = await renderer.render(app({ repoURL: url, path: 'plain', directory: { recurse: true } }));
      assert.deepEqual(names(r), ['a', 'b', 'c', 'd', 'e']);
      assert.deepEqual(r.objects.at(-1)?.location, { file: 'plain/nested/deeper/d.yaml', document: 2 });
    });

    test('include and exclude are globs on the path under the app folder', async () => {
      const inc = await renderer.render(
        app({ repoURL: url, path: 'plain', directory: { recurse: true, include: '{*.yml,nested/deeper/*}' } }),
      );
      assert.deepEqual(names(inc), ['c', 'd', 'e']);
      const exc = await renderer.render(
        app({ repoURL: url, path: 'plain', directory: { recurse: true, exclude: 'nested/*' } }),
      );
      assert.deepEqual(names(exc), ['a', 'b']);
    });

    test('a syntax error names the file and line', async () => {
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: 'broken' })),
        failsWith('InvalidManifest', /^broken\/bad\.yaml:1[12]: /),
      );
    });

    test('a manifest that is not a Kubernetes object is an error naming file and document', async () => {
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: 'notk8s' })),
        failsWith(
          'InvalidManifest',
          /^notk8s\/x\.yaml: document 1 is not a Kubernetes object: metadata\.name is missing/,
        ),
      );
    });

    test("a .jsonnet file is evaluated, not skipped: one without a kind is Argo CD's error (test/source/jsonnet.test.ts)", async () => {
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: 'jsonnet' })),
        failsWith(
          'InvalidManifest',
          /^Failed to unmarshal generated json "a\.jsonnet": Object 'Kind' is missing in '\{ \}'$/,
        ),
      );
    });

    test('a file over the size limit is refused', async () => {
      const small = new SourceRenderer({
        allowLocalRepositories: true,
        cacheDir,
        toolsDir: toolsDir(),
        limits: { maxFileBytes: 10 },
      });
      await assert.rejects(
        small.render(app({ repoURL: url, path: 'plain' })),
        failsWith('TooLarge', /plain\/a\.yaml is \d+ bytes, over the 10 bytes limit/),
      );
    });
  });

  describe('Kustomize', () => {
    test('kustomize build of a base and of an overlay that reaches outside its folder', async () => {
      const base = await renderer.render(app({ repoURL: url, path: 'kbase' }));
      assert.equal(base.sourceType, 'Kustomize');
      assert.deepEqual(names(base).sort(), ['settings', 'web']);
      const settings = base.objects.find((o) => o.object.kind === 'ConfigMap')?.object as {
        data?: Record<string, unknown>;
      };
      assert.equal(settings.data?.mode, '0644', 'quoted strings stay strings');
      const overlay = await renderer.render(app({ repoURL: url, path: 'koverlay' }));
      assert.deepEqual(names(overlay).sort(), ['prod-settings', 'prod-web']);
    });

    test('spec.source.kustomize overrides: prefix, suffix, images, labels, namespace', async () => {
      const r = await renderer.render(
        app({
          repoURL: url,
          path: 'kbase',
          kustomize: {
            namePrefix: 'x-',
            nameSuffix: '-y',
            images: ['nginx=registry.local/nginx:1.27'],
            commonLabels: { team: 'a' },
            namespace: 'team-k',
          },
        }),
      );
      const deploy = r.objects.find((o) => o.object.kind === 'Deployment')?.object as unknown as {
        metadata: { name: string; namespace: string; labels: Record<string, string> };
        spec: { template: { spec: { containers: { image: string }[] } } };
      };
      assert.equal(deploy.metadata.name, 'x-web-y');
      assert.equal(deploy.metadata.namespace, 'team-k');
      assert.equal(deploy.metadata.labels.team, 'a');
      assert.equal(deploy.spec.template.spec.containers[0]?.image, 'registry.local/nginx:1.27');
    });

    test("namePrefix replaces the kustomization's own (kustomize edit set nameprefix), as Argo CD", async () => {
      const r = await renderer.render(app({ repoURL: url, path: 'koverlay', kustomize: { namePrefix: 'x-' } }));
      assert.deepEqual(names(r).sort(), ['x-settings', 'x-web']);
    });

    test("forceCommonLabels overrides the kustomization's label; labelWithoutSelector leaves selectors alone", async () => {
      type Deploy = {
        metadata: { labels: Record<string, string> };
        spec: { selector: { matchLabels: Record<string, string> } };
      };
      const deployment = async (path: string, kustomize: Record<string, unknown>) =>
        (await renderer.render(app({ repoURL: url, path, kustomize }))).objects.find(
          (o) => o.object.kind === 'Deployment',
        )?.object as unknown as Deploy;
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: 'klabels', kustomize: { commonLabels: { team: 'app' } } })),
        failsWith('ToolFailed', /label team already in kustomization file\. Use --force to override\./),
      );
      const forced = await deployment('klabels', { commonLabels: { team: 'app' }, forceCommonLabels: true });
      assert.equal(forced.metadata.labels.team, 'app');
      assert.equal(forced.spec.selector.matchLabels.team, 'app');
      const without = await deployment('kbase', { commonLabels: { tier: 'front' }, labelWithoutSelector: true });
      assert.equal(without.metadata.labels.tier, 'front');
      assert.deepEqual(without.spec.selector.matchLabels, { app: 'web' });
    });

    test('a kustomization is preferred over a Chart.yaml in the same folder', async () => {
      const r = await renderer.render(app({ repoURL: url, path: 'both' }));
      assert.equal(r.sourceType, 'Kustomize');
      assert.deepEqual(names(r), ['from-kustomize']);
    });

    test('an explicit directory block makes a kustomize folder a Directory; two blocks are an error', async () => {
      const r = await renderer.render(app({ repoURL: url, path: 'kbase', directory: { recurse: true } }));
      assert.equal(r.sourceType, 'Directory');
      assert.deepEqual(names(r).sort(), ['settings', 'web']);
      await assert.rejects(
        renderer.render(
          app({ repoURL: url, path: 'kbase', directory: { recurse: true }, kustomize: { namePrefix: 'a-' } }),
        ),
        failsWith('InvalidSource', /^multiple application sources defined: Kustomize,Directory$/),
      );
    });

    test('an unsupported kustomize field is an error, not ignored', async () => {
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: 'kbase', kustomize: { notAField: true } })),
        failsWith('InvalidSource', /spec\.source\.kustomize\.notAField is not supported/),
      );
    });
  });

  describe('Helm', () => {
    test("helm.version: v3 and v4 render with the renderer's Helm, as Argo CD v3.6.1; another is Argo CD's error", async () => {
      for (const version of ['v3', 'v4']) {
        const r = await renderer.render(app({ repoURL: url, path: 'chart', helm: { version } }));
        assert.equal(r.sourceType, 'Helm', version);
        assert.ok(r.objects.length > 0, version);
      }
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: 'chart', helm: { version: 'v2' } })),
        failsWith('InvalidSource', /helm version 'v2' is not supported/),
      );
    });

    test('helm template with release name = app name, destination namespace, value files, values and parameters', async () => {
      const r = await renderer.render(
        app(
          {
            repoURL: url,
            path: 'chart',
            helm: {
              valueFiles: ['values-prod.yaml'],
              values: 'color: red\n',
              parameters: [{ name: 'list', value: 'x,y' }],
            },
          },
          { name: 'shop', namespace: 'team-b' },
        ),
      );
      assert.equal(r.sourceType, 'Helm');
      const cfg = r.objects.find((o) => o.object.metadata.name === 'shop-cfg');
      assert.ok(cfg, `objects: ${names(r).join(', ')}`);
      assert.equal(cfg.object.metadata.namespace, 'team-b');
      assert.deepEqual((cfg.object as { data?: unknown }).data, { replicas: '3', color: 'red', list: 'x,y' });
      assert.deepEqual(cfg.location, { file: 'demo/templates/cm.yaml', document: 1 });
      assert.deepEqual(
        r.objects.filter((o) => o.location.file === 'demo/templates/two.yaml').map((o) => o.location.document),
        [1, 2],
      );
    });

    test('valuesObject wins over values, releaseName over the app name', async () => {
      const r = await renderer.render(
        app({
          repoURL: url,
          path: 'chart',
          helm: { releaseName: 'rel', values: 'color: red', valuesObject: { color: 'green' } },
        }),
      );
      const cfg = r.objects.find((o) => o.object.metadata.name === 'rel-cfg')?.object as
        { data?: Record<string, string> } | undefined;
      assert.equal(cfg?.data?.color, 'green');
    });

    test('a missing value file is an error unless ignoreMissingValueFiles', async () => {
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: 'chart', helm: { valueFiles: ['nope.yaml'] } })),
        failsWith('InvalidSource', /helm value file 'nope\.yaml' of 'chart' does not exist/),
      );
      const r = await renderer.render(
        app({ repoURL: url, path: 'chart', helm: { valueFiles: ['nope.yaml'], ignoreMissingValueFiles: true } }),
      );
      assert.ok(r.objects.length > 0);
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: 'chart', helm: { valueFiles: ['../../etc/passwd'] } })),
        failsWith('InvalidSource', /outside the repository/),
      );
    });

    test("a template error is ToolFailed with helm's message", async () => {
      const r2 = await TestRepo.create();
      try {
        await r2.commit({
          'c/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
          'c/templates/x.yaml': '{{ .Values.nope.deeper }}\n',
        });
        await assert.rejects(
          renderer.render(app({ repoURL: r2.dir, path: 'c' })),
          failsWith('ToolFailed', /^helm template of 'c' failed: .*nil pointer/s),
        );
      } finally {
        await r2.remove();
      }
    });
  });

  describe('errors', () => {
    test('a missing tool names the tool and how to get it', async () => {
      const bare = new SourceRenderer({
        allowLocalRepositories: true,
        cacheDir,
        toolsDir: '',
        searchPath: '/nonexistent',
      });
      await assert.rejects(
        bare.render(app({ repoURL: url, path: 'kbase' })),
        failsWith(
          'ToolMissing',
          /^kustomize not found on PATH: run scripts\/tool-binaries .* or put kustomize on PATH$/,
        ),
      );
      await assert.rejects(
        bare.render(app({ repoURL: url, path: 'chart' })),
        failsWith('ToolMissing', /^helm not found on PATH: run scripts\/tool-binaries .* or put helm on PATH$/),
      );
      await assert.rejects(
        bare.render(app({ repoURL: url, path: 'jsonnet' })),
        failsWith(
          'ToolMissing',
          /^impersync-jsonnet not found on PATH: run scripts\/tool-binaries .* or put impersync-jsonnet on PATH$/,
        ),
      );
      // A directory without a .jsonnet file needs no impersync-jsonnet.
      assert.equal((await bare.render(app({ repoURL: url, path: 'plain' }))).objects.length, 2);
      const wrong = new SourceRenderer({
        allowLocalRepositories: true,
        cacheDir,
        toolPaths: { helm: '/nonexistent/helm' },
      });
      await assert.rejects(
        wrong.render(app({ repoURL: url, path: 'chart' })),
        failsWith('ToolMissing', /^helm not found at '\/nonexistent\/helm' \(configured path\)/),
      );
    });

    test('a missing app path, a path out of the repository, a revision that does not exist', async () => {
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: 'nope' })),
        failsWith('InvalidSource', /^app path 'nope' does not exist$/),
      );
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: '../..' })),
        failsWith('InvalidSource', /^app path '\.\.\/\.\.' is outside the repository$/),
      );
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: 'plain', targetRevision: 'v9' })),
        failsWith('RevisionNotFound', /^revision 'v9' not found in 'file:\/\//),
      );
    });

    test('opts.revision renders another commit than targetRevision', async () => {
      const before = head;
      const next = await repo.commit({ 'plain/z.yaml': cm('z') }, 'add z');
      const latest = await renderer.render(app({ repoURL: url, path: 'plain' }));
      assert.equal(latest.revision, next);
      assert.deepEqual(names(latest), ['a', 'b', 'z']);
      const old = await renderer.render(app({ repoURL: url, path: 'plain' }, { revision: before }));
      assert.equal(old.revision, before);
      assert.deepEqual(names(old), ['a', 'b']);
    });

    test('a Helm repository chart whose repoURL is not http(s) is refused before any request', async () => {
      // Charts from Helm repositories are rendered (test/source/charts.test.ts); only their transports are checked here.
      await assert.rejects(
        renderer.render(app({ repoURL: 'ftp://charts.example', chart: 'nginx', targetRevision: '1.0.0' })),
        failsWith('InvalidSource', /Helm repository 'ftp:\/\/charts.example' must be an http or https URL/),
      );
    });
  });
});
