// The helm kustomize runs for helmCharts (the operator's --enable-helm): kustomize writes helm's
// command line from the chart's fields, so the renderer gives it a helm of its own (helm-guard.ts)
// that rebuilds that command line and checks it. The hostile charts try to run a program of the
// repository (a post-renderer named by releaseName, a downloader plugin in a configHome of the
// repository), to render a chart of the renderer's disk, and to make helm load a file through the
// chart's schema; each would write a marker or show the outside chart if it got through.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { HELM_GUARD_POLICY_ENV, writeHelmShim, type HelmGuardPolicy } from '../../src/source/kustomize-helm.ts';
import { SourceError, SourceRenderer } from '../../src/source/index.ts';
import { TestRepo, git } from '../support/git.ts';
import { chartArchive, startHelmRepo, tarGz, type HelmRepoServer } from '../support/helm.ts';
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
    // kustomize 5.8.3 refuses such a name itself; the renderer's guard (tested alone below) is behind it.
    await assert.rejects(
      render('postrender'),
      refused(
        /releaseName must not start with '-', got "--post-renderer=\.\/run\.sh"|refused by the renderer: helm release name "--post-renderer=\.\/run\.sh" is invalid/,
      ),
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

describe('the helm guard, called as kustomize calls it', () => {
  let top: string;
  let shim: string;
  let argvFile: string;
  let root: string;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-helm-guard-direct-'));
    shim = await writeHelmShim(path.join(top, 'bin'));
    // The "real" helm records the arguments and environment it was given.
    argvFile = path.join(top, 'argv');
    await writeFile(
      path.join(top, 'helm'),
      `#!/bin/sh\nprintf '%s\\n' "$@" > '${argvFile}'\nenv > '${argvFile}.env'\n`,
    );
    await chmod(path.join(top, 'helm'), 0o755);
    root = path.join(top, 'checkout');
    await mkdir(path.join(root, 'charts', 'c'), { recursive: true });
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const helm = (...args: string[]) => {
    const policy: HelmGuardPolicy = {
      helm: path.join(top, 'helm'),
      roots: [root],
      sourceRepos: ['https://charts.example.com/*', 'https://ghcr.io/tenant/*'],
      home: path.join(top, 'home'),
    };
    const env = {
      ...process.env,
      [HELM_GUARD_POLICY_ENV]: JSON.stringify(policy),
      HELM_DATA_HOME: path.join(root, 'x'),
      SECRET: 's',
    };
    return spawnSync(shim, args, { env, encoding: 'utf8' });
  };
  const ran = async () => (await readFile(argvFile, 'utf8')).trimEnd().split('\n');

  test("kustomize's commands run rebuilt: every value as --flag=value, positional arguments after --", async () => {
    const chart = path.join(root, 'charts', 'c');
    let r = helm(
      'template',
      'r',
      chart,
      '--namespace',
      '--post-renderer=x',
      '-f',
      path.join(root, 'v.yaml'),
      '--include-crds',
    );
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(await ran(), [
      'template',
      '--namespace=--post-renderer=x',
      `--values=${path.join(root, 'v.yaml')}`,
      '--include-crds',
      '--',
      'r',
      chart,
    ]);
    const env = await readFile(`${argvFile}.env`, 'utf8');
    assert.match(env, new RegExp(`^HELM_DATA_HOME=${path.join(top, 'home', 'data')}$`, 'm'), "the renderer's homes");
    assert.doesNotMatch(env, /^SECRET=/m, 'nothing else of the environment');
    r = helm(
      'pull',
      '--untar',
      '--untardir',
      path.join(root, 'charts', 'c-1.0.0'),
      '--repo',
      'https://charts.example.com/stable',
      'c',
      '--version',
      '1.0.0',
    );
    assert.equal(r.status, 0, r.stderr);
    const [, , untardir, ...after] = await ran();
    assert.ok(
      untardir?.startsWith(`--untardir=${path.join(root, 'charts', 'c-1.0.0', '.impersync-pull-')}`),
      `helm unpacks into a folder of its own in the chart home, not ${untardir}`,
    );
    assert.deepEqual(after, ['--repo=https://charts.example.com/stable', '--version=1.0.0', '--', 'c']);
    r = helm('pull', '--untar', '--untardir', path.join(root, 'charts'), 'oci://ghcr.io/tenant/c');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(helm('version', '--short').status, 0);
  });

  test('anything else is refused before helm runs', async () => {
    const chart = path.join(root, 'charts', 'c');
    for (const [args, message] of [
      [['template', '--post-renderer=./x', chart], /helm release name "--post-renderer=\.\/x" is invalid/],
      [['template', 'r', '/etc'], /helm chart '\/etc' is outside the repository/],
      [['template', 'r', chart, '-f', '/etc/passwd'], /helm values file '\/etc\/passwd' is outside the repository/],
      [
        ['template', 'r', chart, '--post-renderer', 'x'],
        /helm template option '--post-renderer' is not one kustomize gives/,
      ],
      [
        ['pull', '--untar', '--untardir', '/tmp/x', '--repo', 'https://charts.example.com/s', 'c'],
        /chart home '\/tmp\/x' is outside/,
      ],
      [
        ['pull', '--untar', '--untardir', chart, '--repo', 'https://evil.example.com/s', 'c'],
        /chart repository 'https:\/\/evil\.example\.com\/s' is refused/,
      ],
      [['pull', '--untar', '--untardir', chart, '--repo', 'file:///srv/charts', 'c'], /is not a network repository/],
      [
        ['pull', '--untar', '--untardir', chart, '--repo', 'https://charts.example.com/s', '--keyring=/x'],
        /not a chart name/,
      ],
      [['plugin', 'install', 'x'], /is not a command kustomize runs/],
    ] as const) {
      await rm(argvFile, { force: true });
      const r = helm(...args);
      assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`^refused by the renderer: .*${message.source}`));
      assert.ok(!existsSync(argvFile), `helm did not run for ${args.join(' ')}`);
    }
  });
});

