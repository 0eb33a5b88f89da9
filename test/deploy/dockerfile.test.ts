// The image, checked without a Docker engine: the Dockerfile's essentials are read from the file,
// and the entrypoint command is run from a fresh build, outside a container.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, rm, mkdir, access } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { HEALTH_SCRIPTS_DIR_ENV, IMAGE_HEALTH_SCRIPTS_DIR } from '../../src/sync/index.ts';
import { matchesDockerignore, parseDockerfile } from './dockerfile.ts';

const root = new URL('../../', import.meta.url).pathname;
const dockerfile = parseDockerfile(await readFile(join(root, 'Dockerfile'), 'utf8'));
const ignore = await readFile(join(root, '.dockerignore'), 'utf8');
const runtime = dockerfile.stages.at(-1);

test('stages: helm and kustomize from Go, a Node 24 build, a slim Node 24 runtime', () => {
  assert.deepEqual(
    dockerfile.stages.map((s) => s.name),
    ['tools', 'health', 'build', 'deps', 'runtime'],
  );
  assert.match(dockerfile.stages[0]?.from ?? '', /^golang:1\.2[6-9]-/);
  assert.match(dockerfile.stages[2]?.from ?? '', /^node:24-/);
  assert.match(runtime?.from ?? '', /^node:24-[a-z]+-slim$/);
  const build = dockerfile.stages[2]?.instructions.map((i) => i.args).join('\n') ?? '';
  assert.match(build, /npm ci/);
  assert.match(build, /npm run build/);
});

test('helm and kustomize are pinned to the versions scripts/tool-binaries builds', async () => {
  const script = await readFile(join(root, 'scripts/tool-binaries'), 'utf8');
  for (const name of ['HELM_VERSION', 'KUSTOMIZE_VERSION']) {
    const pinned = new RegExp(`${name}="\\$\\{IMPERSYNC_${name}:-(v[0-9.]+)\\}"`).exec(script)?.[1];
    assert.ok(pinned, `scripts/tool-binaries pins ${name}`);
    assert.equal(dockerfile.args.get(name), pinned, `Dockerfile ARG ${name}`);
  }
  const tools = dockerfile.stages[0]?.instructions.map((i) => i.args).join('\n') ?? '';
  const major = dockerfile.args.get('HELM_VERSION')?.split('.')[0] ?? '';
  assert.ok(tools.includes(`helm.sh/helm/${major}/cmd/helm@\${HELM_VERSION}`), `builds helm.sh/helm/${major}`);
  assert.match(tools, /sigs\.k8s\.io\/kustomize\/kustomize\/v5@\$\{KUSTOMIZE_VERSION\}/);
  // impersync-jsonnet from tools/jsonnet, its go.sum checked, beside helm and kustomize in the image.
  assert.match(
    tools,
    /cd \/src\/tools\/jsonnet[^\n]*\n?[^\n]*GOFLAGS=-mod=readonly go build [^\n]*-o \/out\/impersync-jsonnet \./,
  );
  const copies = runtime?.instructions.filter((i) => i.kind === 'COPY').map((i) => i.args) ?? [];
  assert.ok(
    copies.includes('--from=tools /out/helm /out/kustomize /out/impersync-jsonnet /usr/local/bin/'),
    copies.join('\n'),
  );
});

test("Argo CD's bundled health checks: fetched by scripts/health-scripts at build time, installed where the controller looks", () => {
  const health = dockerfile.stages.find((s) => s.name === 'health');
  const run =
    health?.instructions
      .filter((i) => i.kind === 'RUN')
      .map((i) => i.args)
      .join('\n') ?? '';
  assert.match(run, /install [^\n]*\bunzip\b/, 'the stage has unzip');
  assert.match(run, /bash \/src\/scripts\/health-scripts/);
  const copies = runtime?.instructions.filter((i) => i.kind === 'COPY').map((i) => i.args) ?? [];
  assert.ok(copies.includes(`--from=health /out/health-scripts ${IMAGE_HEALTH_SCRIPTS_DIR}`), copies.join('\n'));
  const env =
    runtime?.instructions
      .filter((i) => i.kind === 'ENV')
      .map((i) => i.args)
      .join(' ') ?? '';
  assert.ok(env.includes(`${HEALTH_SCRIPTS_DIR_ENV}=${IMAGE_HEALTH_SCRIPTS_DIR}`), env);
});

