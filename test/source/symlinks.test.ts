// The use-time symlink checks of renderCheckout, on a folder made by hand rather than by the Git
// cache: the checkout-wide check (git.test.ts) never lets such a tree through, so these tests see
// the second line of defence alone. Beside the "checkout" sits a secret that no render may read.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError } from '../../src/source/errors.ts';
import { findEscapingSymlink } from '../../src/source/paths.ts';
import { DEFAULT_LIMITS, renderCheckout, type RenderEnvironment } from '../../src/source/render.ts';
import { renderEnvironment, toolsDir } from './tools.ts';

const cm = (name: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;

describe('renderCheckout refuses paths that leave the checkout through symlinks', () => {
  let top: string;
  let checkout: string;
  let env: RenderEnvironment;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-symlinks-'));
    checkout = path.join(top, 'checkout');
    const files: Record<string, string> = {
      'secret.yaml': cm('secret-of-the-renderer'),
      'values-secret.yaml': 'color: secret\n',
      'secret-k/kustomization.yaml': 'resources: [../secret.yaml]\n',
      'checkout/k/kustomization.yaml': 'resources: [../x/secret-k]\n',
      'secret-c/kustomization.yaml':
        'apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml]\n',
      'secret-c/cm.yaml': cm('secret-of-the-renderer'),
      'checkout/k2/kustomization.yaml': 'resources: [a.yaml]\n',
      'checkout/k2/a.yaml': cm('a'),
      'checkout/plain/a.yaml': cm('a'),
      'checkout/chart/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
      'checkout/chart/templates/cm.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  color: {{ .Values.color | default "none" | quote }}\n',
    };
    for (const [rel, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(top, rel)), { recursive: true });
      await writeFile(path.join(top, rel), text);
    }
    // l -> . and x -> l/..: lexically x is the checkout itself; physically it is its parent.
    await symlink('.', path.join(checkout, 'l'));
    await symlink('l/..', path.join(checkout, 'x'));
    await symlink('../x/secret.yaml', path.join(checkout, 'plain/leak.yaml'));
    env = renderEnvironment(path.join(top, 'cache'));
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const render = (source: Record<string, unknown>) =>
    renderCheckout({ checkoutDir: checkout, source: source as ApplicationSource, appName: 'app' }, env);
  const refused = (message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof SourceError, String(err));
    assert.equal(err.reason, 'InvalidSource', err.message);
    assert.match(err.message, message);
    assert.doesNotMatch(err.message, new RegExp(top), 'no absolute path in the message');
    return true;
  };

  test('spec.source.path', async () => {
    await assert.rejects(
      render({ repoURL: 'https://example.com/r.git', path: 'x' }),
      refused(/^app path 'x' leads outside the repository through a symlink$/),
    );
  });

  test('a file of a Directory source', async () => {
    await assert.rejects(
      render({ repoURL: 'https://example.com/r.git', path: 'plain' }),
      refused(/^plain\/leak\.yaml is a symlink that leads outside the repository$/),
    );
  });

  test('a base of a kustomization', async () => {
    await assert.rejects(
      render({ repoURL: 'https://example.com/r.git', path: 'k' }),
      refused(/^k\/kustomization\.yaml: resources '\.\.\/x\/secret-k' leads outside the repository$/),
    );
  });

  test('a kustomize component, refused; left out with ignoreMissingComponents, as Argo CD leaves out one os.Root cannot stat', async () => {
    for (const component of ['../x/secret-c', '../l/../x/secret-c', '../x/secret-*']) {
      await assert.rejects(
        render({ repoURL: 'https://example.com/r.git', path: 'k2', kustomize: { components: [component] } }),
        refused(
          new RegExp(
            `^kustomize component '${component.replace(/[.*/]/g, '\\$&')}' of 'k2' leads outside the repository through a symlink$`,
          ),
        ),
      );
      const ok = await render({
        repoURL: 'https://example.com/r.git',
        path: 'k2',
        kustomize: { components: [component], ignoreMissingComponents: true },
      });
      assert.deepEqual(
        ok.objects.map((o) => o.object.metadata.name),
        ['a'],
      );
    }
  });

  test('a Helm file parameter', async () => {
    await assert.rejects(
      render({
        repoURL: 'https://example.com/r.git',
        path: 'chart',
        helm: { fileParameters: [{ name: 'color', path: '../x/values-secret.yaml' }] },
      }),
      refused(
        /^helm file parameter 'color' \(spec\.source\.helm\.fileParameters\[0\]\) file '\.\.\/x\/values-secret\.yaml' of 'chart' leads outside the repository through a symlink$/,
      ),
    );
  });

  test('a Helm value file', async () => {
    await assert.rejects(
      render({
        repoURL: 'https://example.com/r.git',
        path: 'chart',
        helm: { valueFiles: ['../x/values-secret.yaml'] },
      }),
      refused(
        /^helm value file '\.\.\/x\/values-secret\.yaml' of 'chart' leads outside the repository through a symlink$/,
      ),
    );
    const ok = await render({ repoURL: 'https://example.com/r.git', path: 'chart' });
    assert.deepEqual(
      ok.objects.map((o) => o.object.metadata.name),
      ['cfg'],
    );
  });
});

