// spec.source.kustomize's overrides, and spec.source.helm.fileParameters, rendered with the pinned
// kustomize and helm on a real Git repository, as Argo CD v3.6.1 renders them: the kustomize fields
// are `kustomize edit` edits of the app's own kustomization file (so an Application namePrefix
// replaces the file's, a label the file has is kustomize's error unless forced, a component's
// objects get the kustomization's own namePrefix, and a patch targets names before it), never of
// the shared checkout; file parameters are `--set-file` with the value files' path rules.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceRenderer, type RenderInput, type RenderResult } from '../../src/source/index.ts';
import { replicaArg } from '../../src/source/kustomize-edits.ts';
import { TestRepo } from '../support/git.ts';
import { failsWith } from '../support/source-error.ts';
import { toolsDir } from './tools.ts';

const deploy = (name: string, replicas = 1): string =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ${name}}\nspec:\n  replicas: ${replicas}\n  selector: {matchLabels: {app: ${name}}}\n  template:\n    metadata: {labels: {app: ${name}}}\n    spec:\n      containers: [{name: c, image: nginx}]\n`;
const KUSTOMIZATION =
  'resources: [deploy.yaml]\nnamePrefix: base-\npatches:\n- target: {kind: Deployment, name: web}\n  patch: |-\n    - op: add\n      path: /metadata/annotations\n      value: {from: kustomization, order: kustomization}\n';

const FILES: Record<string, string> = {
  'k/kustomization.yaml': KUSTOMIZATION,
  'k/deploy.yaml': deploy('web'),
  'k/patch-env.yaml':
    'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: [{name: c, env: [{name: FROM, value: file}]}]\n',
  'k/components/extra/kustomization.yaml':
    'apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml]\n',
  'k/components/extra/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n',
  'shared/component/kustomization.yaml':
    'apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml]\n',
  'shared/component/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\n',
  'kmap/kustomization.yaml': 'resources: [deploy.yaml]\npatches: {a: 1}\n',
  'kmap/deploy.yaml': deploy('web'),
  'knull/kustomization.yaml': 'resources: [deploy.yaml]\npatches:\n',
  'knull/deploy.yaml': deploy('web'),
  'byfile/kustomization.yaml': 'resources: [deploy.yaml]\n',
  'byfile/deploy.yaml': deploy('api'),
  'byfile/.argocd-source-guestbook.yaml': 'kustomize:\n  replicas:\n  - name: api\n    count: "5"\n',
  'chart/Chart.yaml': 'apiVersion: v2\nname: demo\nversion: 0.1.0\n',
  'chart/templates/cm.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  config: {{ .Values.config | quote }}\n  other: {{ .Values.other | default "none" | quote }}\n',
  'chart/files/config.txt': 'from the chart folder',
  'chart/files/guestbook.txt': 'named by the app',
  'files/root.txt': 'from the repository root',
  'kl/kustomization.yaml':
    'resources: [deploy.yaml]\nnamePrefix: base-\nnameSuffix: -v1\nnamespace: base-ns\ncommonLabels: {team: base}\ncommonAnnotations: {note: base}\nimages:\n- {name: nginx, newName: registry.local/nginx}\n',
  'kl/deploy.yaml': deploy('web'),
  'kplain/kustomization.yaml': 'resources: [deploy.yaml]\n',
  'kplain/deploy.yaml': deploy('web'),
};

function app(source: Record<string, unknown>): RenderInput {
  return { source: source as ApplicationSource, appName: 'guestbook', destinationNamespace: 'team-a' };
}
const byName = (r: RenderResult) => new Map(r.objects.map((o) => [o.object.metadata.name, o.object]));
const names = (r: RenderResult): string[] => r.objects.map((o) => o.object.metadata.name).sort();

describe('kustomize replicas, patches, components and helm fileParameters', () => {
  let repo: TestRepo;
  let cacheDir: string;
  let renderer: SourceRenderer;
  let url: string;

  before(async () => {
    repo = await TestRepo.create();
    await repo.commit(FILES, 'fixtures');
    url = repo.fileURL;
    cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-kustomize-edits-'));
    renderer = new SourceRenderer({ allowLocalRepositories: true, cacheDir, toolsDir: toolsDir() });
  });
  after(async () => {
    await repo?.remove();
    if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  });

  const kustomize = (fields: Record<string, unknown>) =>
    renderer.render(app({ repoURL: url, path: 'k', kustomize: fields }));
  const spec = (r: RenderResult, name: string) => byName(r).get(name)?.spec as Record<string, unknown> | undefined;

  test('replicas: a count as an integer or a string of one, by the name before the namePrefix', async () => {
    const r = await kustomize({ replicas: [{ name: 'web', count: 3 }] });
    assert.equal(spec(r, 'base-web')?.replicas, 3);
    const s = await kustomize({ replicas: [{ name: 'web', count: '4' }] });
    assert.equal(spec(s, 'base-web')?.replicas, 4);
  });

  test("replicas: Argo CD's error for a count that is no integer, kustomize's for a name nothing has", async () => {
    await assert.rejects(
      kustomize({ replicas: [{ name: 'web', count: 'three' }] }),
      failsWith('InvalidSource', /^expected integer value for count\. Received: three$/),
    );
    await assert.rejects(
      kustomize({ replicas: [{ name: 'nothing', count: 2 }] }),
      failsWith('ToolFailed', /kustomize build of 'k' failed: .*resource with name nothing does not match a config/s),
    );
  });

  test('a field of the wrong shape is refused, not passed over', async () => {
    for (const [fields, message] of [
      [{ replicas: 'web=2' }, /^spec\.source\.kustomize\.replicas: expected a list, got "web=2"$/],
      [{ components: 'components/extra' }, /^spec\.source\.kustomize\.components: expected a list/],
      [{ patches: { path: 'x' } }, /^spec\.source\.kustomize\.patches: expected a list/],
      [
        { components: ['components/extra'], ignoreMissingComponents: 'yes' },
        /ignoreMissingComponents: expected a boolean/,
      ],
      [{ replicas: [{ name: 'web', count: 2.5 }] }, /replicas\[0\]\.count: expected an integer or a string, got 2\.5/],
      [{ namePrefix: 1 }, /^spec\.source\.kustomize\.namePrefix: expected a string, got 1$/],
      [{ images: ['nginx:1', 2] }, /^spec\.source\.kustomize\.images\[1\]: expected a string, got 2$/],
      [{ commonLabels: { a: 1 } }, /^spec\.source\.kustomize\.commonLabels\.a: expected a string, got 1$/],
      [{ commonAnnotations: ['a'] }, /^spec\.source\.kustomize\.commonAnnotations: expected a map of strings/],
      [{ commonLabels: { a: 'b' }, forceCommonLabels: 'yes' }, /forceCommonLabels: expected a boolean, got "yes"/],
      [{ labelWithoutSelector: 1 }, /labelWithoutSelector: expected a boolean, got 1/],
    ] as const)
      await assert.rejects(kustomize(fields), failsWith('InvalidSource', message));
  });

  test('replicaArg is name=count as Argo CD formats it (strconv.Atoi for a string)', () => {
    assert.equal(replicaArg({ name: 'a', count: 2 }, 0), 'a=2');
    assert.equal(replicaArg({ name: 'a', count: '+7' }, 0), 'a=7');
    assert.equal(replicaArg({ name: 'a', count: '007' }, 0), 'a=7');
    assert.equal(replicaArg({ name: 'a', count: '-1' }, 0), 'a=-1');
    for (const bad of [' 3', '3.0', '', '0x10', '9223372036854775808'])
      assert.throws(() => replicaArg({ name: 'a', count: bad }, 0), /expected integer value for count/, bad);
  });

  test("patches: appended after the kustomization's own, inline or from a file of the app folder", async () => {
    const r = await kustomize({
      patches: [
        {
          target: { kind: 'Deployment', name: 'web' },
          patch: '- op: replace\n  path: /metadata/annotations/order\n  value: application',
        },
        { path: 'patch-env.yaml' },
      ],
    });
    const web = byName(r).get('base-web');
    assert.ok(web, names(r).join(','));
    // The kustomization's patch ran first, the Application's second: both there, the second winning.
    assert.deepEqual(web.metadata.annotations, { from: 'kustomization', order: 'application' });
    const containers = (web.spec as { template: { spec: { containers: Array<{ env?: unknown }> } } }).template.spec
      .containers;
    assert.deepEqual(containers[0]?.env, [{ name: 'FROM', value: 'file' }]);
  });

  test("patches: a target by the name before the namePrefix, the Application's namePrefix replacing the file's", async () => {
    const r = await kustomize({
      namePrefix: 'app-',
      patches: [
        { target: { kind: 'Deployment', name: 'web' }, patch: '- op: replace\n  path: /spec/replicas\n  value: 9' },
      ],
    });
    assert.equal(spec(r, 'app-web')?.replicas, 9);
  });

  test("patches: Argo CD's errors for a kustomization whose patches are no list", async () => {
    const patch = { patch: '- op: add\n  path: /metadata/labels\n  value: {a: b}', target: { kind: 'Deployment' } };
    await assert.rejects(
      renderer.render(app({ repoURL: url, path: 'kmap', kustomize: { patches: [patch] } })),
      failsWith(
        'InvalidSource',
        /^expected 'patches' field in kustomization\.yaml to be \[\]any, but got map\[string\]interface \{\}$/,
      ),
    );
    await assert.rejects(
      renderer.render(app({ repoURL: url, path: 'knull', kustomize: { patches: [patch] } })),
      failsWith('InvalidSource', /^expected 'patches' field in kustomization\.yaml to be \[\]any, but got <nil>$/),
    );
  });

  test('patches: options are passed on (allowNameChange)', async () => {
    const rename = {
      target: { kind: 'Deployment', name: 'web' },
      patch: 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: renamed',
    };
    const allowed = await kustomize({ patches: [{ ...rename, options: { allowNameChange: true } }] });
    assert.deepEqual(names(allowed), ['base-renamed']);
    const kept = await kustomize({ patches: [rename] });
    assert.deepEqual(names(kept), ['base-web']);
  });

  test("components: added to the app's kustomization, so its namePrefix names what they add", async () => {
    const r = await kustomize({ components: ['components/extra', '../shared/component'] });
    assert.deepEqual(names(r), ['base-extra', 'base-shared', 'base-web']);
  });

  test('ignoreMissingComponents: only the first component with a kustomization file is added, as Argo CD', async () => {
    // Argo CD v3.6.1's loop breaks out of the components' loop at the first one it keeps.
    const r = await kustomize({
      components: ['components/nope', 'components/extra', '../shared/component'],
      ignoreMissingComponents: true,
    });
    assert.deepEqual(names(r), ['base-extra', 'base-web']);
    // A folder without a kustomization file counts as missing.
    const s = await kustomize({ components: ['components', '../shared/component'], ignoreMissingComponents: true });
    assert.deepEqual(names(s), ['base-shared', 'base-web']);
  });

  test('components: a missing one is an error, left out with ignoreMissingComponents', async () => {
    await assert.rejects(
      kustomize({ components: ['components/nope'] }),
      failsWith('ToolFailed', /^kustomize edit add component of 'k' failed: .*components\/nope has no match/s),
    );
    const r = await kustomize({ components: ['components/nope', 'components/extra'], ignoreMissingComponents: true });
    assert.deepEqual(names(r), ['base-extra', 'base-web']);
  });

  test('components: a path out of the repository is refused; with ignoreMissingComponents it is left out', async () => {
    for (const c of ['../..', '/etc', '../../../../../../../../tmp']) {
      await assert.rejects(
        kustomize({ components: [c] }),
        failsWith(
          'InvalidSource',
          new RegExp(`^kustomize component '${c.replace(/[.*/]/g, '\\$&')}' of 'k' is outside the repository$`),
        ),
      );
      const r = await kustomize({ components: [c], ignoreMissingComponents: true });
      assert.deepEqual(names(r), ['base-web']);
    }
  });

  describe('namePrefix, nameSuffix, images, commonLabels, commonAnnotations, namespace', () => {
    type Obj = {
      metadata: {
        name: string;
        namespace?: string;
        labels?: Record<string, string>;
        annotations?: Record<string, string>;
      };
      spec: {
        selector: { matchLabels: Record<string, string> };
        template: { metadata: { labels: Record<string, string> }; spec: { containers: Array<{ image: string }> } };
      };
    };
    const render = async (folder: string, fields: Record<string, unknown>, buildEnv?: Record<string, string>) => {
      const r = await renderer.render({
        ...app({ repoURL: url, path: folder, kustomize: fields }),
        ...(buildEnv ? { buildEnv } : {}),
      });
      assert.equal(r.objects.length, 1, names(r).join(','));
      return r.objects[0]?.object as unknown as Obj;
    };

    test("namePrefix, nameSuffix and namespace replace the kustomization's own (kustomize edit set)", async () => {
      const own = await render('kl', {});
      assert.deepEqual([own.metadata.name, own.metadata.namespace], ['base-web-v1', 'base-ns']);
      const o = await render('kl', { namePrefix: 'app-', nameSuffix: '-x', namespace: 'app-ns' });
      assert.deepEqual([o.metadata.name, o.metadata.namespace], ['app-web-x', 'app-ns']);
    });

    test("images: kustomize edit set image replaces the kustomization's entry for the image", async () => {
      const own = await render('kl', {});
      assert.equal(own.spec.template.spec.containers[0]?.image, 'registry.local/nginx');
      // The file's newName goes with its entry: the Application's `nginx:<tag>` is the whole override.
      const o = await render('kl', { images: ['nginx:$ARGOCD_APP_NAME'] }, { ARGOCD_APP_NAME: 'guestbook' });
      assert.equal(o.spec.template.spec.containers[0]?.image, 'nginx:guestbook');
    });

    test("commonLabels: a label the kustomization has is kustomize's error, replaced with forceCommonLabels", async () => {
      await assert.rejects(
        render('kl', { commonLabels: { team: 'app' } }),
        failsWith(
          'ToolFailed',
          /^kustomize edit add label of 'kl' failed: Error: label team already in kustomization file\. Use --force to override\.$/,
        ),
      );
      const o = await render(
        'kl',
        { commonLabels: { team: 'app', owner: '$ARGOCD_APP_NAME' }, forceCommonLabels: true },
        {
          ARGOCD_APP_NAME: 'guestbook',
        },
      );
      assert.deepEqual(o.metadata.labels, { team: 'app', owner: 'guestbook' });
      assert.deepEqual(o.spec.selector.matchLabels, { app: 'web', team: 'app', owner: 'guestbook' });
    });

    test('commonLabels: into selectors and templates; labelWithoutSelector leaves them alone; labelIncludeTemplates labels templates', async () => {
      const all = await render('kplain', { commonLabels: { tier: 'front' } });
      assert.deepEqual(all.spec.selector.matchLabels, { app: 'web', tier: 'front' });
      assert.deepEqual(all.spec.template.metadata.labels, { app: 'web', tier: 'front' });
      const without = await render('kplain', { commonLabels: { tier: 'front' }, labelWithoutSelector: true });
      assert.deepEqual(without.metadata.labels, { tier: 'front' });
      assert.deepEqual(without.spec.selector.matchLabels, { app: 'web' });
      assert.deepEqual(without.spec.template.metadata.labels, { app: 'web' });
      const templates = await render('kplain', {
        commonLabels: { tier: 'front' },
        labelWithoutSelector: true,
        labelIncludeTemplates: true,
      });
      assert.deepEqual(templates.metadata.labels, { tier: 'front' });
      assert.deepEqual(templates.spec.selector.matchLabels, { app: 'web' });
      assert.deepEqual(templates.spec.template.metadata.labels, { app: 'web', tier: 'front' });
      await assert.rejects(
        render('kplain', { commonLabels: { tier: 'front' }, labelIncludeTemplates: true }),
        failsWith(
          'ToolFailed',
          /^kustomize edit add label of 'kplain' failed: Error: --without-selector flag must be specified for --include-templates to work$/,
        ),
      );
      // The flags come with labels only, as in Argo CD.
      const none = await render('kplain', { forceCommonLabels: true, labelWithoutSelector: true });
      assert.equal(none.metadata.labels, undefined);
    });

    test("commonAnnotations: one the kustomization has is kustomize's error, replaced with forceCommonAnnotations", async () => {
      await assert.rejects(
        render('kl', { commonAnnotations: { note: 'app' } }),
        failsWith(
          'ToolFailed',
          /^kustomize edit add annotation of 'kl' failed: Error: annotation note already in kustomization file\. Use --force to override\.$/,
        ),
      );
      const o = await render(
        'kl',
        { commonAnnotations: { note: 'app', extra: '$ARGOCD_APP_NAME' }, forceCommonAnnotations: true },
        {
          ARGOCD_APP_NAME: 'guestbook',
        },
      );
      // Not substituted without commonAnnotationsEnvsubst.
      assert.deepEqual(o.metadata.annotations, { note: 'app', extra: '$ARGOCD_APP_NAME' });
    });

    test('a value starting with - is a value, never a flag of kustomize edit', async () => {
      // Were `--force` read as the flag, the label the file has would be overwritten.
      await assert.rejects(
        render('kl', { commonLabels: { '--force': 'x', team: 'app' } }),
        failsWith('ToolFailed', /label team already in kustomization file/),
      );
      const o = await render('kplain', { namePrefix: '--help-' });
      assert.equal(o.metadata.name, '--help-web');
    });
  });

  test('the checked-out commit is not edited: the next render without the fields is the commit as it is', async () => {
    await kustomize({
      namePrefix: 'edited-',
      commonLabels: { edited: 'yes' },
      replicas: [{ name: 'web', count: 7 }],
      components: ['components/extra'],
      patches: [{ path: 'patch-env.yaml' }],
    });
    const r = await kustomize({});
    assert.deepEqual(names(r), ['base-web']);
    assert.equal(spec(r, 'base-web')?.replicas, 1);
    // And no checkout in the cache holds an edited kustomization file.
    const found: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) await walk(p);
        else if (e.name === 'kustomization.yaml' && p.endsWith(`${path.sep}k${path.sep}kustomization.yaml`))
          found.push(await readFile(p, 'utf8'));
      }
    };
    await walk(cacheDir);
    assert.ok(found.length > 0, 'the checkout is in the cache');
    for (const text of found) assert.equal(text, KUSTOMIZATION);
  });

  test('a source parameter file may set replicas, with a count as a string', async () => {
    const r = await renderer.render(app({ repoURL: url, path: 'byfile' }));
    assert.equal(spec(r, 'api')?.replicas, 5);
  });

  test('a source parameter file with a wrongly typed field is refused as Argo CD decodes it', async () => {
    const bad = await TestRepo.create();
    try {
      await bad.commit({
        'a/kustomization.yaml': 'resources: [deploy.yaml]\n',
        'a/deploy.yaml': deploy('api'),
        'a/.argocd-source.yaml': 'kustomize:\n  components: components/x\n',
      });
      await assert.rejects(
        renderer.render(app({ repoURL: bad.fileURL, path: 'a' })),
        failsWith(
          'InvalidSource',
          /^error while parsing source parameters: a\/\.argocd-source\.yaml: kustomize\.components: /,
        ),
      );
    } finally {
      await bad.remove();
    }
  });

  describe('helm fileParameters', () => {
    const helm = (fields: Record<string, unknown>, buildEnv?: Record<string, string>) =>
      renderer.render({ ...app({ repoURL: url, path: 'chart', helm: fields }), ...(buildEnv ? { buildEnv } : {}) });
    const data = (r: RenderResult) => byName(r).get('cfg')?.data as Record<string, string> | undefined;

    test('--set-file from a file of the chart folder, or of the repository root when absolute', async () => {
      const r = await helm({ fileParameters: [{ name: 'config', path: 'files/config.txt' }] });
      assert.equal(data(r)?.config, 'from the chart folder');
      const root = await helm({
        fileParameters: [
          { name: 'config', path: '/files/root.txt' },
          { name: 'other', path: '../files/root.txt' },
        ],
      });
      assert.deepEqual(data(root), { config: 'from the repository root', other: 'from the repository root' });
    });

    test('the last file parameter of a name wins; build variables are substituted in the path', async () => {
      const r = await helm(
        {
          fileParameters: [
            { name: 'config', path: 'files/config.txt' },
            { name: 'config', path: 'files/$ARGOCD_APP_NAME.txt' },
          ],
        },
        { ARGOCD_APP_NAME: 'guestbook' },
      );
      assert.equal(data(r)?.config, 'named by the app');
    });

    test("a file that does not exist is helm's error; one out of the repository is refused", async () => {
      await assert.rejects(
        helm({ fileParameters: [{ name: 'config', path: 'files/nope.txt' }] }),
        failsWith(
          'ToolFailed',
          /^helm template of 'chart' failed: .*chart\/files\/nope\.txt: no such file or directory/s,
        ),
      );
      await assert.rejects(
        helm({ fileParameters: [{ name: 'config', path: '../../../../etc/passwd' }] }),
        failsWith(
          'InvalidSource',
          /^helm file parameter 'config' \(spec\.source\.helm\.fileParameters\[0\]\) file '\.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd' of 'chart' is outside the repository$/,
        ),
      );
    });

    test("a name with a comma, which would make helm read a file of the renderer's, is refused", async () => {
      // Without the check helm reads /etc/passwd into the value `x` (--set-file=x=/etc/passwd,y=...).
      await assert.rejects(
        helm({ fileParameters: [{ name: 'x=/etc/passwd,y', path: 'files/config.txt' }] }),
        failsWith(
          'InvalidSource',
          "spec.source.helm.fileParameters[0].name 'x=/etc/passwd,y': a comma would make helm read a second file; it is refused",
        ),
      );
    });

    test('a URL whose scheme argocd-cm does not allow is refused', async () => {
      await assert.rejects(
        helm({ fileParameters: [{ name: 'config', path: 'file:///etc/passwd' }] }),
        failsWith('InvalidSource', /the URL scheme 'file' is not allowed/),
      );
    });
  });
});
