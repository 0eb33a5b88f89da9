// The identity rule by construction (ARCHITECTURE.md): nothing under src/sync/ or src/source/ can
// reach the controller's credential. They may use kube/types.ts and nothing else of kube/, and
// no HTTP or Kubernetes client library of their own. Also: one module sends requests to API
// servers (kube/transport.ts), and the controller's pure cores (the admission gate, the operation
// machine) load no client at all.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function tsFiles(dir: string): string[] {
  let out: string[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out = out.concat(tsFiles(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Every module specifier a file imports or re-exports, static or dynamic. */
function specifiers(text: string): string[] {
  const out: string[] = [];
  const patterns = [
    /\b(?:import|export)\s[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) out.push(m[1] as string);
  return out;
}

const ALLOWED_KUBE = new Set([join(root, 'src/kube/types.ts')]);
const FORBIDDEN_PACKAGES = [
  '@kubernetes/client-node',
  'undici',
  'node:http',
  'node:https',
  'node:http2',
  'node:tls',
  'http',
  'https',
  'tls',
];

function violations(folder: string): string[] {
  const found: string[] = [];
  for (const file of tsFiles(join(root, folder))) {
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      const where = relative(root, file);
      if (spec.startsWith('.')) {
        const target = resolve(dirname(file), spec);
        if (target.startsWith(join(root, 'src/kube') + '/') && !ALLOWED_KUBE.has(target))
          found.push(`${where} imports ${spec}`);
        if (target.startsWith(join(root, 'src/controller') + '/') || target.startsWith(join(root, 'src/cli') + '/'))
          found.push(`${where} imports ${spec}`);
      } else if (FORBIDDEN_PACKAGES.includes(spec)) {
        found.push(`${where} imports ${spec}`);
      }
    }
  }
  return found;
}

test('the import scanner sees static, type-only, re-export and dynamic imports', () => {
  const text = [
    "import { a } from '../kube/factory.ts';",
    "import type { B } from '../kube/credentials.ts';",
    "export { c } from '../kube/client.ts';",
    "const m = await import('../kube/transport.ts');",
    "import '../kube/index.ts';",
  ].join('\n');
  assert.deepEqual(specifiers(text).sort(), [
    '../kube/client.ts',
    '../kube/credentials.ts',
    '../kube/factory.ts',
    '../kube/index.ts',
    '../kube/transport.ts',
  ]);
});

test('src/sync imports nothing of kube/ but its types, and no HTTP client', () => {
  assert.ok(tsFiles(join(root, 'src/sync')).length > 5, 'src/sync has files to check');
  assert.deepEqual(violations('src/sync'), []);
});

// source/http.ts is the one HTTP client of source/: it fetches Helm indexes, charts and OCI layers
// for the renderer process, which holds no Kubernetes credential to send anywhere (issue 13).
const SOURCE_HTTP = 'src/source/http.ts imports undici';

test("src/argocd-cache imports nothing of kube/ but its types: the tree is listed with the identity's client it is handed", () => {
  assert.deepEqual(violations('src/argocd-cache'), []);
});

test("Argo CD's cache encoding, its options and a node's info are pure: no Redis client, no I/O", () => {
  for (const entry of ['src/argocd-cache/encode.ts', 'src/argocd-cache/options.ts', 'src/argocd-cache/info.ts']) {
    const { files, packages } = runtimeClosure(entry);
    assert.deepEqual(
      rel(files).filter((f) => !/^src\/(argocd-cache\/(encode|options|info|types)|api\/[a-z-]+)\.ts$/.test(f)),
      [],
      `${entry} reaches these`,
    );
    assert.deepEqual(
      [...packages].filter((p) => !['node:zlib', 'zod', 'yaml'].includes(p)),
      [],
      `${entry} loads these packages`,
    );
  }
});

test('src/source imports nothing of kube/ but its types, and no HTTP client but http.ts (chart repositories)', () => {
  assert.deepEqual(
    violations('src/source').filter((v) => v !== SOURCE_HTTP),
    [],
  );
});

test('kube/types.ts itself reaches no credential', () => {
  const specs = specifiers(readFileSync(join(root, 'src/kube/types.ts'), 'utf8'));
  assert.deepEqual(
    specs.filter((s) => s.startsWith('./') || FORBIDDEN_PACKAGES.includes(s)),
    [],
  );
});

test('within kube/, only the factory, the control-cluster client (and the transport they build, and the index) touch credentials', () => {
  const users: string[] = [];
  for (const file of tsFiles(join(root, 'src'))) {
    if (!file.startsWith(join(root, 'src/kube') + '/')) continue;
    if (specifiers(readFileSync(file, 'utf8')).some((s) => s === './credentials.ts')) users.push(relative(root, file));
  }
  assert.deepEqual(users.sort(), [
    'src/kube/control.ts',
    'src/kube/factory.ts',
    'src/kube/index.ts',
    'src/kube/transport.ts',
  ]);
});

test('one way to an API server: only kube/transport.ts sends HTTP requests to one', () => {
  // The renderer's client (renderer/) talks to the renderer, not to an API server; the local
  // control plane (controlplane/) and the health endpoint serve, they do not call.
  const senders: string[] = [];
  for (const file of tsFiles(join(root, 'src'))) {
    const where = relative(root, file);
    if (/^src\/(renderer|controlplane|observability)\//.test(where) || where === 'src/source/http.ts') continue;
    const specs = specifiers(readFileSync(file, 'utf8'));
    if (specs.some((s) => ['undici', 'node:http', 'node:https', 'http', 'https'].includes(s))) senders.push(where);
  }
  assert.deepEqual(senders, ['src/kube/transport.ts']);
});

// The credential rule (ARCHITECTURE.md): tenant content is rendered in the renderer process only.
// Followed through every import a module makes at run time (type-only imports are erased), the
// renderer reaches no credential and no Kubernetes client, and the controller's processes reach no
// code that reads a checkout or runs a tool: they only send the renderer requests.

/** The value imports of a file: `import type` and `export type` lines are erased at run time. */
function valueSpecifiers(text: string): string[] {
  const withoutTypeImports = text.replace(/^\s*(?:import|export)\s+type\s[^;]*;/gms, '');
  return specifiers(withoutTypeImports);
}

/** Every file of ours, and every package, that `entry` loads when it runs. */
function runtimeClosure(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const todo = [join(root, entry)];
  while (todo.length > 0) {
    const file = todo.pop() as string;
    if (files.has(file)) continue;
    files.add(file);
    for (const spec of valueSpecifiers(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) todo.push(resolve(dirname(file), spec));
      else packages.add(spec);
    }
  }
  return { files, packages };
}

const rel = (files: Set<string>): string[] => [...files].map((f) => relative(root, f)).sort();

test('the renderer process loads nothing that holds or makes a Kubernetes credential', () => {
  for (const entry of ['src/cli/renderer.ts', 'src/renderer/worker.ts']) {
    const { files, packages } = runtimeClosure(entry);
    assert.ok(files.size > 5, `${entry} has imports to follow`);
    const reached = rel(files).filter((f) => /^src\/(kube\/(?!types\.ts)|controller\/|controlplane\/)/.test(f));
    assert.deepEqual(reached, [], `${entry} reaches these`);
    // The server side may fetch charts (source/http.ts, undici); the worker threads fetch nothing.
    const network = entry === 'src/renderer/worker.ts' ? ['undici'] : [];
    assert.deepEqual(
      [...packages].filter((p) => p === '@kubernetes/client-node' || network.includes(p) || p.startsWith('node:https')),
      [],
      `${entry} loads these packages`,
    );
  }
});

test("the controller's processes load no code that reads a checkout or runs a tool", () => {
  for (const entry of [
    'src/cli/run.ts',
    'src/cli/diff.ts',
    'src/controller/controller.ts',
    'src/controller/local.ts',
  ]) {
    // errors.ts: the error of a failed render; parse.ts, its document limits (expand.ts) and its
    // reading of quoted scalars as go-yaml reads them (quoted.ts): YAML parsing of files an admin
    // hands the CLI.
    const allowed = new Set([
      'src/source/errors.ts',
      'src/source/parse.ts',
      'src/source/expand.ts',
      'src/source/quoted.ts',
    ]);
    const reached = rel(runtimeClosure(entry).files).filter((f) => f.startsWith('src/source/') && !allowed.has(f));
    assert.deepEqual(reached, [], `${entry} reaches these`);
  }
});

test('the admission gate and the operation machine are pure: at run time they load no client, credential or I/O', () => {
  const pure =
    /^src\/(api|impersonation|project)\/|^src\/repository\/url\.ts$|^src\/controller\/(admission|operation-machine|operation-policy|refused-fields|self-heal|status)\.ts$/;
  for (const entry of ['src/controller/admission.ts', 'src/controller/operation-machine.ts']) {
    const { files, packages } = runtimeClosure(entry);
    assert.deepEqual(
      rel(files).filter((f) => !pure.test(f)),
      [],
      `${entry} reaches these`,
    );
    assert.deepEqual(
      [...packages].filter((p) => !['zod', 'yaml', 'node:util'].includes(p)),
      [],
      `${entry} loads these packages`,
    );
  }
});
