// The controller's process never loads @kubernetes/client-node for a kubeconfig of tokens, token
// files, certificates or basic auth (about 85 MiB of RSS: it loads every generated API model).
// A child Node records every module it resolves (module.registerHooks) while importing the
// modules of `impersync run` and of the live explain/validate reads, then loading a kubeconfig
// and making its credential; a last import of client-node itself shows the recording sees it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SRC = new URL('../../src/', import.meta.url);

const CHILD = `
import { registerHooks } from 'node:module';
const seen = [];
registerHooks({
  resolve(specifier, context, next) {
    const r = next(specifier, context);
    seen.push(r.url);
    return r;
  },
});
const clientNode = () => seen.filter((u) => u.includes('/@kubernetes/client-node/')).length;
await import(new URL('cli/commands.ts', process.env.SRC).href);
await import(new URL('cli/run.ts', process.env.SRC).href);
await import(new URL('cli/live.ts', process.env.SRC).href);
await import(new URL('controller/controller.ts', process.env.SRC).href);
const { loadControllerCredential } = await import(new URL('kube/credentials.ts', process.env.SRC).href);
const cred = await loadControllerCredential({ kubeconfig: process.env.KC });
const modules = seen.length;
const before = clientNode();
await import('@kubernetes/client-node');
console.log(JSON.stringify({ modules, before, after: clientNode(), token: cred.bearerToken }));
`;

test('impersync run, the live reads and a token kubeconfig load no module of @kubernetes/client-node', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'impersync-imports-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const kc = join(dir, 'config');
  writeFileSync(
    kc,
    'current-context: a\nclusters: [{ name: c, cluster: { server: "https://127.0.0.1:1" } }]\n' +
      'users: [{ name: u, user: { token: t0k } }]\ncontexts: [{ name: a, context: { cluster: c, user: u } }]\n',
  );
  const res = spawnSync(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', CHILD],
    { cwd: new URL('../..', import.meta.url), env: { ...process.env, SRC: SRC.href, KC: kc }, encoding: 'utf8' },
  );
  assert.equal(res.status, 0, res.stderr);
  const out = JSON.parse(res.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
  assert.equal(out['token'], 't0k');
  assert.ok((out['modules'] as number) > 100, `only ${String(out['modules'])} modules seen: the recording is broken`);
  assert.equal(out['before'], 0);
  assert.ok((out['after'] as number) > 0, 'the recording did not see client-node when it was imported');
});
