// The .jsonnet files of a Directory source, evaluated with the real impersync-jsonnet (tools/jsonnet,
// go-jsonnet at Argo CD v3.6.1's version) as Argo CD's repo-server evaluates them: ext vars and
// top-level arguments (strings and code, build variables substituted), libs from the repository
// root, recurse/include/exclude, array and object results, Argo CD's error messages, and the
// importer that refuses anything outside the repository (an absolute path, `..`, a symlink).
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceRenderer, type RenderInput, type RenderResult } from '../../src/source/index.ts';
import { JsonnetEvaluator } from '../../src/source/jsonnet.ts';
import { DEFAULT_LIMITS, toolLimits } from '../../src/source/render.ts';
import { DEFAULT_DOCUMENT_LIMITS } from '../../src/source/expand.ts';
import { TestRepo } from '../support/git.ts';
import { failsWith } from '../support/source-error.ts';
import { toolsDir } from './tools.ts';

const cm = (name: string, data = '{}') =>
  `{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ${name} }, data: ${data} }`;

const FILES: Record<string, string> = {
  // ext vars and TLAs, strings and code, and an import found beside the file and in a lib.
  'vars/main.jsonnet': `local lib = import 'helpers.libsonnet';
local local_ = import 'local.libsonnet';
function(tlaStr, tlaCode) ${cm("'vars-' + tlaStr", `{ ext: std.extVar('extStr'), code: std.toString(std.extVar('extCode')), tla: std.toString(tlaCode), lib: lib.greeting, here: local_.v }`)}
`,
  'vars/local.libsonnet': "{ v: 'beside' }",
  'vendor/helpers.libsonnet': "{ greeting: 'from-vendor' }",
  'other-vendor/helpers.libsonnet': "{ greeting: 'from-other-vendor' }",
  // An import in ext var code is searched in the libs (and the app folder last), never beside a file.
  'extimport/main.jsonnet': cm("'e'", "{ ext: std.extVar('e'), file: (import 'shadow.libsonnet').v }"),
  'extimport/shadow.libsonnet': "{ v: 'app folder' }",
  'vendor/shadow.libsonnet': "{ v: 'vendor' }",
  // Arrays (null elements skipped), objects, a List expanded.
  'shapes/a-array.jsonnet': `[${cm("'one'")}, null, ${cm("'two'")}]`,
  'shapes/b-object.jsonnet': cm("'three'"),
  'shapes/c-list.jsonnet': `{ apiVersion: 'v1', kind: 'List', items: [${cm("'four'")}] }`,
  'shapes/d.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: five\n',
  'shapes/nested/e.jsonnet': cm("'six'"),
  'shapes/nested/f.libsonnet': cm("'not-a-manifest-file'"),
  'shapes/skipped.jsonnet': `// +argocd:skip-file-rendering\n${cm("'skipped'")}`,
  // Build variables in ext vars, substituted again for each file (Argo CD substitutes in place).
  'env/1.jsonnet': cm("'first'", "{ v: std.extVar('v') }"),
  'env/2.jsonnet': cm("'second'", "{ v: std.extVar('v') }"),
  'errors/runtime/main.jsonnet': "local x = 1;\nerror 'boom ' + x\n",
  'errors/nokind/main.jsonnet': '{ a: 1 }',
  'errors/nokind-array/main.jsonnet': `[${cm("'ok'")}, { a: 1 }]`,
  'errors/string/main.jsonnet': "'just a string'",
  'errors/missing-import/main.jsonnet': "import 'nowhere.libsonnet'",
  // Attacks: an absolute path, a traversal out of the checkout, an import through a symlink.
  'attack/abs/main.jsonnet':
    "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { p: importstr '/etc/passwd' } }",
  'attack/dotdot/main.jsonnet':
    "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { p: importstr '../../../../../../../../../../etc/hostname' } }",
  'attack/bin/main.jsonnet':
    "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { p: std.length(importbin '/dev/zero') } }",
};

