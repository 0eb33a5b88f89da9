// Messages of failed renders name paths as the tenant knows them (relative to the repository root)
// and never the renderer's cache, its work folders, trees/<pid>-<random> names or its process id:
// helm and kustomize print absolute paths when they fail, and their stderr is scrubbed before it
// becomes a message.
import assert from 'node:assert/strict';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError, SourceRenderer } from '../../src/source/index.ts';
import { scrubber } from '../../src/source/scrub.ts';
import { TestRepo } from '../support/git.ts';
import { toolsDir } from './tools.ts';

describe('messages of failed renders', () => {
  let repo: TestRepo;
  let cacheDir: string;
  let renderer: SourceRenderer;

  before(async () => {
    cacheDir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'impersync-scrub-')));
    repo = await TestRepo.create();
    await repo.commit({
      'apps/chart/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
      'apps/chart/bad-values.yaml': 'a: [\n',
      'apps/chart/templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n',
      'apps/k/kustomization.yaml': 'resources: [missing.yaml]\n',
      'apps/kbad/kustomization.yaml': 'resources: [cm.yaml]\n',
      'apps/kbad/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: [\n',
    });
    renderer = new SourceRenderer({ cacheDir, toolsDir: toolsDir(), allowLocalRepositories: true });
  });
  after(async () => {
    await repo?.remove();
    if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  });

  async function failure(source: Record<string, unknown>): Promise<string> {
    const err = await renderer
      .render({ source: { repoURL: repo.dir, ...source } as ApplicationSource, appName: 'app' })
      .then(
        () => assert.fail('the render should fail'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof SourceError, String(err));
    assert.ok(!err.message.includes(cacheDir), `names the cache: ${err.message}`);
    assert.doesNotMatch(err.message, /trees\/\d+-[0-9a-f]+|render-[0-9a-f]{12}/, err.message);
    assert.ok(!err.message.includes(`${process.pid}-`), `names the process id: ${err.message}`);
    return err.message;
  }

  test("helm's message about a value file of the repository names it from the repository root", async () => {
    const m = await failure({ path: 'apps/chart', helm: { valueFiles: ['bad-values.yaml'] } });
    assert.match(m, /^helm template of 'apps\/chart' failed: .*apps\/chart\/bad-values\.yaml/s);
  });

  test("helm's message about inline values names spec.source.helm.values", async () => {
    const m = await failure({ path: 'apps/chart', helm: { values: 'a: [\n' } });
    assert.match(m, /spec\.source\.helm\.values/);
  });

  test("kustomize's messages name files from the repository root, also through the private copy the overrides edit", async () => {
    const plain = await failure({ path: 'apps/k' });
    assert.match(plain, /^kustomize build of 'apps\/k' failed: .*apps\/k\/missing\.yaml/s);
    const edited = await failure({ path: 'apps/k', kustomize: { namePrefix: 'p-' } });
    assert.match(edited, /^kustomize build of 'apps\/k' failed: .*apps\/k\/missing\.yaml/s);
    // The copy's folder is named as the repository root, never by where the renderer made it.
    assert.doesNotMatch(edited, /tree|trees|\/tmp\//, edited);
    const bad = await failure({ path: 'apps/kbad', kustomize: { namePrefix: 'p-' } });
    assert.match(bad, /^kustomize build of 'apps\/kbad' failed: /);
  });

  test('a password in a URL anywhere in a message is hidden; renames apply longest first', () => {
    const scrub = scrubber([
      { from: '/c/trees/1-0123abcd/repo', to: '' },
      { from: '/c', to: '<cache>' },
    ]);
    assert.equal(
      scrub("fatal: unable to access 'https://bot:t0k@n@host/x/': /c/trees/1-0123abcd/repo/a.yaml /c/repos/k.git"),
      "fatal: unable to access 'https://bot:***@host/x/': a.yaml <cache>/repos/k.git",
    );
  });
});
