// argocd-cm health customizations (Argo CD's util/settings and util/lua): key spelling, the older
// map form, wildcards, precedence over built-in checks, and what a script's result means.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import {
  INVALID_HEALTH_STATUS,
  LuaRunner,
  createHealthAssessor,
  healthFromLua,
  readHealthCustomizations,
} from '../../src/sync/health/index.ts';

const runner = new LuaRunner({ memoryBytes: 8 << 20 });
after(() => runner.close());

const cert: KubeObject = {
  apiVersion: 'cert-manager.io/v1',
  kind: 'Certificate',
  metadata: { name: 'web', namespace: 'shop' },
  status: { conditions: [{ type: 'Ready', status: 'False', message: 'issuing' }] },
};
const healthy = (msg: string) => `return { status = "Healthy", message = "${msg}" }`;
const assess = (data: Record<string, string>, o: KubeObject = cert) =>
  createHealthAssessor({ customizations: readHealthCustomizations(data), runner })(o);

test('resource.customizations.health.<group_kind>: group and kind joined by "_", a bare kind for the core group', async () => {
  assert.deepEqual(
    await assess({ 'resource.customizations.health.cert-manager.io_Certificate': healthy('split key') }),
    {
      status: 'Healthy',
      message: 'split key',
    },
  );
  const pod: KubeObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, status: { phase: 'Pending' } };
  assert.deepEqual(await assess({ 'resource.customizations.health.Pod': healthy('core kind') }, pod), {
    status: 'Healthy',
    message: 'core kind',
  });
  const c = readHealthCustomizations({ 'resource.customizations.health.all': healthy('x') });
  assert.deepEqual([...c.overrides.keys()], ['*/*'], '"all" is */*');
});

test('the older resource.customizations map form, with health.lua and health.lua.useOpenLibs', async () => {
  const map = [
    'cert-manager.io/Certificate:',
    '  health.lua: |',
    '    return { status = "Degraded", message = string.lower("FROM MAP") }',
    '  health.lua.useOpenLibs: true',
  ].join('\n');
  assert.deepEqual(await assess({ 'resource.customizations': map }), { status: 'Degraded', message: 'from map' });
});

test('split keys replace the map form field by field', async () => {
  const map = ['cert-manager.io/Certificate:', '  health.lua.useOpenLibs: true', '  health.lua: return nil'].join('\n');
  const data = {
    'resource.customizations': map,
    'resource.customizations.health.cert-manager.io_Certificate':
      'return { status = "Suspended", message = string.rep("z", 2) }',
  };
  assert.deepEqual(
    await assess(data),
    { status: 'Suspended', message: 'zz' },
    'script from the key, open libs from the map',
  );
});

test('useOpenLibs: off unless set; Go ParseBool spellings; anything else is an error', async () => {
  const script = 'return { status = "Healthy", message = type(string) }';
  const key = 'resource.customizations.health.cert-manager.io_Certificate';
  assert.equal((await assess({ [key]: script }))?.message, 'nil');
  for (const on of ['true', 'True', 'TRUE', 't', '1'])
    assert.equal(
      (await assess({ [key]: script, 'resource.customizations.useOpenLibs.cert-manager.io_Certificate': on }))?.message,
      'table',
      on,
    );
  const bad = readHealthCustomizations({ 'resource.customizations.useOpenLibs.cert-manager.io_Certificate': 'yes' });
  assert.equal(bad.error, 'strconv.ParseBool: parsing "yes": invalid syntax');
});

test('wildcards: an exact key wins over a glob; a glob matches the group/Kind key (gobwas, * crosses dots)', async () => {
  const data = {
    'resource.customizations.health.*.crossplane.io_*': healthy('glob'),
    'resource.customizations.health.pkg.crossplane.io_Provider': healthy('exact'),
  };
  const provider = (kind: string): KubeObject => ({
    apiVersion: 'pkg.crossplane.io/v1',
    kind,
    metadata: { name: 'p' },
  });
  assert.equal((await assess(data, provider('Provider')))?.message, 'exact');
  assert.equal((await assess(data, provider('Configuration')))?.message, 'glob');
});

test('a Lua check overrides the built-in one; without a match the built-in check applies', async () => {
  const deploy: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd' },
    spec: { paused: true },
  };
  assert.equal((await assess({}, deploy))?.status, 'Suspended');
  assert.deepEqual(await assess({ 'resource.customizations.health.apps_Deployment': healthy('mine') }, deploy), {
    status: 'Healthy',
    message: 'mine',
  });
  assert.equal(await assess({}, cert), null, 'a custom resource without a check has no health');
});