function app(source: Record<string, unknown>, name = 'guestbook'): RenderInput {
  return { source: source as ApplicationSource, appName: name, destinationNamespace: 'team-a' };
}
const names = (r: RenderResult): string[] => r.objects.map((o) => o.object.metadata.name);
const data = (r: RenderResult, i = 0) => (r.objects[i]?.object as unknown as { data: Record<string, unknown> }).data;

describe('Directory sources with jsonnet', () => {
  let repo: TestRepo;
  let url: string;
  let cacheDir: string;
  let renderer: SourceRenderer;

  before(async () => {
    repo = await TestRepo.create();
    await repo.commit(FILES, 'fixtures');
    url = repo.fileURL;
    cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-jsonnet-'));
    renderer = new SourceRenderer({ allowLocalRepositories: true, cacheDir, toolsDir: toolsDir() });
  });
  after(async () => {
    await repo?.remove();
    if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  });

  test('extVars and tlas, as strings and as code, with build variables; libs from the repository root', async () => {
    const r = await renderer.render(
      app({
        repoURL: url,
        path: 'vars',
        directory: {
          jsonnet: {
            extVars: [
              { name: 'extStr', value: '$ARGOCD_APP_NAME-in-$ARGOCD_APP_NAMESPACE' },
              { name: 'extCode', value: '{ n: 1 + 2 }', code: true },
            ],
            tlas: [
              { name: 'tlaStr', value: '${ARGOCD_APP_NAME}' },
              { name: 'tlaCode', value: '[1, "$ARGOCD_APP_NAME"]', code: true },
            ],
            // The last lib is searched first (go-jsonnet's order); a leading / is the root too.
            libs: ['other-vendor', '/vendor'],
          },
        },
      }),
    );
    assert.equal(r.sourceType, 'Directory');
    assert.deepEqual(names(r), ['vars-guestbook']);
    assert.deepEqual(data(r), {
      ext: 'guestbook-in-team-a',
      code: '{"n": 3}',
      tla: '[1, "guestbook"]',
      lib: 'from-vendor',
      here: 'beside',
    });
    assert.deepEqual(r.objects[0]?.location, { file: 'vars/main.jsonnet', document: 1 });
    // Without libs the import is not found: the lib really is what supplied it.
    await assert.rejects(
      renderer.render(
        app({
          repoURL: url,
          path: 'vars',
          directory: {
            jsonnet: {
              extVars: [
                { name: 'extStr', value: 'x' },
                { name: 'extCode', value: '1', code: true },
              ],
              tlas: [
                { name: 'tlaStr', value: 'x' },
                { name: 'tlaCode', value: '1', code: true },
              ],
            },
          },
        }),
      ),
      failsWith(
        'InvalidManifest',
        /^Failed to evaluate jsonnet "main\.jsonnet": RUNTIME ERROR: couldn't open import "helpers\.libsonnet": no match locally or in the Jsonnet library paths\n\tvars\/main\.jsonnet:1:13-39\t/,
      ),
    );
  });

  test("an import in ext var code is found in the libs before the app folder; a file's import beside it first", async () => {
    const r = await renderer.render(
      app({
        repoURL: url,
        path: 'extimport',
        directory: {
          jsonnet: { extVars: [{ name: 'e', value: "(import 'shadow.libsonnet').v", code: true }], libs: ['vendor'] },
        },
      }),
    );
    assert.deepEqual(data(r), { ext: 'vendor', file: 'app folder' });
  });

  test('arrays (nulls skipped), objects and Lists; only top-level files without recurse; include and exclude', async () => {
    const top = await renderer.render(app({ repoURL: url, path: 'shapes' }));
    assert.deepEqual(names(top), ['one', 'two', 'three', 'four', 'five']);
    assert.deepEqual(
      top.objects.map((o) => o.location),
      [
        { file: 'shapes/a-array.jsonnet', document: 1 },
        { file: 'shapes/a-array.jsonnet', document: 3 },
        { file: 'shapes/b-object.jsonnet', document: 1 },
        { file: 'shapes/c-list.jsonnet', document: 1 },
        { file: 'shapes/d.yaml', document: 1 },
      ],
    );
    const all = await renderer.render(app({ repoURL: url, path: 'shapes', directory: { recurse: true } }));
    assert.deepEqual(names(all), ['one', 'two', 'three', 'four', 'five', 'six']);
    const inc = await renderer.render(
      app({ repoURL: url, path: 'shapes', directory: { recurse: true, include: '*.jsonnet', exclude: 'a-*' } }),
    );
    // Argo CD's globs: `*` crosses folders.
    assert.deepEqual(names(inc), ['three', 'four', 'six']);
  });

  test('build variables are substituted again for each file, as Argo CD substitutes them in place', async () => {
    const r = await renderer.render(
      app({
        repoURL: url,
        path: 'env',
        directory: { jsonnet: { extVars: [{ name: 'v', value: 'a$$ARGOCD_APP_NAME' }] } },
      }),
    );
    assert.deepEqual(
      r.objects.map((o) => [o.object.metadata.name, (o.object as unknown as { data: { v: string } }).data.v]),
      [
        ['first', 'a$ARGOCD_APP_NAME'],
        ['second', 'aguestbook'],
      ],
    );
  });

  test("errors are Argo CD's, with paths relative to the repository", async () => {
    const render = (p: string, directory?: Record<string, unknown>) =>
      renderer.render(app({ repoURL: url, path: p, ...(directory ? { directory } : {}) }));
    await assert.rejects(
      render('errors/runtime'),
      failsWith(
        'InvalidManifest',
        'Failed to evaluate jsonnet "main.jsonnet": RUNTIME ERROR: boom 1\n\terrors/runtime/main.jsonnet:2:1-18\t$\n\tDuring evaluation\t\n',
      ),
    );
    await assert.rejects(
      render('errors/nokind'),
      failsWith(
        'InvalidManifest',
        'Failed to unmarshal generated json "main.jsonnet": Object \'Kind\' is missing in \'{\n   "a": 1\n}\'',
      ),
    );
    await assert.rejects(
      render('errors/nokind-array'),
      failsWith(
        'InvalidManifest',
        'Failed to unmarshal generated json "main.jsonnet": json: cannot unmarshal array into Go value of type map[string]interface {}',
      ),
    );
    await assert.rejects(
      render('errors/string'),
      failsWith(
        'InvalidManifest',
        'Failed to unmarshal generated json "main.jsonnet": json: cannot unmarshal string into Go value of type map[string]interface {}',
      ),
    );
    await assert.rejects(
      render('errors/missing-import'),
      failsWith(
        'InvalidManifest',
        /^Failed to evaluate jsonnet "main\.jsonnet": RUNTIME ERROR: couldn't open import "nowhere\.libsonnet": no match locally or in the Jsonnet library paths\n/,
      ),
    );
    await assert.rejects(
      render('vars', { jsonnet: { libs: ['../outside'] } }),
      failsWith('InvalidSource', "file '../outside' resolved to outside repository root"),
    );
    await assert.rejects(
      render('vars', { jsonnet: { libs: ['vendor'], other: 'x' } }),
      failsWith('InvalidSource', 'spec.source.directory.jsonnet.other is not supported by impersync'),
    );
  });

  test('no import resolves outside the repository: an absolute path, `..`, a device', async () => {
    for (const [dir, imported] of [
      ['abs', '/etc/passwd'],
      ['dotdot', '../../../../../../../../../../etc/hostname'],
      ['bin', '/dev/zero'],
    ] as const) {
      await assert.rejects(
        renderer.render(app({ repoURL: url, path: `attack/${dir}` })),
        failsWith(
          'InvalidManifest',
          new RegExp(
            `^Failed to evaluate jsonnet "main\\.jsonnet": RUNTIME ERROR: jsonnet import ${JSON.stringify(imported).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} resolves outside repository root\n\tattack/${dir}/main\\.jsonnet:`,
          ),
        ),
      );
    }
  });
});

