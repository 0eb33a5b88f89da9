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

test('impersync run refuses a bad --shards and Lease timings client-go would refuse, naming the flag', () => {
  const run = (...args: string[]) =>
    spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', main, 'run', ...args], { encoding: 'utf8' });
  for (const [args, message] of [
    [['--shards', '0'], /--shards must be a whole number from 1 to 1024, not '0'/],
    [['--shards', 'two'], /--shards must be a whole number/],
    [['--leader-election-lease-duration', 'soon'], /--leader-election-lease-duration must be a duration/],
    [
      ['--leader-election-lease-duration', '5s', '--leader-election-renew-deadline', '5s'],
      /lease duration \(5000 ms\) must be greater than renew deadline \(5000 ms\)/,
    ],
  ] as const) {
    const r = run(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
});

test('impersync run refuses a --renderer it cannot route to, naming the entry', () => {
  const run = (...args: string[]) =>
    spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', main, 'run', ...args], { encoding: 'utf8' });
  for (const [args, message] of [
    [
      ['--renderer', 'renderer:8081'],
      /--renderer must be http:\/\/host:port, https:\/\/host:port, unix:\/path or dns\+http:\/\/name:port, not 'renderer:8081'/,
    ],
    [['--renderer', 'http://a:1', '--renderer', 'ftp://b'], /not 'ftp:\/\/b'/],
    [['--renderer', 'http://a:1,,http://b:1'], /--renderer needs an address/],
    [['--renderer', 'dns+http://impersync-renderer-headless'], /--renderer must be dns\+http:\/\/name:port/],
    [['--renderer', 'dns+https://impersync-renderer-headless:8081'], /dns\+https is not supported/],
  ] as const) {
    const r = run(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
});