test('an object being deleted is Progressing before any script runs', async () => {
  const deleting = { ...cert, metadata: { ...cert.metadata, deletionTimestamp: '2024-01-01T00:00:00Z' } };
  assert.deepEqual(
    await assess({ 'resource.customizations.health.cert-manager.io_Certificate': 'error("never")' }, deleting),
    {
      status: 'Progressing',
      message: 'Pending deletion',
    },
  );
});

test('Argo CD errors for malformed keys and unsupported types', () => {
  assert.equal(
    readHealthCustomizations({ 'resource.customizations.health.a_b_C': 'x' }).error,
    "group kind should be in format `resource.customizations.<type>.<group_kind>` or resource.customizations.<type>.<kind>`, got group kind: 'a_b_C'",
  );
  assert.equal(
    readHealthCustomizations({ 'resource.customizations.colour.apps_Deployment': 'x' }).error,
    'resource customization type colour not supported',
  );
  assert.equal(
    readHealthCustomizations({ 'resource.customizations.ignoreDifferences.all': 'jsonPointers: [/spec]' }).error,
    undefined,
  );
});

test('broken customizations make every assessment Unknown, naming argocd-cm and the reason', async () => {
  const got = await assess({ 'resource.customizations.colour.apps_Deployment': 'x' });
  assert.equal(got?.status, 'Unknown');
  assert.equal(got?.message, 'argocd-cm: resource customization type colour not supported');
});

test("a script's result: Argo CD's rules for tables, nil, lists, wrong types and unknown statuses", () => {
  const ok = (value: unknown, luaType = 'table') => healthFromLua({ ok: true, luaType, value });
  assert.deepEqual(ok({ status: 'Degraded', message: 'm' }), { status: 'Degraded', message: 'm' });
  assert.deepEqual(ok({ Status: 'Healthy' }), { status: 'Healthy' }, 'field names match case-insensitively');
  assert.deepEqual(ok(undefined, 'nil'), { status: '' }, 'nil: a health with no status');
  assert.deepEqual(ok([]), { status: '' }, 'an empty table encodes as [] and decodes to nothing');
  assert.deepEqual(ok({ status: 'Healthy', message: 5 }), { status: '' }, 'a message that is not a string');
  assert.deepEqual(ok({ message: 'no status' }), { status: 'Unknown', message: INVALID_HEALTH_STATUS });
  assert.deepEqual(ok({ status: 'Fine' }), { status: 'Unknown', message: INVALID_HEALTH_STATUS });
  assert.deepEqual(healthFromLua({ ok: true, luaType: 'string' }), {
    status: 'Unknown',
    message: 'expect table output from Lua script, not string',
    error: 'expect table output from Lua script, not string',
  });
  assert.deepEqual(healthFromLua({ ok: false, error: '<string>:1: boom' }), {
    status: 'Unknown',
    message: '<string>:1: boom',
    error: '<string>:1: boom',
  });
});

test('the last value a script returns is the one read, as Argo CD reads the top of the stack', async () => {
  const got = await assess({
    'resource.customizations.health.cert-manager.io_Certificate': 'return { status = "Healthy" }, 1',
  });
  assert.equal(got?.message, 'expect table output from Lua script, not number');
});

test('impersync.health.customizationsDir: a folder laid out like resource_customizations/, globs with "_"', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'impersync-lib-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const put = async (path: string, script: string) => {
    await mkdir(join(dir, path), { recursive: true });
    await writeFile(join(dir, path, 'health.lua'), script);
  };
  await put('cert-manager.io/Certificate', 'return { status = "Healthy", message = string.upper("folder") }');
  await put('_.example.com/_', healthy('folder glob'));
  await put('ConfigMap', healthy('core'));
  const data = { 'impersync.health.customizationsDir': dir };
  assert.deepEqual(await assess(data), { status: 'Healthy', message: 'FOLDER' }, 'folder scripts get open libraries');
  const widget: KubeObject = { apiVersion: 'shop.example.com/v1', kind: 'Widget', metadata: { name: 'w' } };
  assert.equal((await assess(data, widget))?.message, 'folder glob');
  const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } };
  assert.equal((await assess(data, cm))?.message, 'core');
  const both = { ...data, 'resource.customizations.health.cert-manager.io_Certificate': healthy('argocd-cm') };
  assert.equal((await assess(both))?.message, 'argocd-cm', 'argocd-cm wins over the folder');
  const missing = await assess({ 'impersync.health.customizationsDir': join(dir, 'nope') });
  assert.equal(missing?.status, 'Unknown');
  assert.match(missing?.message ?? '', /^impersync\.health\.customizationsDir .*nope: ENOENT/);
});
