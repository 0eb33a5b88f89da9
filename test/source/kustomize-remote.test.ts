// kustomize's remote bases and resources, end to end with real kustomize and git against the
// smart-HTTP test server: allowed only when the project's sourceRepos allow their repository, over
// the network only, and held to the same rules inside the remote bases kustomize clones (which only
// the git of kustomize-git.ts sees). Also: local paths that leave the checkout, the build options
// allow-list, KRM functions and Helm charts inflated by kustomize.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError, SourceRenderer, type RenderInput } from '../../src/source/index.ts';
import { TestRepo, startGitHttpServer, type GitHttpServer } from '../support/git.ts';
import { toolsDir } from './tools.ts';

const cm = (name: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;
const kustomization = (resources: string[]): string => `resources:\n${resources.map((r) => `- ${r}\n`).join('')}`;

describe('kustomize remote bases and what kustomize may read', () => {
  let top: string;
  let git: GitHttpServer;
  let raw: http.Server;
  let rawURL: string;
  let app: TestRepo;
  let renderer: SourceRenderer;
  let url: (repo: string, rest?: string) => string;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-kremote-'));
    const served = path.join(top, 'served');
    git = await startGitHttpServer(served);
    url = (repo, rest = '//app?ref=main') => `${git.url(`org/${repo}.git`)}${rest}`;
    // A plain http server for raw files, like raw.githubusercontent.com.
    raw = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // /gen/...: a generator config that reads a file of this server.
      if (req.url?.startsWith('/gen/')) res.end(generator(`${rawURL}/evil/files/fetched.yaml`));
      else res.end(cm(`raw-${path.basename(req.url ?? '', '.yaml')}`));
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    rawURL = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;

    const repo = async (name: string, files: Record<string, string>) =>
      (await TestRepo.create(path.join(served, 'org', `${name}.git`))).commit(files);
    await repo('base', { 'app/kustomization.yaml': kustomization(['cm.yaml']), 'app/cm.yaml': cm('from-base') });
    await repo('evil', { 'app/kustomization.yaml': kustomization(['cm.yaml']), 'app/cm.yaml': cm('from-evil') });
    await repo('nested', { 'app/kustomization.yaml': kustomization([url('evil')]) });
    await repo('comp', {
      'app/kustomization.yaml': 'apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml]\n',
      'app/cm.yaml': cm('from-component'),
    });
    await repo('nestedraw', { 'app/kustomization.yaml': kustomization([`${rawURL}/evil/files/x.yaml`]) });

    // Builtin generators read files too, by URL as well: where kustomize loads them from is checked.
    const leak = `${rawURL}/evil/files/secret.yaml`;
    const generator = (file: string) =>
      `apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: stolen\nfiles:\n- leak=${file}\n`;
    app = await TestRepo.create(path.join(top, 'app'));
    await app.commit({
      'gen/kustomization.yaml': 'generators: [gen.yaml]\n',
      'gen/gen.yaml': generator(leak),
      'genlist/kustomization.yaml': 'generators: [list.yaml]\n',
      'genlist/list.yaml': `apiVersion: v1\nkind: List\nitems:\n${generator(leak)
        .split('\n')
        .map((l, i) => (i === 0 ? `- ${l}` : `  ${l}`))
        .join('\n')}\n`,
      // A folder of configs is built before its configs are read: a patch there rewrites them.
      'genfolder/kustomization.yaml': 'generators: [../gens]\n',
      'gens/gen.yaml': 'apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: stolen\nliterals: [a=b]\n',
      'gens/kustomization.yaml': `resources: [gen.yaml]\npatches:\n- patch: |-\n    - op: add\n      path: /files\n      value: [leak=${leak}]\n  target:\n    kind: ConfigMapGenerator\n`,
      'genremote/kustomization.yaml': `generators: ['${rawURL}/gen/x.yaml']\n`,
      'remote/kustomization.yaml': kustomization([url('base')]),
      'nested/kustomization.yaml': kustomization([url('nested')]),
      'nestedraw/kustomization.yaml': kustomization([url('nestedraw')]),
      'raw/kustomization.yaml': kustomization([`${rawURL}/ok/files/x.yaml`]),
      'file/kustomization.yaml': kustomization([`file://${path.join(served, 'org', 'base.git')}//app`]),
      'local/kustomization.yaml': kustomization(['cm.yaml']),
      'local/cm.yaml': cm('local'),
    });
    renderer = new SourceRenderer({
      cacheDir: path.join(top, 'cache'),
      toolsDir: toolsDir(),
      allowLocalRepositories: true,
    });
  });
  after(async () => {
    await git?.close();
    raw?.close();
    if (top) await rm(top, { recursive: true, force: true });
  });

  const input = (p: string, sourceRepos?: string[]): RenderInput => ({
    source: { repoURL: app.dir, path: p } as ApplicationSource,
    appName: 'app',
    ...(sourceRepos ? { sourceRepos } : {}),
  });
  const names = async (p: string, sourceRepos?: string[]) =>
    (await renderer.render(input(p, sourceRepos))).objects.map((o) => o.object.metadata.name);
  const refused = (reason: string, message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof SourceError, String(err));
    assert.equal(err.reason, reason, err.message);
    assert.match(err.message, message);
    return true;
  };

  test('a remote base the project allows is built; kustomize cloned it through the renderer', async () => {
    assert.deepEqual(await names('remote', [git.url('org/base.git')]), ['from-base']);
    assert.deepEqual(await names('remote', ['*']), ['from-base']);
  });

  test('a remote base the project does not allow is refused before kustomize runs', async () => {
    for (const sourceRepos of [undefined, [], [git.url('org/other.git')], ['*', `!${git.url('org/base.git')}`]]) {
      await assert.rejects(
        renderer.render(input('remote', sourceRepos)),
        refused(
          'InvalidSource',
          /^remote\/kustomization\.yaml: resources 'http:\/\/127\.0\.0\.1:\d+\/org\/base\.git\/\/app\?ref=main' is refused: the project's sourceRepos do not allow 'http:\/\/127\.0\.0\.1:\d+\/org\/base\.git'/,
        ),
      );
    }
  });

  test('a remote spec.source.kustomize.components entry: cloned only when the project allows its repository', async () => {
    const withComponent = (sourceRepos?: string[]): RenderInput => ({
      ...input('local', sourceRepos),
      source: { repoURL: app.dir, path: 'local', kustomize: { components: [url('comp')] } } as ApplicationSource,
    });
    const r = await renderer.render(withComponent([git.url('org/comp.git')]));
    assert.deepEqual(r.objects.map((o) => o.object.metadata.name).sort(), ['from-component', 'local']);
    // `kustomize edit add component` clones it to see that it is there, through the renderer's git.
    for (const sourceRepos of [undefined, [git.url('org/other.git')]]) {
      await assert.rejects(
        renderer.render(withComponent(sourceRepos)),
        refused(
          'ToolFailed',
          /^kustomize edit add component of 'local' failed: .*refused by the renderer: kustomize remote base 'http:\/\/127\.0\.0\.1:\d+\/org\/comp\.git' is refused: the project's sourceRepos do not allow/s,
        ),
      );
    }
  });

  test('a remote base named inside an allowed remote base is held to sourceRepos too', async () => {
    await assert.rejects(
      renderer.render(input('nested', [git.url('org/nested.git')])),
      refused(
        'ToolFailed',
        /remote base 'http:\/\/127\.0\.0\.1:\d+\/org\/nested\.git', app\/kustomization\.yaml: resources 'http:\/\/127\.0\.0\.1:\d+\/org\/evil\.git\/\/app\?ref=main' is refused: the project's sourceRepos do not allow/,
      ),
    );
    assert.deepEqual(await names('nested', [git.url('org/nested.git'), git.url('org/evil.git')]), ['from-evil']);
  });

  test('raw http(s) files: allowed by their repository, also inside remote bases', async () => {
    await assert.rejects(
      renderer.render(input('raw', [git.url('org/base.git')])),
      refused(
        'InvalidSource',
        /^raw\/kustomization\.yaml: resources 'http:\/\/127\.0\.0\.1:\d+\/ok\/files\/x\.yaml' is refused/,
      ),
    );
    assert.deepEqual(await names('raw', [`${rawURL}/ok/files`]), ['raw-x']);
    await assert.rejects(
      renderer.render(input('nestedraw', [git.url('org/nestedraw.git')])),
      refused(
        'ToolFailed',
        /remote base 'http:\/\/127\.0\.0\.1:\d+\/org\/nestedraw\.git', app\/kustomization\.yaml: resources 'http:\/\/127\.0\.0\.1:\d+\/evil\/files\/x\.yaml' is refused/,
      ),
    );
  });

  test("builtin generators' files are held to sourceRepos too, in a file, a List or a folder; fetched configs are refused", async () => {
    const allowed = [git.url('org/base.git')];
    for (const [p, message] of [
      [
        'gen',
        /^gen\/gen\.yaml: generators: files 'http:\/\/127\.0\.0\.1:\d+\/evil\/files\/secret\.yaml' is refused: the project's sourceRepos do not allow/,
      ],
      [
        'genlist',
        /^genlist\/list\.yaml: generators: files 'http:\/\/.*\/secret\.yaml' is refused: the project's sourceRepos do not allow/,
      ],
      [
        'genfolder',
        /^gens\/kustomization\.yaml: 'patches' is refused in a folder of generator, transformer or validator configs/,
      ],
    ] as const) {
      await assert.rejects(renderer.render(input(p, allowed)), refused('InvalidSource', message));
    }
    await assert.rejects(
      renderer.render(input('genremote', ['*'])),
      refused(
        'InvalidSource',
        /^genremote\/kustomization\.yaml: generators 'http:\/\/.*\/gen\/x\.yaml' is refused: configs fetched from the network cannot be checked/,
      ),
    );
  });

  test('file:// remote bases are refused whatever sourceRepos say', async () => {
    await assert.rejects(
      renderer.render(input('file', ['*'])),
      refused(
        'InvalidSource',
        /^file\/kustomization\.yaml: resources 'file:\/\/.*' is refused: 'file:\/\/.*' is not a network repository/,
      ),
    );
  });
});
