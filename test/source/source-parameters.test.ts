// Source parameter files (.argocd-source.yaml, .argocd-source-<app>.yaml) through renderCheckout,
// on a folder made by hand as symlinks.test.ts does, with the pinned helm and kustomize: what the
// files set reaches the tools, in Argo CD's order, and tenant content that tries more is refused.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError } from '../../src/source/errors.ts';
import { DEFAULT_DOCUMENT_LIMITS } from '../../src/source/expand.ts';
import { mergePatch } from '../../src/source/merge-patch.ts';
import { DEFAULT_LIMITS, renderCheckout, type RenderEnvironment } from '../../src/source/render.ts';
import { mergeSourceParameters } from '../../src/source/source-parameters.ts';
import { renderEnvironment } from './tools.ts';

const REPO = 'https://example.com/r.git';
const CHART = {
  'Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
  'values.yaml': 'image:\n  tag: v1\ncolor: blue\n',
  'templates/cm.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  tag: {{ .Values.image.tag | quote }}\n  color: {{ .Values.color | quote }}\n',
};
const cm = (name: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;

/** Folder → its files; every folder holding a Chart.yaml key gets CHART's files too. */
const TREE: Record<string, Record<string, string>> = {
  ordered: {
    ...CHART,
    '.argocd-source.yaml':
      'helm:\n  releaseName: from-repo-file\n  parameters:\n    - {name: image.tag, value: v-repo}\n',
    // What Argo CD Image Updater's git write-back commits.
    '.argocd-source-app.yaml': 'helm:\n  parameters:\n  - name: image.tag\n    value: v2\n    forceString: true\n',
  },
  nulls: { ...CHART, '.argocd-source.yaml': 'helm:\n  valuesObject:\n    color: null\n  valueFiles: null\n' },
  kust: {
    'kustomization.yaml': 'resources: [deploy.yaml]\n',
    'deploy.yaml':
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx:1.25}]\n',
    '.argocd-source-app.yaml': 'kustomize:\n  images:\n  - nginx:1.27\n',
  },
  kept: {
    'a.yaml': cm('a'),
    'nested/b.yaml': cm('b'),
    '.argocd-source.yaml':
      'path: elsewhere\nrepoURL: https://evil.example/x.git\nchart: other\ntargetRevision: v9\ndirectory: {recurse: true}\n',
  },
  empty: { ...CHART, '.argocd-source.yaml': '' },
  'bad-helm': { ...CHART, '.argocd-source.yaml': 'helm: x\n' },
  'bad-params': { ...CHART, '.argocd-source.yaml': 'helm: {parameters: x}\n' },
  'bad-list': { ...CHART, '.argocd-source.yaml': '- helm\n' },
  'bad-yaml': { ...CHART, '.argocd-source.yaml': 'helm: {parameters: [\n' },
  big: { ...CHART, '.argocd-source.yaml': `helm:\n  values: "${'x'.repeat(300)}"\n` },
  bomb: {
    ...CHART,
    '.argocd-source.yaml':
      'a: &a ["x","x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n',
  },
  proto: {
    ...CHART,
    '.argocd-source.yaml':
      '__proto__: {polluted: yes}\nconstructor: {prototype: {polluted: yes}}\nhelm:\n  __proto__: {polluted: yes}\n  parameters: [{name: color, value: green}]\n',
  },
  'file-params': {
    ...CHART,
    'color.txt': 'from-a-file',
    '.argocd-source.yaml': 'helm:\n  fileParameters: [{name: color, path: color.txt}]\n',
  },
  'file-param-out': {
    ...CHART,
    '.argocd-source.yaml': 'helm:\n  fileParameters: [{name: color, path: ../../outside-values.yaml}]\n',
  },
  'file-param-ref': {
    ...CHART,
    'x.yaml': 'from-this-repo',
    '.argocd-source.yaml': 'helm:\n  fileParameters: [{name: color, path: $values/x.yaml}]\n',
  },
  'kust-force': {
    'kustomization.yaml': 'resources: [cm.yaml]\n',
    'cm.yaml': cm('k'),
    '.argocd-source.yaml': 'kustomize:\n  notAField: true\n',
  },
  plugin: { 'a.yaml': cm('a'), '.argocd-source.yaml': 'plugin: {name: my-cmp}\n' },
  'value-file-out': { ...CHART, '.argocd-source.yaml': 'helm:\n  valueFiles: [../../outside-values.yaml]\n' },
  'flag-param': { ...CHART, '.argocd-source.yaml': 'helm:\n  releaseName: --post-renderer=/bin/sh\n' },
  sym: { ...CHART },
  addref: {
    ...CHART,
    'x.yaml': 'color: from-this-repo\n',
    '.argocd-source.yaml': 'helm:\n  valueFiles: [$values/x.yaml]\n',
  },
  instance: {
    ...CHART,
    '.argocd-source-app.yaml': 'helm:\n  parameters: [{name: image.tag, value: by-name}]\n',
    '.argocd-source-team_app.yaml': 'helm:\n  parameters: [{name: image.tag, value: by-instance-name}]\n',
  },
  'typed-helm': { ...CHART, '.argocd-source.yaml': 'helm:\n  skipCrds: "true"\n' },
  'typed-kust': {
    'kustomization.yaml': 'resources: [cm.yaml]\n',
    'cm.yaml': cm('k'),
    '.argocd-source.yaml': 'kustomize:\n  commonAnnotations: [a, b]\n',
  },
  fifo: { 'a.yaml': cm('a') },
  huge: { 'a.yaml': cm('a'), '.argocd-source.yaml': `helm:\n  values: "${'x'.repeat(1024 * 1024)}"\n` },
};

