// Finding the CNCF distribution registry the OCI tests run (scripts/registry-binary,
// test/support/helm.ts), and the message when it cannot be had: an OCI test then fails saying how
// to get it.
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { registryBinary, registryScript } from '../support/helm.ts';

const root = await mkdtemp(join(tmpdir(), 'registry-binary-test-'));
after(() => rm(root, { recursive: true, force: true }));

async function fakeRegistry(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'registry'), '#!/bin/sh\necho fake\n');
  await chmod(join(dir, 'registry'), 0o755);
}

/** A PATH with only bash and cat: the script runs, Go is nowhere. */
async function pathWithoutGo(): Promise<string> {
  const bin = join(root, 'no-go-bin');
  await mkdir(bin, { recursive: true });
  for (const tool of ['bash', 'cat']) await symlink(`/bin/${tool}`, join(bin, tool)).catch(() => {});
  return bin;
}

test('IMPERSYNC_REGISTRY_DIR with a registry is used as is', async () => {
  const dir = join(root, 'ready');
  await fakeRegistry(dir);
  const env = {
    PATH: await pathWithoutGo(),
    HOME: root,
    IMPERSYNC_REGISTRY_DIR: dir,
    IMPERSYNC_CACHE: join(root, 'c'),
  };
  assert.equal(registryBinary(env), join(dir, 'registry'));
});

test('a cached build is found without Go', async () => {
  const cache = join(root, 'cache');
  await fakeRegistry(join(cache, 'registry', 'distribution-v9.9.9'));
  const env = { PATH: await pathWithoutGo(), HOME: root, IMPERSYNC_CACHE: cache, IMPERSYNC_REGISTRY_VERSION: 'v9.9.9' };
  assert.equal(registryBinary(env), join(cache, 'registry', 'distribution-v9.9.9', 'registry'));
});

test('without Go, a cached build or IMPERSYNC_REGISTRY_DIR, the error says how to get it', async () => {
  const env = { PATH: await pathWithoutGo(), HOME: root, IMPERSYNC_CACHE: join(root, 'empty-cache') };
  assert.throws(
    () => registryBinary(env),
    (err: Error) => {
      assert.match(err.message, /Go is not installed/);
      assert.match(err.message, /IMPERSYNC_REGISTRY_DIR/);
      assert.ok(err.message.includes('scripts/registry-binary'), 'names the script to run');
      return true;
    },
  );
});

test('IMPERSYNC_REGISTRY_DIR without a registry is reported, and the script falls back to a build', async () => {
  const dir = join(root, 'empty-dir');
  await mkdir(dir, { recursive: true });
  const env = {
    PATH: await pathWithoutGo(),
    HOME: root,
    IMPERSYNC_REGISTRY_DIR: dir,
    IMPERSYNC_CACHE: join(root, 'c2'),
  };
  assert.throws(
    () => registryBinary(env),
    /IMPERSYNC_REGISTRY_DIR=.* has no executable registry; building it instead[\s\S]*Go is not installed/,
  );
});

test('npm test provisions it before the tests and hands its folder to them', async () => {
  const runner = await readFile(new URL('../../scripts/run-tests.mjs', import.meta.url), 'utf8');
  assert.ok(registryScript.endsWith('scripts/registry-binary'));
  assert.match(runner, /'scripts\/registry-binary': 'IMPERSYNC_REGISTRY_DIR'/);
  assert.match(runner, /const chains = \[[^;]*'scripts\/registry-binary'[^;]*\];/);
});
