// `impersync run` with no flag and no in-cluster environment: the README's first command. It must
// start a local control plane, install the examples, sync the one whose ServiceAccount may deploy,
// print which ServiceAccount it synced as and which Applications were refused and why, and stop
// everything on SIGINT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

test('impersync run with no flag syncs example 1 as its ServiceAccount and reports the refused ones', { timeout: 240_000 }, async () => {
  const cwd = await mkdtemp(path.join(os.tmpdir(), 'impersync-run-'));
  const env = { ...process.env };
  delete env['KUBECONFIG'];
  delete env['KUBERNETES_SERVICE_HOST'];
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', main, 'run'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => { out += c.toString('utf8'); });
  child.stderr.on('data', (c: Buffer) => { err += c.toString('utf8'); });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const end = Date.now() + 180_000;
    const done = () => out.includes('✔ argocd/guestbook synced') && /✖ argocd\/guestbook-prod refused: .*system:serviceaccount:guestbook-prod:guestbook-prod-deployer/.test(out);
    while (!done()) {
      if (Date.now() > end || child.exitCode !== null) assert.fail(`expected output not seen.\nstdout:\n${out}\nstderr:\n${err.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.match(out, /✔ argocd\/guestbook synced: .* as system:serviceaccount:guestbook:generic-deployer/);
    assert.match(out, /✖ argocd\/guestbook-dev refused: .*system:serviceaccount:guestbook-dev:guestbook-generic-deployer/);
    child.kill('SIGINT');
    assert.equal(await exited, 0, `exit status; stderr:\n${err.slice(-2000)}`);
    assert.match(out, /impersync: stopping/);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(cwd, { recursive: true, force: true });
  }
});