test("a symlink in a chart archive under charts/ reads nothing: helm takes archives' entries as they are", async () => {
  const top = await mkdtemp(path.join(os.tmpdir(), 'impersync-chart-archive-'));
  try {
    await writeFile(path.join(top, 'secret.txt'), 'secret-of-the-renderer');
    const sub = path.join(top, 'build', 'sub');
    await mkdir(path.join(sub, 'templates'), { recursive: true });
    await writeFile(path.join(sub, 'Chart.yaml'), 'apiVersion: v2\nname: sub\nversion: 0.1.0\n');
    await writeFile(
      path.join(sub, 'templates', 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\ndata:\n  leak: {{ .Files.Get "leak" | quote }}\n',
    );
    await symlink(path.join(top, 'secret.txt'), path.join(sub, 'leak'));
    const checkout = path.join(top, 'checkout');
    await mkdir(path.join(checkout, 'chart', 'charts'), { recursive: true });
    await writeFile(path.join(checkout, 'chart', 'Chart.yaml'), 'apiVersion: v2\nname: c\nversion: 0.1.0\n');
    const tar = spawnSync('tar', [
      'czf',
      path.join(checkout, 'chart', 'charts', 'sub-0.1.0.tgz'),
      '-C',
      path.dirname(sub),
      'sub',
    ]);
    assert.equal(tar.status, 0, String(tar.stderr));
    const r = await renderCheckout(
      {
        checkoutDir: checkout,
        source: { repoURL: 'https://example.com/r.git', path: 'chart' } as ApplicationSource,
        appName: 'app',
      },
      {
        tools: { dir: toolsDir() },
        limits: DEFAULT_LIMITS,
        workRoot: path.join(top, 'work'),
        helmHome: path.join(top, 'helm'),
        env: process.env,
      },
    );
    assert.deepEqual(
      r.objects.map((o) => o.object.data),
      [{ leak: '' }],
    );
  } finally {
    await rm(top, { recursive: true, force: true });
  }
});

describe('the checkout-wide symlink check takes bounded time', () => {
  let top: string;
  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-symlink-chains-'));
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  /** `count` chains of 39 links (the kernel follows 40) in `dir`, the first at `end`, each written `via` + the one before. */
  const chains = async (dir: string, count: number, end: string, via = '') => {
    await mkdir(dir, { recursive: true });
    for (let c = 0; c < count; c++) {
      let previous = end;
      for (let i = 0; i < 39; i++) {
        await symlink(`${via}${previous}`, path.join(dir, `c${c}-${i}`));
        previous = `c${c}-${i}`;
      }
    }
  };

  test('many chains of links that resolve are checked quickly', async () => {
    const root = path.join(top, 'resolving');
    await mkdir(path.join(root, 'a/b/c/d'), { recursive: true });
    await writeFile(path.join(root, 'a/b/c/d/target.yaml'), 'a: 1\n');
    await chains(path.join(root, 'a/b/c/d'), 1000, 'target.yaml');
    // On a loaded 2-core machine: 186 s when each link was walked component by component, 10 s now
    // (measured, not asserted: no test asserts a wall-clock time).
    assert.equal(await findEscapingSymlink(root), undefined);
  });

  test('dangling links that would take too long to follow are reported, at once', async () => {
    const root = path.join(top, 'dangling');
    // Each step of each chain a long way round: walked one component at a time, hours.
    await chains(path.join(root, 'a/i'), 100, 'missing.yaml', '../i/'.repeat(50));
    // 'complex': given up at the bound on the steps followed, not walked to the end.
    assert.equal((await findEscapingSymlink(root))?.why, 'complex');
  });
});