describe('impersync-jsonnet importer', () => {
  let top: string;
  let root: string;

  before(async () => {
    top = await realpath(await mkdtemp(path.join(os.tmpdir(), 'impersync-jsonnet-import-')));
    root = path.join(top, 'repo');
    await mkdir(path.join(root, 'app'), { recursive: true });
    await mkdir(path.join(top, 'other-tenant'), { recursive: true });
    await writeFile(path.join(top, 'other-tenant', 'secret'), 'other tenant secret');
    await writeFile(path.join(root, 'inside.txt'), 'inside');
    // Links a checkout could hold only if the checkout's own check let them through.
    await symlink(path.join(top, 'other-tenant', 'secret'), path.join(root, 'app', 'to-secret.txt'));
    await symlink('../inside.txt', path.join(root, 'app', 'to-inside.txt'));
    await symlink(path.join(top, 'other-tenant'), path.join(root, 'app', 'dir-link'));
    const read = (what: string) =>
      `{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { v: importstr '${what}' } }`;
    await writeFile(path.join(root, 'app', 'link.jsonnet'), read('to-secret.txt'));
    await writeFile(path.join(root, 'app', 'dir-link.jsonnet'), read('dir-link/secret'));
    await writeFile(path.join(root, 'app', 'traversal.jsonnet'), read('../../other-tenant/secret'));
    await writeFile(path.join(root, 'app', 'inside.jsonnet'), read('to-inside.txt'));
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const evaluate = (
    file: string,
    limits: { memoryBytes?: number; timeoutMs?: number; maxOutputBytes?: number; maxDocumentBytes?: number } = {},
  ) =>
    evaluator({
      limits: toolLimits({ ...DEFAULT_LIMITS, toolMemoryBytes: limits.memoryBytes ?? DEFAULT_LIMITS.toolMemoryBytes }),
      timeoutMs: limits.timeoutMs ?? 60_000,
      maxOutputBytes: limits.maxOutputBytes ?? DEFAULT_LIMITS.maxToolOutputBytes,
      documents: { ...DEFAULT_DOCUMENT_LIMITS, maxDocumentBytes: limits.maxDocumentBytes ?? 16 * 1024 * 1024 },
    }).evaluate(path.join(root, 'app', file), `app/${file}`);

  /** One evaluator for several files of a directory, as a render makes it. */
  const evaluator = (opts: Partial<ConstructorParameters<typeof JsonnetEvaluator>[0]>) =>
    new JsonnetEvaluator({
      binary: path.join(toolsDir(), 'impersync-jsonnet'),
      repoRoot: root,
      appDir: path.join(root, 'app'),
      jsonnet: undefined,
      buildEnv: {},
      renames: [{ from: root, to: '' }],
      limits: toolLimits(DEFAULT_LIMITS),
      timeoutMs: 60_000,
      maxOutputBytes: DEFAULT_LIMITS.maxToolOutputBytes,
      maxTotalOutputBytes: DEFAULT_LIMITS.maxRenderedBytes,
      documents: DEFAULT_DOCUMENT_LIMITS,
      env: process.env,
      ...opts,
    });

  test("a directory's evaluations together are held to the limit of a render's objects", async () => {
    await writeFile(
      path.join(root, 'app', 'kb.jsonnet'),
      "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kb' }, data: { v: std.join('', std.makeArray(1000, function(i) 'x')) } }",
    );
    const e = evaluator({ maxTotalOutputBytes: 3072 });
    const file = path.join(root, 'app', 'kb.jsonnet');
    await e.evaluate(file, 'app/kb.jsonnet');
    await e.evaluate(file, 'app/kb.jsonnet');
    await assert.rejects(
      e.evaluate(file, 'app/kb.jsonnet'),
      failsWith(
        'TooLarge',
        "the jsonnet evaluations of 'app' print more than 3 KiB together (at 'app/kb.jsonnet'), the limit of a render's objects",
      ),
    );
  });

  test('ext vars whose build variables refer to themselves, substituted again for each file, are held to the output limit', async () => {
    await writeFile(
      path.join(root, 'app', 'ext.jsonnet'),
      "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ext' }, data: { v: std.extVar('v') } }",
    );
    const e = evaluator({
      jsonnet: { extVars: [{ name: 'v', value: '$ARGOCD_APP_NAME' }] },
      buildEnv: { ARGOCD_APP_NAME: '-$ARGOCD_APP_NAME-$ARGOCD_APP_NAME-' },
      maxOutputBytes: 4096,
    });
    const file = path.join(root, 'app', 'ext.jsonnet');
    let evaluated = 0;
    await assert.rejects(
      (async () => {
        for (; evaluated < 20; evaluated++) await e.evaluate(file, 'app/ext.jsonnet');
      })(),
      failsWith(
        'TooLarge',
        /^spec\.source\.directory\.jsonnet: the ext vars and top-level arguments reach .* at 'app\/ext\.jsonnet' \(build variables are substituted in them again for each \.jsonnet file, as Argo CD does\), over the 4 KiB limit$/,
      ),
    );
    // The value doubles with each file: 35 bytes, 71, 143, ... past 4 KiB at the seventh.
    assert.ok(evaluated >= 5 && evaluated <= 8, `refused after ${evaluated} files`);
  });

  test('each evaluation is held to the tool limits: memory, time, output, and each object to the document limits', async () => {
    const many = (n: number) =>
      `std.makeArray(${n}, function(i) { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-' + i } })`;
    await writeFile(
      path.join(root, 'app', 'memory.jsonnet'),
      `[std.join('', std.makeArray(1e8, function(i) 'xxxxxxxx'))]`,
    );
    await writeFile(
      path.join(root, 'app', 'slow.jsonnet'),
      'local r = std.range(0, 3000); std.foldl(function(a, b) a + std.foldl(function(x, y) x + y, r, 0), r, 0)',
    );
    await writeFile(
      path.join(root, 'app', 'deep.jsonnet'),
      'local loop(n) = if n == 0 then 0 else loop(n - 1) tailstrict; loop(1e10)',
    );
    await writeFile(path.join(root, 'app', 'many.jsonnet'), many(2000));
    await writeFile(
      path.join(root, 'app', 'big.jsonnet'),
      "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big' }, data: { v: std.join('', std.makeArray(5000, function(i) 'x')) } }",
    );
    await assert.rejects(
      evaluate('memory.jsonnet', { memoryBytes: 512 * 1024 * 1024 }),
      failsWith(
        'TooLarge',
        "jsonnet evaluation of 'app/memory.jsonnet' exceeded the renderer's memory limit of 512 MiB",
      ),
    );
    await assert.rejects(
      evaluate('slow.jsonnet', { timeoutMs: 1000 }),
      failsWith('Timeout', "jsonnet evaluation of 'app/slow.jsonnet' timed out after 1s"),
    );
    await assert.rejects(
      evaluate('many.jsonnet', { maxOutputBytes: 10_000 }),
      failsWith('TooLarge', /^jsonnet evaluation of 'app\/many\.jsonnet' produced more than 9\.8 KiB of output/),
    );
    assert.equal((await evaluate('many.jsonnet')).length, 2000);
    // Go's own stack limit: the runtime's words, not its goroutine dump.
    await assert.rejects(
      evaluate('deep.jsonnet'),
      failsWith(
        'ToolFailed',
        "jsonnet evaluation of 'app/deep.jsonnet' failed: runtime: goroutine stack exceeds 268435456-byte limit\nfatal error: stack overflow",
      ),
    );
    await assert.rejects(
      evaluate('big.jsonnet', { maxDocumentBytes: 4096 }),
      failsWith('TooLarge', /^app\/big\.jsonnet: document 1 is larger than 4 KiB/),
    );
  });

  test('a symlink inside the repository that leads outside it is refused; one that stays inside is read', async () => {
    for (const [file, imported] of [
      ['link.jsonnet', 'to-secret.txt'],
      ['dir-link.jsonnet', 'dir-link/secret'],
      ['traversal.jsonnet', '../../other-tenant/secret'],
    ] as const)
      await assert.rejects(
        evaluate(file),
        failsWith(
          'InvalidManifest',
          new RegExp(
            `^Failed to evaluate jsonnet "${file.replace('.', '\\.')}": RUNTIME ERROR: jsonnet import "${imported.replace(/\./g, '\\.')}" resolves outside repository root\n\tapp/${file.replace('.', '\\.')}:1:`,
          ),
        ),
      );
    const inside = await evaluate('inside.jsonnet');
    assert.deepEqual((inside[0]?.object as unknown as { data: unknown }).data, { v: 'inside' });
  });
});