test('runtime: non-root uid 65532, git and tini inside, writable paths only on volumes', () => {
  const get = (kind: string) => runtime?.instructions.filter((i) => i.kind === kind).map((i) => i.args) ?? [];
  assert.deepEqual(get('USER'), ['65532:65532']);
  const run = get('RUN').join('\n');
  for (const pkg of ['git', 'tini', 'ca-certificates', 'util-linux'])
    assert.match(run, new RegExp(`install [^\\n]*\\b${pkg}\\b`), `apt installs ${pkg}`);
  const copies = get('COPY').join('\n');
  assert.match(copies, /--from=tools \/out\/helm \/out\/kustomize \/out\/impersync-jsonnet \/usr\/local\/bin\//);
  // package.json beside dist/: its "type": "module" makes Node load dist/*.js as ES modules.
  assert.match(copies, /^package\.json \.\/$/m);
  assert.match(copies, /--from=build \/src\/dist \.\/dist/);
  assert.match(copies, /--from=deps \/src\/node_modules \.\/node_modules/);
  const env = get('ENV').join(' ');
  for (const kv of [
    'HOME=/home/impersync',
    'IMPERSYNC_CACHE_DIR=/var/cache/impersync',
    'XDG_CACHE_HOME=/var/cache/impersync',
    'IMPERSYNC_TOOLS_DIR=/usr/local/bin',
    'TMPDIR=/tmp',
  ]) {
    assert.ok(env.includes(kv), `ENV ${kv}`);
  }
  // helm keeps its state under the cache volume, not under the read-only root.
  assert.match(env, /HELM_CACHE_HOME=\/var\/cache\/impersync\//);
});

test('entrypoint: tini as PID 1 runs `node dist/cli/main.js`, and the default command is `run`', () => {
  const last = (kind: string) => runtime?.instructions.filter((i) => i.kind === kind).at(-1)?.args ?? '';
  assert.deepEqual(JSON.parse(last('ENTRYPOINT')), ['/usr/bin/tini', '--', 'node', '/app/dist/cli/main.js']);
  assert.deepEqual(JSON.parse(last('CMD')), ['run']);
});

test('.dockerignore lets in what COPY needs and keeps the rest out', async () => {
  const sources = dockerfile.stages
    .flatMap((s) => s.instructions)
    .filter((i) => i.kind === 'COPY' && !i.args.startsWith('--from'))
    .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
  assert.ok(sources.length >= 5);
  for (const src of sources) {
    await access(join(root, src));
    assert.equal(matchesDockerignore(ignore, src), false, `${src} reaches the build context`);
  }
  for (const kept of [
    'node_modules/yaml/package.json',
    'dist/cli/main.js',
    '.git/HEAD',
    'test/e2e/leader.test.ts',
    'src/.env',
    'deploy/helm/impersync/Chart.yaml',
  ]) {
    assert.equal(matchesDockerignore(ignore, kept), true, `${kept} stays out of the build context`);
  }
  assert.equal(matchesDockerignore(ignore, 'src/cli/main.ts'), false);
});

test('the runtime needs only production dependencies (the image installs npm ci --omit=dev)', async () => {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  const files = (await readdir(join(root, 'src'), { recursive: true })).filter((f) => f.endsWith('.ts'));
  const used = new Map<string, string>();
  for (const f of files) {
    const text = await readFile(join(root, 'src', f), 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*)'([^'.$][^']*)'/g)) {
      const spec = m[1] as string;
      if (spec.startsWith('node:')) continue;
      const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string);
      used.set(name, `src/${f}`);
    }
  }
  assert.ok(used.size >= 3, [...used.keys()].join(' '));
  for (const [name, where] of used)
    assert.ok(name in pkg.dependencies, `${where} imports ${name}, which is not a production dependency`);
});

// Built once for the two tests below: into a private folder inside the repository (so node_modules
// resolves), as `npm run build` does.
let built: Promise<string> | undefined;
function build(): Promise<string> {
  built ??= (async () => {
    const out = join(root, '.state', `image-entrypoint-${process.pid}`);
    await mkdir(out, { recursive: true });
    const tsc = spawnSync(
      process.execPath,
      [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json'), '--outDir', out],
      { cwd: root, encoding: 'utf8' },
    );
    assert.equal(tsc.status, 0, `npm run build's tsc failed:\n${tsc.stdout}${tsc.stderr}`);
    return out;
  })();
  return built;
}
after(async () => {
  if (built)
    await rm(await built.catch(() => join(root, '.state', `image-entrypoint-${process.pid}`)), {
      recursive: true,
      force: true,
    });
});

function entrypoint(out: string, args: string[]) {
  // As in the image: HOME and the cache on writable folders, nothing else.
  return spawnSync(process.execPath, [join(out, 'cli/main.js'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, HOME: out, IMPERSYNC_CACHE_DIR: out, XDG_CACHE_HOME: out },
  });
}

test('the entrypoint command works outside a container, from a fresh build', async () => {
  const out = await build();
  const help = entrypoint(out, ['--help']);
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /usage: impersync <command>/);
  assert.match(help.stdout, /^\s+run\s/m);
  // The image's CMD: `run`, asked for its flags (running it needs a cluster).
  const run = entrypoint(out, ['run', '--help']);
  assert.equal(run.status, 0, `impersync run --help exited ${run.status}: ${run.stderr}`);
  assert.match(run.stdout, /--namespace/);
});

for (const [command, files] of [
  ['run', ['deploy/install/base/deployment.yaml', 'deploy/helm/impersync/templates/deployment.yaml']],
  ['renderer', ['deploy/install/base/renderer-deployment.yaml', 'deploy/helm/impersync/templates/renderer.yaml']],
] as const) {
  test(`every flag the install manifests and the chart pass to \`${command}\` is one it knows`, async () => {
    const help = entrypoint(await build(), [command, '--help']);
    assert.equal(help.status, 0, help.stderr);
    const text = (await Promise.all(files.map((f) => readFile(join(root, f), 'utf8')))).join('\n');
    const passed = new Set([...text.matchAll(/^\s+- (--[a-z-]+)/gm)].map((m) => m[1] as string));
    assert.ok(passed.size >= 3, [...passed].join(' '));
    const unknown = [...passed].filter((flag) => !help.stdout.includes(flag));
    assert.deepEqual(
      unknown,
      [],
      `the Deployment passes ${unknown.join(', ')}, which \`impersync ${command} --help\` does not list`,
    );
  });
}
