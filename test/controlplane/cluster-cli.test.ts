// `impersync cluster` argument handling (its run against real binaries is in
// test/e2e/controlplane-lifecycle.test.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const mainTs = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const run = (...args: string[]) =>
  spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', mainTs, 'cluster', ...args], {
    encoding: 'utf8',
  });

test('--help describes the flags and the files, and exits 0', () => {
  const res = run('--help');
  assert.equal(res.status, 0, res.stderr);
  assert.match(res.stdout, /--state-dir DIR/);
  assert.match(res.stdout, /--remote/);
  assert.match(res.stdout, /admin\.kubeconfig, controller\.kubeconfig, audit\.log/);
});

test('an unknown flag or a positional argument is a usage error (exit 2) naming it', () => {
  const unknown = run('--bogus');
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /impersync cluster: Unknown option '--bogus'/);
  const positional = run('somewhere');
  assert.equal(positional.status, 2);
  assert.match(positional.stderr, /impersync cluster: Unexpected argument 'somewhere'/);
});

test('--nodes N asks for simulated nodes; anything but a whole number 0-100 is a usage error', () => {
  assert.match(run('--help').stdout, /--nodes N +N simulated nodes \(kube-scheduler \+ kwok\)/);
  const bad = run('--nodes', 'many');
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr, "impersync cluster: --nodes must be a whole number from 0 to 100, not 'many'\n");
});
