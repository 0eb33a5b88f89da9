// The default library (Argo CD's bundled checks, sync/health/bundled.ts): where it is found, and
// where it ranks: argocd-cm keys > the operator's folder > the default library > built-in checks,
// per kind, as Argo CD ranks an argocd-cm customization above its bundled script.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import {
  ARGOCD_HEALTH_VERSION,
  LuaRunner,
  builtinHealth,
  createHealthAssessor,
  defaultHealthScriptsDir,
  readHealthCustomizations,
} from '../../src/sync/health/index.ts';

const runner = new LuaRunner({ memoryBytes: 8 << 20 });
after(() => runner.close());

let root: string;
const put = async (path: string, message: string) => {
  await mkdir(join(root, path), { recursive: true });
  await writeFile(join(root, path, 'health.lua'), `return { status = "Healthy", message = "${message}" }`);
};
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'impersync-default-lib-'));
  await put('default/cert-manager.io/Certificate', 'default library');
  await put('default/apps/Deployment', 'default library');
  await put('default/_.example.com/_', 'default glob');
  await put('operator/cert-manager.io/Certificate', 'operator folder');
});
after(() => rm(root, { recursive: true, force: true }));

const obj = (apiVersion: string, kind: string): KubeObject => ({ apiVersion, kind, metadata: { name: 'x' } });
const cert = obj('cert-manager.io/v1', 'Certificate');

async function message(o: KubeObject, data: Record<string, string>, defaultLibraryDir?: string) {
  const assess = createHealthAssessor({ customizations: readHealthCustomizations(data), runner, defaultLibraryDir });
  return (await assess(o))?.message;
}

test('argocd-cm keys > operator folder > default library > built-in check, kind by kind', async () => {
  const def = join(root, 'default');
  const folder = { 'impersync.health.customizationsDir': join(root, 'operator') };
  const key = {
    'resource.customizations.health.cert-manager.io_Certificate':
      'return { status = "Degraded", message = "argocd-cm" }',
  };
  assert.equal(await message(cert, {}, def), 'default library');
  assert.equal(await message(cert, folder, def), 'operator folder');
  assert.equal(await message(cert, { ...folder, ...key }, def), 'argocd-cm');
  // A kind the operator's folder lacks still gets the default library's script; a glob folder too.
  assert.equal(await message(obj('apps/v1', 'Deployment'), folder, def), 'default library');
  assert.equal(await message(obj('shop.example.com/v1', 'Widget'), folder, def), 'default glob');
  // Without a default library: the built-in check, and no health for a custom resource.
  const deployment = obj('apps/v1', 'Deployment');
  const builtin = await createHealthAssessor({ customizations: readHealthCustomizations({}), runner })(deployment);
  assert.deepEqual(builtin, builtinHealth(deployment));
  assert.notEqual(builtin?.message, 'default library');
  const none = createHealthAssessor({ customizations: readHealthCustomizations({}), runner });
  assert.equal(await none(cert), null);
});

test('a default library that cannot be read makes objects Unknown, naming the variable that named it', async () => {
  const got = await createHealthAssessor({
    customizations: readHealthCustomizations({}),
    runner,
    defaultLibraryDir: join(root, 'nope'),
  })(cert);
  assert.equal(got?.status, 'Unknown');
  assert.match(got?.message ?? '', /^IMPERSYNC_HEALTH_SCRIPTS_DIR .*nope: ENOENT/);
});

test('where the default library is found: the variable, else the download cache of the pinned release', async () => {
  assert.equal(defaultHealthScriptsDir({ IMPERSYNC_HEALTH_SCRIPTS_DIR: '/x/y' }), '/x/y');
  assert.equal(defaultHealthScriptsDir({ IMPERSYNC_HEALTH_SCRIPTS_DIR: 'none', IMPERSYNC_CACHE: root }), undefined);
  assert.equal(defaultHealthScriptsDir({ IMPERSYNC_CACHE: root }), undefined, 'no cache folder yet');
  const cached = join(root, 'health-scripts', `argo-cd-${ARGOCD_HEALTH_VERSION}`);
  await mkdir(cached, { recursive: true });
  assert.equal(defaultHealthScriptsDir({ IMPERSYNC_CACHE: root }), cached);
});

test('the code and scripts/health-scripts pin the same Argo CD release', async () => {
  const script = await readFile(new URL('../../scripts/health-scripts', import.meta.url), 'utf8');
  assert.equal(/ARGOCD_VERSION="\$\{IMPERSYNC_ARGOCD_VERSION:-(v[0-9.]+)\}"/.exec(script)?.[1], ARGOCD_HEALTH_VERSION);
});