describe('renderCheckout applies the source parameter files of the app folder', () => {
  let top: string;
  let checkout: string;
  let env: RenderEnvironment;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-source-params-'));
    checkout = path.join(top, 'checkout');
    const write = async (rel: string, text: string) => {
      await mkdir(path.dirname(path.join(top, rel)), { recursive: true });
      await writeFile(path.join(top, rel), text);
    };
    for (const [dir, files] of Object.entries(TREE))
      for (const [rel, text] of Object.entries(files)) await write(`checkout/${dir}/${rel}`, text);
    // Beside the checkout: what no render may read.
    await write('outside.yaml', 'helm:\n  parameters: [{name: color, value: secret}]\n');
    await write('outside-values.yaml', 'color: secret\n');
    await symlink('../../outside.yaml', path.join(checkout, 'sym', '.argocd-source-app.yaml'));
    execFileSync('mkfifo', [path.join(checkout, 'fifo', '.argocd-source.yaml')]);
    env = renderEnvironment(path.join(top, 'cache'));
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const render = (source: Record<string, unknown>, appName = 'app', limits = env.limits) =>
    renderCheckout(
      { checkoutDir: checkout, source: { repoURL: REPO, ...source } as ApplicationSource, appName },
      {
        ...env,
        limits,
      },
    );
  const data = async (source: Record<string, unknown>, appName = 'app') =>
    (await render(source, appName)).objects.map((o) => ({
      name: o.object.metadata.name,
      ...(o.object.data as Record<string, string>),
    }));
  /** The start of a refusal of a source parameter file in `folder`, then `rest`. */
  const inFile = (folder: string, rest: RegExp, file = '.argocd-source.yaml') =>
    new RegExp(`^error while parsing source parameters: ${folder}/${file.replaceAll('.', '\\.')}: ${rest.source}`);
  const refused = (reason: string, message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof SourceError, String(err));
    assert.equal(err.reason, reason, err.message);
    assert.match(err.message, message);
    assert.doesNotMatch(err.message, new RegExp(top), 'no absolute path in the message');
    return true;
  };

  test('.argocd-source.yaml, then .argocd-source-<app>.yaml on top: the app file wins', async () => {
    // Image Updater's file: a forced-string image.tag; releaseName still from the repository file.
    assert.deepEqual(await data({ path: 'ordered' }), [{ name: 'from-repo-file-cfg', tag: 'v2', color: 'blue' }]);
    // Another Application of the same folder gets only the repository file.
    assert.deepEqual(await data({ path: 'ordered' }, 'other'), [
      { name: 'from-repo-file-cfg', tag: 'v-repo', color: 'blue' },
    ]);
    // The files win over spec.source, field by field.
    assert.deepEqual(
      await data({ path: 'ordered', helm: { parameters: [{ name: 'color', value: 'red' }], releaseName: 'spec' } }),
      [{ name: 'from-repo-file-cfg', tag: 'v2', color: 'blue' }],
    );
  });

  test('kustomize images from the app file', async () => {
    const r = await render({ path: 'kust' });
    assert.equal(r.sourceType, 'Kustomize');
    const deploy = r.objects[0]?.object as unknown as {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    assert.equal(deploy.spec.template.spec.containers[0]?.image, 'nginx:1.27');
  });

  test('a null deletes inside helm.valuesObject; elsewhere it leaves spec.source as it is, as in Argo CD', async () => {
    // spec's valuesObject sets color red; the file's `color: null` removes it: the chart's blue.
    assert.deepEqual(await data({ path: 'nulls', helm: { valuesObject: { color: 'red' } } }), [
      { name: 'app-cfg', tag: 'v1', color: 'blue' },
    ]);
    const merged = await mergeSourceParameters({
      root: checkout,
      appDir: path.join(checkout, 'nulls'),
      source: { repoURL: REPO, path: 'nulls', helm: { valueFiles: ['a.yaml'], valuesObject: { color: 'red', n: 1 } } },
      appName: 'app',
      maxFileBytes: 1024,
      documents: DEFAULT_DOCUMENT_LIMITS,
    });
    // Argo CD decodes the patched JSON into the source it had (Go keeps fields the JSON lacks).
    assert.deepEqual(merged.helm, { valueFiles: ['a.yaml'], valuesObject: { n: 1 } });
  });

  test('path, repoURL, chart and targetRevision stay what the Application says', async () => {
    const source = { repoURL: REPO, path: 'kept', targetRevision: 'main' };
    const merged = await mergeSourceParameters({
      root: checkout,
      appDir: path.join(checkout, 'kept'),
      source,
      appName: 'app',
      maxFileBytes: 1024,
      documents: DEFAULT_DOCUMENT_LIMITS,
    });
    assert.deepEqual(merged, { ...source, directory: { recurse: true } });
    // The rest of the file is honoured: directory.recurse reads nested/.
    const r = await render({ path: 'kept' });
    assert.deepEqual(
      r.objects.map((o) => o.object.metadata.name),
      ['a', 'b'],
    );
  });

  test('an empty file changes nothing', async () => {
    assert.deepEqual(await data({ path: 'empty' }), [{ name: 'app-cfg', tag: 'v1', color: 'blue' }]);
  });

  test('a symlink to a file outside the repository is refused, naming the file', async () => {
    await assert.rejects(
      render({ path: 'sym' }),
      refused(
        'InvalidSource',
        inFile('sym', /it is a symlink that leads outside the repository$/, '.argocd-source-app.yaml'),
      ),
    );
  });

  test('a wrong shape names the file and the field', async () => {
    await assert.rejects(render({ path: 'bad-helm' }), refused('InvalidSource', inFile('bad-helm', /helm: /)));
    await assert.rejects(
      render({ path: 'bad-params' }),
      refused('InvalidSource', inFile('bad-params', /helm\.parameters: /)),
    );
    await assert.rejects(render({ path: 'bad-list' }), refused('InvalidSource', inFile('bad-list', /it holds a list/)));
    await assert.rejects(
      render({ path: 'bad-yaml' }),
      refused('InvalidSource', /^error while parsing source parameters: bad-yaml\/\.argocd-source\.yaml:\d+: /),
    );
  });

  test('a file over the file limit, or expanding past the document limits, is TooLarge', async () => {
    await assert.rejects(
      render({ path: 'big' }, 'app', { ...DEFAULT_LIMITS, maxFileBytes: 256 }),
      refused('TooLarge', inFile('big', /it is \d+ bytes, over the 256 bytes limit/)),
    );
    await assert.rejects(
      render({ path: 'bomb' }, 'app', { ...DEFAULT_LIMITS, maxDocumentNodes: 10_000 }),
      refused('TooLarge', inFile('bomb', /document 1 expands to/)),
    );
  });

  test('__proto__ and constructor keys pollute nothing', async () => {
    assert.deepEqual(await data({ path: 'proto' }), [{ name: 'app-cfg', tag: 'v1', color: 'green' }]);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
    const patched = mergePatch(
      { a: 1 },
      JSON.parse('{"__proto__": {"polluted": true}, "b": {"__proto__": null}}'),
    ) as object;
    assert.equal(Object.getPrototypeOf(patched), Object.prototype);
    assert.deepEqual(Object.keys(patched), ['a', '__proto__', 'b']);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  test("what the renderer refuses in spec.source it refuses from the files, with the renderer's message", async () => {
    await assert.rejects(
      render({ path: 'kust-force' }),
      refused('InvalidSource', /^spec\.source\.kustomize\.notAField is not supported by impersync$/),
    );
    await assert.rejects(
      render({ path: 'file-param-out' }),
      refused(
        'InvalidSource',
        /^helm file parameter 'color' \(spec\.source\.helm\.fileParameters\[0\]\) file '\.\.\/\.\.\/outside-values\.yaml' of 'file-param-out' is outside the repository$/,
      ),
    );
    await assert.rejects(
      render({ path: 'value-file-out' }),
      refused(
        'InvalidSource',
        /^helm value file '\.\.\/\.\.\/outside-values\.yaml' of 'value-file-out' is outside the repository$/,
      ),
    );
    await assert.rejects(render({ path: 'flag-param' }), refused('InvalidSource', /release name/i));
  });

  test('a plugin set by a file makes the source a Plugin: refused when none is configured, not rendered as a Directory', async () => {
    await assert.rejects(
      render({ path: 'plugin' }),
      refused(
        'InvalidSource',
        /^CMP processing failed for application "app": could not find cmp-server plugin with name "my-cmp" supporting the given repository/,
      ),
    );
  });

  test('an application name cannot make the file name leave the folder: no such file is read', async () => {
    // `.argocd-source-../../x.yaml` would be checkout/x.yaml: it is not read, and the name then
    // meets the release name's own check.
    await assert.rejects(render({ path: 'empty' }, '../../x'), refused('InvalidSource', /invalid release name/));
  });

  test("an Application outside the controller's namespace reads .argocd-source-<namespace>_<name>.yaml, as Argo CD", async () => {
    const r = await renderCheckout(
      {
        checkoutDir: checkout,
        source: { repoURL: REPO, path: 'instance' } as ApplicationSource,
        appName: 'app',
        instanceName: 'team_app',
      },
      env,
    );
    assert.deepEqual(
      r.objects.map((o) => [o.object.metadata.name, (o.object.data as Record<string, string>)['tag']]),
      [['app-cfg', 'by-instance-name']],
    );
  });

  test('helm fileParameters a file sets are --set-file, as from spec.source', async () => {
    const r = await render({ path: 'file-params' });
    assert.deepEqual(
      r.objects.map((o) => (o.object.data as Record<string, string>)['color']),
      ['from-a-file'],
    );
  });

  test('a `$ref/...` file parameter a file adds, of a ref source not checked out for it, is refused', async () => {
    await assert.rejects(
      renderCheckout(
        {
          checkoutDir: checkout,
          source: { repoURL: REPO, path: 'file-param-ref' } as ApplicationSource,
          appName: 'app',
          refNames: ['$values'],
        },
        env,
      ),
      refused(
        'InvalidSource',
        /helm file parameter 'color' .*file '\$values\/x\.yaml' of 'file-param-ref': the ref source \$values is not checked out/,
      ),
    );
  });

  test('a `$ref/...` value file a file adds, of a ref source not checked out for it, is refused, not read from this source', async () => {
    const request = {
      checkoutDir: checkout,
      source: { repoURL: REPO, path: 'addref' } as ApplicationSource,
      appName: 'app',
    };
    await assert.rejects(
      renderCheckout({ ...request, refNames: ['$values'] }, env),
      refused(
        'InvalidSource',
        /helm value file '\$values\/x\.yaml' of 'addref': the ref source \$values is not checked out/,
      ),
    );
    // No such ref at all: `$values` is a build variable like any other, "" (Argo CD), so /x.yaml of this repository.
    await assert.rejects(
      renderCheckout(request, env),
      refused('InvalidSource', /'\$values\/x\.yaml' of 'addref' does not exist/),
    );
  });

  test('a field the renderer reads, of the wrong type in a file, is refused naming it', async () => {
    await assert.rejects(
      render({ path: 'typed-helm' }),
      refused('InvalidSource', inFile('typed-helm', /helm\.skipCrds: /)),
    );
    await assert.rejects(
      render({ path: 'typed-kust' }),
      refused('InvalidSource', inFile('typed-kust', /kustomize\.commonAnnotations: /)),
    );
  });

  test('attack: a FIFO named .argocd-source.yaml is refused at once, not waited on', async () => {
    await assert.rejects(
      render({ path: 'fifo' }),
      refused('InvalidSource', /fifo\/\.argocd-source\.yaml: it is not a regular file/),
    );
  });

  test('a source parameter file over 1 MiB is TooLarge even under a larger file limit', async () => {
    await assert.rejects(
      render({ path: 'huge' }),
      refused('TooLarge', inFile('huge', /it is .* over the 1 MiB limit/)),
    );
  });
});
