// The `impersync` bin on a Node.js older than 24 says so in one line and exits 2, before any
// module that fails on that Node (undici) is loaded (src/cli/main.ts, src/cli/node-version.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NEEDED_NODE_MAJOR, nodeVersionProblem } from '../../src/cli/node-version.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const systemNode = '/usr/bin/node';
const line = /^impersync needs Node\.js 24 \(this is (\S+)\): .*npm start.*npx impersync.*nvm install 24/;

// Built once, as `npm run build` does, into a private folder inside the repository (so that
// node_modules resolves): the tests run what package.json's `bin` names, not the TypeScript.
const out = join(root, '.state', `node-version-${process.pid}`);
after(() => rm(out, { recursive: true, force: true }));
let built: Promise<string> | undefined;
function builtBin(): Promise<string> {
  built ??= (async () => {
    await mkdir(out, { recursive: true });
    const tsc = spawnSync(
      process.execPath,
      [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json'), '--outDir', out],
      { cwd: root, encoding: 'utf8' },
    );
    assert.equal(tsc.status, 0, `npm run build's tsc failed:\n${tsc.stdout}${tsc.stderr}`);
    return join(out, 'cli', 'main.js');
  })();
  return built;
}

function versionOf(node: string): string {
  const r = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `${node} -p process.versions.node: ${r.stderr}`);
  return r.stdout.trim();
}

test('the check names the version it found and what to do, for every Node older than 24', () => {
  assert.equal(NEEDED_NODE_MAJOR, 24);
  for (const v of ['20.20.2', '22.19.0', '23.11.1', 'v18.0.0']) {
    const problem = nodeVersionProblem(v);
    assert.ok(problem, `${v} is refused`);
    assert.match(problem, line);
    assert.equal(problem.match(line)?.[1], v);
    assert.doesNotMatch(problem, /\n/, 'one line');
  }
  for (const v of ['24.0.0', '24.21.0', '25.1.0']) assert.equal(nodeVersionProblem(v), undefined, `${v} will do`);
});

test('the entry file loads nothing before the check: its one static import is the check, which imports nothing', async () => {
  const staticImports = (file: string) =>
    [...readFileSync(join(root, file), 'utf8').matchAll(/^\s*import\s[^(][\s\S]*?from\s*'([^']+)'/gm)].map((m) => m[1]);
  assert.deepEqual(staticImports('src/cli/main.ts'), ['./node-version.ts']);
  assert.deepEqual(staticImports('src/cli/node-version.ts'), []);
  assert.match(readFileSync(join(root, 'src/cli/main.ts'), 'utf8'), /import\('\.\/commands\.ts'\)/);
});

test('package.json asks for the Node the check asks for', async () => {
  const pkg = (await import('../../package.json', { with: { type: 'json' } })).default as {
    engines: { node: string };
    devDependencies: Record<string, string>;
    bin: Record<string, string>;
  };
  assert.equal(pkg.engines.node, `>=${NEEDED_NODE_MAJOR} <${NEEDED_NODE_MAJOR + 1}`);
  assert.match(pkg.devDependencies['node'] ?? '', new RegExp(`^\\^${NEEDED_NODE_MAJOR}\\.`));
  assert.equal(pkg.bin['impersync'], 'dist/cli/main.js');
});

test('the built bin on an older Node (its version faked before it starts) prints the line and exits 2', async () => {
  const bin = await builtBin();
  // process.versions.node is configurable: a preload makes this Node 24 claim 20.20.2, so the check
  // runs end to end whatever Node the machine has.
  const fake = 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.20.2"})';
  const r = spawnSync(process.execPath, ['--import', fake, bin, 'run'], { encoding: 'utf8' });
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, line);
  assert.equal(r.stderr.trim().split('\n').length, 1, `one line:\n${r.stderr}`);
  // The same bin on this Node 24 runs its commands.
  const help = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /^usage: impersync <command>/);
});

test(`the built bin on the system's Node (${systemNode}) refuses it when older than 24, or runs`, async () => {
  assert.ok(
    existsSync(systemNode),
    `${systemNode} not found: this test runs the bin with the machine's own Node (apt-get install nodejs)`,
  );
  const bin = await builtBin();
  const version = versionOf(systemNode);
  const r = spawnSync(systemNode, [bin, 'run', '--help'], { encoding: 'utf8' });
  if (nodeVersionProblem(version)) {
    // Node 20 used to die inside undici: "Cannot read properties of undefined (reading 'bind')".
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, `${nodeVersionProblem(version)}\n`);
    assert.equal(r.stderr.match(line)?.[1], version);
    assert.doesNotMatch(r.stderr, /bind|undici/);
  } else {
    assert.equal(r.status, 0, `Node ${version} is new enough, so the bin runs: ${r.stderr}`);
    assert.match(r.stdout, /--namespace/);
  }
});
