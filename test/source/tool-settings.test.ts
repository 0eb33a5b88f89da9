// argocd-cm's tool settings in a render, with the real kustomize and helm: spec.source.kustomize.version
// runs the binary of the admin's kustomize.path.<version> and no other, kustomize.buildOptions go
// through the renderer's flag guard, and a tool argocd-cm turned off reads the folder as plain YAML,
// as Argo CD's repo-server does.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { readToolSettings } from '../../src/api/tool-settings.ts';
import { SourceError, SourceRenderer, type RenderInput } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { toolsDir } from './tools.ts';

const cm = (name: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;

describe('argocd-cm tool settings', () => {
  let top: string;
  let repo: TestRepo;
  let wrapper: string;
  let marker: string;
  let n = 0;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-toolset-'));
    // The admin's "other version": a kustomize that leaves a mark, so the test sees which one ran.
    marker = path.join(top, 'admin-kustomize-ran');
    wrapper = path.join(top, 'kustomize-admin');
    await writeFile(wrapper, `#!/bin/sh\ntouch '${marker}'\nexec '${path.join(toolsDir(), 'kustomize')}' "$@"\n`);
    await chmod(wrapper, 0o755);
    repo = await TestRepo.create(path.join(top, 'repo'));
    await repo.commit({
      'k/kustomization.yaml':
        'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamePrefix: k-\nresources: [cm.yaml]\n',
      'k/cm.yaml': cm('one'),
      'kparams/kustomization.yaml': 'resources: [cm.yaml]\n',
      'kparams/cm.yaml': cm('two'),
      'kparams/.argocd-source.yaml': 'kustomize:\n  version: v-admin\n',
      'chart/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
      'chart/templates/cm.yaml': cm('{{ .Release.Name }}-templated'),
      'chart/plain.yaml': cm('plain'),
      'both/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
      'both/templates/cm.yaml': cm('from-the-chart'),
      'both/kustomization.yaml': 'resources: [extra.yaml]\n',
      'both/extra.yaml': cm('from-kustomize'),
      'jsonnet/cm.yaml': cm('beside-jsonnet'),
      'inflate/kustomization.yaml': 'helmCharts:\n- name: c\n  releaseName: r\n',
      'inflate/charts/c/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
      'inflate/charts/c/values.yaml': '{}\n',
      'inflate/charts/c/templates/cm.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n' +
        '  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n' +
        '  thing: {{ .Capabilities.APIVersions.Has "example.com/v1" | quote }}\n',
      'jsonnet/x.jsonnet': '{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "from-jsonnet" } }\n',
    });
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const render = (
    source: Partial<ApplicationSource>,
    cmData: Record<string, string>,
    extra: Partial<RenderInput> = {},
  ) =>
    new SourceRenderer({
      cacheDir: path.join(top, `cache-${++n}`),
      toolsDir: toolsDir(),
      allowLocalRepositories: true,
    }).render({
      source: { repoURL: repo.dir, ...source } as ApplicationSource,
      appName: 'app',
      tools: readToolSettings(cmData),
      ...extra,
    });
  const names = (r: Awaited<ReturnType<typeof render>>) => r.objects.map((o) => o.object.metadata.name);
  const refused = (reason: string, message: string | RegExp) => (err: unknown) => {
    assert.ok(err instanceof SourceError, String(err));
    assert.equal(err.reason, reason, err.message);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  };

  test("kustomize.version runs the binary of argocd-cm kustomize.path.<version>; without it, the renderer's", async () => {
    const settings = { 'kustomize.path.v-admin': wrapper };
    assert.deepEqual(names(await render({ path: 'k' }, settings)), ['k-one']);
    assert.equal(existsSync(marker), false, "no version asked: the renderer's own kustomize");
    assert.deepEqual(names(await render({ path: 'k', kustomize: { version: 'v-admin' } }, settings)), ['k-one']);
    assert.equal(existsSync(marker), true, "the admin's binary ran");
    await rm(marker);
    // A source parameter file may name the version too; the path is still only argocd-cm's.
    const fromFile = await render({ path: 'kparams' }, settings);
    assert.deepEqual(names(fromFile), ['two']);
    assert.equal(existsSync(marker), true);
  });

  test("an unknown version is Argo CD's error; a path given as the version is only a name", async () => {
    for (const version of ['v9.9.9', wrapper, '/bin/sh'])
      await assert.rejects(
        render({ path: 'k', kustomize: { version } }, { 'kustomize.path.v-admin': wrapper }),
        refused('InvalidSource', `error getting kustomize binary path: kustomize version ${version} is not registered`),
      );
    await assert.rejects(
      render({ path: 'k', kustomize: { version: 'v-admin' } }, {}),
      refused('InvalidSource', 'error getting kustomize binary path: kustomize version v-admin is not registered'),
    );
  });

  test("a relative kustomize.path is refused: it would be looked up among the tenant's files", async () => {
    await assert.rejects(
      render({ path: 'k', kustomize: { version: 'v1' } }, { 'kustomize.path.v1': 'bin/kustomize' }),
      refused('InvalidSource', "argocd-cm kustomize.path.v1 must be an absolute path, not 'bin/kustomize'"),
    );
  });

  test('kustomize.buildOptions go through the flag guard; per-version ones are not used, as in Argo CD', async () => {
    await assert.rejects(
      render({ path: 'k' }, { 'kustomize.buildOptions': '--load-restrictor LoadRestrictionsNone' }),
      refused('InvalidSource', /^kustomize build option '--load-restrictor' is refused: /),
    );
    const r = await render(
      { path: 'k', kustomize: { version: 'v-admin' } },
      {
        'kustomize.buildOptions': '--enable-managedby-label',
        'kustomize.path.v-admin': wrapper,
        'kustomize.buildOptions.v-admin': '--load-restrictor LoadRestrictionsNone',
      },
    );
    assert.equal(r.objects[0]?.object.metadata.labels?.['app.kubernetes.io/managed-by'], 'kustomize-v5.8.3');
  });

  test("with --enable-helm, helmCharts get the destination's versions, as Argo CD appends them", async () => {
    const r = await render(
      { path: 'inflate' },
      { 'kustomize.buildOptions': '--enable-helm --helm-kube-version 1.20.0' },
      { kubeVersion: 'v1.31.4-eks.1', apiVersions: ['example.com/v1'] },
    );
    const data = (r.objects[0]?.object as unknown as { data: Record<string, string> }).data;
    assert.deepEqual(data, { kube: 'v1.31.4', thing: 'true' });
  });

  test("with --enable-helm, spec.source.kustomize.kubeVersion and apiVersions win over the destination's, as Argo CD", async () => {
    const helm = { 'kustomize.buildOptions': '--enable-helm' };
    const destination = { kubeVersion: 'v1.31.4-eks.1', apiVersions: ['example.com/v1'] };
    const data = async (kustomize: Record<string, unknown>) =>
      (
        (await render({ path: 'inflate', kustomize } as Partial<ApplicationSource>, helm, destination)).objects[0]
          ?.object as unknown as { data: Record<string, string> }
      ).data;
    assert.deepEqual(await data({ kubeVersion: 'v1.29.1-gke.2', apiVersions: ['other.io/v1'] }), {
      kube: 'v1.29.1',
      thing: 'false',
    });
    // Empty, the destination's are used.
    assert.deepEqual(await data({ kubeVersion: '', apiVersions: [] }), { kube: 'v1.31.4', thing: 'true' });
    // Argo CD parses the version before the build, helm enabled or not.
    for (const cm of [helm, {}])
      await assert.rejects(
        render({ path: 'k', kustomize: { kubeVersion: 'banana' } } as Partial<ApplicationSource>, cm),
        refused('InvalidSource', /^could not parse kubernetes version banana: could not parse "banana" as version$/),
      );
  });

  test('kustomize.enable off: the kustomization folder is read as plain YAML, explicit or discovered', async () => {
    const off = { 'kustomize.enable': 'false' };
    for (const source of [{ path: 'k' }, { path: 'k', kustomize: { namePrefix: 'x-' } }]) {
      const r = await render(source, off);
      assert.equal(r.sourceType, 'Directory');
      assert.deepEqual(names(r), ['one']);
    }
    // Beside a Chart.yaml, the folder is then the chart.
    const both = await render({ path: 'both' }, off);
    assert.equal(both.sourceType, 'Helm');
    assert.deepEqual(names(both), ['from-the-chart']);
  });

  test('helm.enable off: a chart folder is read as plain YAML, its templates not rendered', async () => {
    const r = await render({ path: 'chart' }, { 'helm.enable': 'false' });
    assert.equal(r.sourceType, 'Directory');
    assert.deepEqual(names(r), ['plain']);
    assert.equal((await render({ path: 'chart' }, {})).sourceType, 'Helm');
  });

  test('jsonnet.enable off: .jsonnet files are left out instead of evaluated', async () => {
    assert.deepEqual(names(await render({ path: 'jsonnet' }, { 'jsonnet.enable': 'false' })), ['beside-jsonnet']);
    assert.deepEqual(names(await render({ path: 'jsonnet' }, {})), ['beside-jsonnet', 'from-jsonnet']);
  });
});

test("argocd-cm helm.valuesFileSchemes read as Argo CD's GetHelmSettings: split on commas, trimmed; absent is the default", () => {
  assert.equal(readToolSettings({})?.valuesFileSchemes, undefined, 'absent: the renderer uses https and http');
  assert.deepEqual(readToolSettings({ 'helm.valuesFileSchemes': ' https , s3,,' })?.valuesFileSchemes, ['https', 's3']);
  assert.deepEqual(
    readToolSettings({ 'helm.valuesFileSchemes': '' })?.valuesFileSchemes,
    [],
    'present and empty: no scheme allowed',
  );
});
