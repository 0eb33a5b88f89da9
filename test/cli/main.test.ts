// The `impersync` entry point runs when started directly and through a symlink, as npm's bin links
// and npx start it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

function runHelp(entry: string): { status: number | null; stdout: string } {
  const r = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', entry, '--help'], {
    encoding: 'utf8',
  });
  return { status: r.status, stdout: r.stdout };
}

test('impersync --help lists the commands when started directly', () => {
  const r = runHelp(main);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^usage: impersync <command>/);
  for (const c of ['run', 'explain', 'validate', 'health', 'diff', 'cluster'])
    assert.match(r.stdout, new RegExp(`\\n  ${c} `));
});

test('impersync runs when started through a symlink (npm bin link, npx)', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'impersync-bin-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const link = path.join(dir, 'impersync.ts');
  symlinkSync(main, link);
  const r = runHelp(link);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^usage: impersync <command>/);
});

test('an unknown command is exit 2 with the usage on stderr', () => {
  const r = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', main, 'frobnicate'], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown command 'frobnicate'/);
});

test('impersync --version names the package version and the pinned Argo CD release of the health checks', () => {
  const r = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', main, '--version'], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^impersync \d+\.\d+\.\d+\nArgo CD health checks: v3\.6\.1\n$/);
});
