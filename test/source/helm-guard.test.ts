// The helm kustomize runs for helmCharts (the operator's --enable-helm): kustomize writes helm's
// command line from the chart's fields, so the renderer gives it a helm of its own (helm-guard.ts)
// that rebuilds that command line and checks it. The hostile charts try to run a program of the
// repository (a post-renderer named by releaseName, a downloader plugin in a configHome of the
// repository), to render a chart of the renderer's disk, and to make helm load a file through the
// chart's schema; each would write a marker or show the outside chart if it got through.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError, SourceRenderer } from '../../src/source/index.ts';
import { TestRepo, git } from '../support/git.ts';
import { toolsDir } from './tools.ts';

const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;
const chart = (dir: string, name: string, extra: Record<string, string> = {}) => ({
  [`${dir}/Chart.yaml`]: `apiVersion: v2\nname: ${name}\nversion: 0.1.0\n`,
  [`${dir}/values.yaml`]: '{}\n',
  [`${dir}/templates/cm.yaml`]: cm(`${name}-{{ .Release.Name }}`),
  ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [`${dir}/${k}`, v])),
});

describe("kustomize's helm runs only what kustomize means, checked", () => {
  let top: string;
  let marker: string;
  let repo: TestRepo;
  let renderer: SourceRenderer;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-helm-guard-'));
    marker = path.join(top, 'ran');
    const outside = path.join(top, 'outside');
    await mkdir(path.join(outside, 'templates'), { recursive: true });
    await writeFile(path.join(outside, 'Chart.yaml'), 'apiVersion: v2\nname: outside\nversion: 0.1.0\n');
    await writeFile(path.join(outside, 'values.yaml'), '{}\n');
    await writeFile(path.join(outside, 'templates', 'cm.yaml'), cm('chart-of-the-renderer'));
    await writeFile(path.join(top, 'secret.json'), JSON.stringify({ enum: ['hunter2'] }));
    const run = `#!/bin/sh\ntouch '${marker}'\ncat\n`;
    const plugin =
      'name: evil\nversion: 0.1.0\ncommand: "$HELM_PLUGIN_DIR/run.sh"\ndownloaders:\n- command: "run.sh"\n  protocols: [ssh]\n';
    repo = await TestRepo.create(path.join(top, 'repo'));
    await repo.commit({
      ...chart('ok/charts/c', 'c'),
      'ok/kustomization.yaml': 'helmCharts:\n- name: c\n  releaseName: r\n',
      ...chart('postrender/charts/c', 'c'),
      'postrender/run.sh': run,
      'postrender/kustomization.yaml': 'helmCharts:\n- name: c\n  releaseName: --post-renderer=./run.sh\n',
      'plugin/home/.data/plugins/evil/plugin.yaml': plugin,
      'plugin/home/.data/plugins/evil/run.sh': run,
      'plugin/kustomization.yaml':
        'helmGlobals:\n  configHome: home\nhelmCharts:\n- name: c\n  repo: ssh://git@github.com/tenant/charts\n  version: 1.0.0\n  releaseName: r\n',
      'away/kustomization.yaml': `helmCharts:\n- name: ${'../'.repeat(30)}${outside.slice(1)}\n  releaseName: r\n  valuesFile: values.yaml\n`,
      'away/values.yaml': '{}\n',
      ...chart('schema/charts/c', 'c', { 'values.schema.json': JSON.stringify({ $ref: `file://${top}/secret.json` }) }),
      'schema/kustomization.yaml': 'helmCharts:\n- name: c\n  releaseName: r\n',
    });
    for (const f of ['postrender/run.sh', 'plugin/home/.data/plugins/evil/run.sh']) {
      await chmod(path.join(repo.dir, f), 0o755);
    }
    git(repo.dir, 'add', '--all');
    git(repo.dir, 'commit', '--quiet', '-m', 'executable');
    renderer = new SourceRenderer({
      cacheDir: path.join(top, 'cache'),
      toolsDir: toolsDir(),
      kustomizeBuildOptions: ['--enable-helm'],
    });
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const render = (p: string) =>
    renderer.render({
      source: { repoURL: repo.url, path: p } as ApplicationSource,
      appName: 'app',
      sourceRepos: ['ssh://git@github.com/tenant/*', repo.url],
    });
  const refused = (message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof SourceError, String(err));
    assert.equal(err.reason, 'ToolFailed', err.message);
    assert.match(err.message, message);
    return true;
  };

  test('a chart of the repository inflates through the renderer', async () => {
    assert.deepEqual(
      (await render('ok')).objects.map((o) => o.object.metadata.name),
      ['c-r'],
    );
  });

  test('a release name is never read as a flag: no post-renderer runs', async () => {
    await assert.rejects(
      render('postrender'),
      refused(/refused by the renderer: helm release name "--post-renderer=\.\/run\.sh" is invalid/),
    );
    assert.ok(!existsSync(marker), 'the post-renderer never ran');
  });

  test("helm's homes are the renderer's: a plugin of the repository never runs", async () => {
    await assert.rejects(render('plugin'), refused(/could not find protocol handler for: ssh/));
    assert.ok(!existsSync(marker), 'the downloader plugin never ran');
  });

  test('a chart outside the repository is refused', async () => {
    await assert.rejects(
      render('away'),
      refused(/refused by the renderer: helm chart '.*outside' is outside the repository/),
    );
  });

  test("the chart's schema is held to the same rule as a Helm source's", async () => {
    await assert.rejects(render('schema'), refused(/values\.schema\.json: \$ref 'file:\/\/.*secret\.json' is refused/));
  });
});