// A pull writes where the chart's own Chart.yaml says (`<untardir>/<its name>`), and kustomize pulls
// only when the chart is not already in its chart home. In the commit's shared checkout, a chart
// named after another team's folder would replace that folder's files for every render of the
// commit, and a pulled chart would stay for any later render to use without its pull being judged.
describe('a pulled chart lands in the render alone', () => {
  let top: string;
  let charts: HelmRepoServer;
  let repo: TestRepo;
  let renderer: SourceRenderer;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-helm-pull-'));
    charts = await startHelmRepo({ plain: true });
    // Listed as `evil`, its Chart.yaml names it `victim`: helm unpacks it as <chart home>/victim.
    const evil = tarGz([
      { path: 'evil/Chart.yaml', content: 'apiVersion: v2\nname: victim\nversion: 1.0.0\n' },
      { path: 'evil/cm.yaml', content: cm('pwned') },
    ]);
    // A chart that carries a kustomization: a base listed after the one that pulls it is read by
    // kustomize once pulled, long after the renderer checked the tree.
    const carrier = chartArchive('k', '1.0.0', { 'kustomization.yaml': 'resources:\n- ../../../../victim\n' });
    charts.setCharts([
      { name: 'c', version: '1.0.0', archive: chartArchive('c', '1.0.0') },
      { name: 'evil', version: '1.0.0', archive: evil },
      { name: 'k', version: '1.0.0', archive: carrier },
    ]);
    repo = await TestRepo.create(path.join(top, 'repo'));
    await repo.commit({
      'victim/kustomization.yaml': 'resources:\n- cm.yaml\n',
      'victim/cm.yaml': cm('original'),
      'attack/kustomization.yaml': `helmGlobals:\n  chartHome: ..\nhelmCharts:\n- name: evil\n  repo: ${charts.url}\n  releaseName: r\n`,
      'nested/kustomization.yaml': 'resources:\n- a\n- a/charts/k\n',
      'nested/a/kustomization.yaml': `helmCharts:\n- name: k\n  repo: ${charts.url}\n  releaseName: r\n`,
      'pull/kustomization.yaml': `helmCharts:\n- name: c\n  repo: ${charts.url}\n  version: 1.0.0\n  releaseName: r\n`,
      // The folder the pull makes its chart in, with a kustomization of its own that names no repository.
      'pull/charts/c-1.0.0/kustomization.yaml':
        'helmGlobals:\n  chartHome: .\nhelmCharts:\n- name: c\n  releaseName: r\n',
    });
    renderer = new SourceRenderer({
      cacheDir: path.join(top, 'cache'),
      toolsDir: toolsDir(),
      kustomizeBuildOptions: ['--enable-helm'],
    });
  });
  after(async () => {
    await charts?.close();
    if (top) await rm(top, { recursive: true, force: true });
  });

  const render = (p: string, sourceRepos: string[]) =>
    renderer.render({
      source: { repoURL: repo.url, path: p } as ApplicationSource,
      appName: p,
      sourceRepos,
    });
  const names = async (p: string, sourceRepos: string[]) =>
    (await render(p, sourceRepos)).objects.map((o) => o.object.metadata.name);

  test("a chart named after another folder never replaces that folder's files", async () => {
    assert.deepEqual(await names('victim', [repo.url]), ['original']);
    await assert.rejects(
      render('attack', [repo.url, charts.url]),
      /the chart pulled for 'evil' unpacks as "victim", which is already in its chart home '\.': a pulled chart never replaces files of the repository/,
    );
    assert.deepEqual(await names('victim', [repo.url]), ['original'], "the victim's folder of the commit is its own");
  });

  test("a pulled chart's kustomizations are checked as the repository's, inside the chart", async () => {
    await assert.rejects(
      render('nested', [repo.url, charts.url]),
      /refused by the renderer: the chart pulled for 'k', kustomization\.yaml: resources '\.\.\/\.\.\/\.\.\/\.\.\/victim' leads outside the repository/,
    );
  });

  test('a chart pulled for one render is not there for the next', async () => {
    const allowed = [repo.url, charts.url];
    assert.deepEqual(await names('pull', allowed), ['c-r']);
    // A project that may not pull from the chart repository finds no chart left behind to use.
    await assert.rejects(render('pull/charts/c-1.0.0', [repo.url]), /no chart found/);
  });
});
