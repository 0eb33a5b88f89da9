// What a kustomization may make kustomize read or run, checked before the build (kustomize-check.ts,
// kustomize-options.ts): local paths stay inside the checkout, the load restrictor stays on, exec
// and container functions are refused, Helm charts only inflate when the operator enabled them and
// their repository is allowed, and build options are an allow-list.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError, SourceRenderer, type SourceRendererOptions } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { toolsDir } from './tools.ts';

const cm = (name: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;

describe('kustomizations are checked before kustomize runs', () => {
  let top: string;
  let secretDir: string;
  let marker: string;
  let repo: TestRepo;
  let n = 0;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-kcheck-'));
    // A kustomization of the renderer's disk (another tenant's checkout, say) that no render may read.
    secretDir = path.join(top, 'secret');
    await mkdir(secretDir);
    await writeFile(path.join(secretDir, 'kustomization.yaml'), 'resources: [cm.yaml]\n');
    await writeFile(path.join(secretDir, 'cm.yaml'), cm('secret-of-the-renderer'));
    // A chart of the renderer's disk, outside every checkout.
    const chart = path.join(top, 'charts', 'c');
    await mkdir(path.join(chart, 'templates'), { recursive: true });
    await writeFile(path.join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: c\nversion: 0.1.0\n');
    await writeFile(path.join(chart, 'values.yaml'), '{}\n');
    await writeFile(path.join(chart, 'templates', 'cm.yaml'), cm('chart-of-the-renderer'));
    marker = path.join(top, 'function-ran');
    const fn = (name: string) =>
      `apiVersion: example.com/v1\nkind: Touch\nmetadata:\n  name: ${name}\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: ./touch.sh\n`;
    repo = await TestRepo.create(path.join(top, 'repo'));
    await repo.commit({
      'local/kustomization.yaml': 'resources: [cm.yaml]\n',
      'local/cm.yaml': cm('local'),
      'sibling/kustomization.yaml': 'resources: [../local]\n',
      'outside/kustomization.yaml': `resources: ['${'../'.repeat(40)}${secretDir.slice(1)}']\n`,
      'absolute/kustomization.yaml': `resources: ['${secretDir}']\n`,
      'restrictor/kustomization.yaml': 'configMapGenerator:\n- name: c\n  files: [../local/cm.yaml]\n',
      'fn/kustomization.yaml': 'resources: [../local]\ntransformers: [fn.yaml]\n',
      'fn/fn.yaml': fn('file'),
      'fn/touch.sh': `#!/bin/sh\ntouch '${marker}'\ncat\n`,
      'fninline/kustomization.yaml': `resources: [../local]\ngenerators:\n- |\n${fn('inline')
        .split('\n')
        .map((l) => `  ${l}`)
        .join('\n')}\n`,
      'fndir/kustomization.yaml': 'resources: [../local]\ntransformers: [../fn-configs]\n',
      'fn-configs/kustomization.yaml': 'resources: [fn.yaml]\n',
      'fn-configs/fn.yaml': fn('in-a-folder'),
      'helm/kustomization.yaml':
        'helmCharts:\n- name: nginx\n  repo: https://charts.example.com/stable\n  version: 1.0.0\n  releaseName: x\n',
      // Port 9 of loopback: were it let through, nothing leaves the machine.
      'helmoci/kustomization.yaml':
        'helmCharts:\n- name: nginx\n  repo: oci://127.0.0.1:9/charts\n  version: 1.0.0\n  releaseName: x\n',
      // kustomize reads field names as Go's encoding/json does: case-insensitively, with Unicode folding.
      'case/kustomization.yaml': `Resources: ['${'../'.repeat(40)}${secretDir.slice(1)}']\n`,
      'fold/kustomization.yaml': `re\u017fources: ['${secretDir}']\n`,
      'casefiles/kustomization.yaml': 'configMapGenerator:\n- name: c\n  Files: [https://example.com/stolen]\n',
      'helmgen/kustomization.yaml': 'generators: [gen.yaml]\n',
      'helmgen/gen.yaml': `apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata:\n  name: x\nname: c\nreleaseName: r\nchartHome: ${path.dirname(chart)}\n`,
      'casehelm/kustomization.yaml': 'HELMCHARTS:\n- name: nginx\n  releaseName: x\n',
    });
    await chmod(path.join(repo.dir, 'fn/touch.sh'), 0o755);
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const renderer = (opts: Partial<SourceRendererOptions> = {}) =>
    new SourceRenderer({
      cacheDir: path.join(top, `cache-${++n}`),
      toolsDir: toolsDir(),
      allowLocalRepositories: true,
      ...opts,
    });
  const render = (r: SourceRenderer, p: string, sourceRepos?: string[]) =>
    r.render({
      source: { repoURL: repo.dir, path: p } as ApplicationSource,
      appName: 'app',
      ...(sourceRepos ? { sourceRepos } : {}),
    });
  const refused = (reason: string, message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof SourceError, String(err));
    assert.equal(err.reason, reason, err.message);
    assert.match(err.message, message);
    return true;
  };

  test('a local base anywhere in the checkout is fine; one outside it is refused', async () => {
    const r = renderer();
    assert.deepEqual(
      (await render(r, 'sibling')).objects.map((o) => o.object.metadata.name),
      ['local'],
    );
    await assert.rejects(
      render(r, 'outside'),
      refused(
        'InvalidSource',
        /^outside\/kustomization\.yaml: resources '(\.\.\/)+.*secret' leads outside the repository$/,
      ),
    );
    await assert.rejects(
      render(r, 'absolute'),
      refused(
        'InvalidSource',
        /^absolute\/kustomization\.yaml: resources '.*secret' is refused: absolute paths are not allowed$/,
      ),
    );
  });

  test("kustomize's load restrictor stays on (LoadRestrictionsRootOnly), and build options cannot turn it off", async () => {
    await assert.rejects(
      render(renderer(), 'restrictor'),
      refused(
        'ToolFailed',
        /^kustomize build of 'restrictor' failed: .*security; file 'local\/cm\.yaml' is not in or below 'restrictor'/s,
      ),
    );
    for (const opts of [
      ['--load-restrictor', 'LoadRestrictionsNone'],
      ['--load-restrictor=LoadRestrictionsNone'],
      ['--enable-alpha-plugins'],
      ['--enable-exec'],
      ['-o', '/tmp/out'],
      ['--mount=type=bind,src=/,dst=/host'],
      ['--no-such-flag'],
    ]) {
      await assert.rejects(
        render(renderer({ kustomizeBuildOptions: opts }), 'local'),
        refused('InvalidSource', /^kustomize build option '-.*' is (refused|not allowed)/),
      );
    }
    const helm = renderer({ kustomizeBuildOptions: ['--enable-helm', '--helm-kube-version', '1.30.0'] });
    assert.equal((await render(helm, 'local')).objects.length, 1, 'allowed options pass');
  });

  test('field names are read as kustomize reads them: any case, and Unicode case folding', async () => {
    for (const [p, message] of [
      ['case', /^case\/kustomization\.yaml: resources '(\.\.\/)+.*secret' leads outside the repository$/],
      ['fold', /^fold\/kustomization\.yaml: resources '.*secret' is refused: absolute paths are not allowed$/],
      [
        'casefiles',
        /^casefiles\/kustomization\.yaml: configMapGenerator\[\]\.files 'https:\/\/example\.com\/stolen' is refused: the project's sourceRepos do not allow/,
      ],
      ['casehelm', /^casehelm\/kustomization\.yaml: helmCharts are refused: .*--enable-helm/],
    ] as const) {
      await assert.rejects(render(renderer(), p, ['https://github.com/*']), refused('InvalidSource', message));
    }
  });

  test('exec and container functions are refused, in a file, inline or in a folder of configs', async () => {
    for (const [p, where] of [
      ['fn', /^fn\/fn\.yaml: transformers: a KRM function/],
      ['fninline', /^fninline\/kustomization\.yaml: generators \(inline\): a KRM function/],
      ['fndir', /^fn-configs\/fn\.yaml: resources: a KRM function/],
    ] as const) {
      await assert.rejects(render(renderer(), p), refused('InvalidSource', where));
    }
    assert.ok(!existsSync(marker), 'no function ran');
  });

  test('a HelmChartInflationGenerator config is held to the same rules as helmCharts: its chart home stays inside', async () => {
    const helm = renderer({
      kustomizeBuildOptions: ['--enable-helm', '--helm-command', path.join(toolsDir(), 'helm')],
    });
    await assert.rejects(
      render(helm, 'helmgen'),
      refused(
        'InvalidSource',
        /^helmgen\/gen\.yaml: helmGlobals\.chartHome '.*charts' is refused: absolute paths are not allowed$/,
      ),
    );
  });

  test('Helm charts inflate only with the operator enabling --enable-helm, from repositories the project allows', async () => {
    await assert.rejects(
      render(renderer(), 'helm', ['*']),
      refused('InvalidSource', /^helm\/kustomization\.yaml: helmCharts are refused: .*--enable-helm/),
    );
    await assert.rejects(
      render(renderer({ kustomizeBuildOptions: ['--enable-helm'] }), 'helm', ['https://github.com/*']),
      refused(
        'InvalidSource',
        /^helm\/kustomization\.yaml: helm chart repository 'https:\/\/charts\.example\.com\/stable' is refused: the project's sourceRepos do not allow/,
      ),
    );
    // An oci:// chart repository is the OCI repository it is: a `!` entry written as Argo CD writes
    // OCI repositories (no scheme) denies it, as it denies a chart dependency's.
    await assert.rejects(
      render(renderer({ kustomizeBuildOptions: ['--enable-helm'] }), 'helmoci', ['*', '!127.0.0.1:9/*']),
      refused(
        'InvalidSource',
        /^helmoci\/kustomization\.yaml: helm chart repository 'oci:\/\/127\.0\.0\.1:9\/charts' is refused: the project's sourceRepos do not allow 'oci:\/\/127\.0\.0\.1:9\/charts' \(denied by sourceRepos entry '!127\.0\.0\.1:9\/\*'\)$/,
      ),
    );
  });
});
