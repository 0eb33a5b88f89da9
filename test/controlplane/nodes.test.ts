// Finding kwok and kube-scheduler for simulated nodes (scripts/kwok-binary, src/controlplane/nodes.ts),
// and the message when they cannot be had: a test that needs nodes then fails saying how to get them.
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { kwokStagesYaml } from '../../src/controlplane/kwok-stages.ts';
import { locateNodeBinaries, nodesScript } from '../../src/controlplane/nodes.ts';

const root = await mkdtemp(join(tmpdir(), 'nodes-test-'));
after(() => rm(root, { recursive: true, force: true }));
const quiet = () => {};

async function fakes(dir: string, names: string[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const name of names) {
    await writeFile(join(dir, name), '#!/bin/sh\necho fake\n');
    await chmod(join(dir, name), 0o755);
  }
}

async function pathWithoutGo(): Promise<string> {
  const bin = join(root, 'no-go-bin');
  await mkdir(bin, { recursive: true });
  for (const tool of ['bash', 'cat']) await symlink(`/bin/${tool}`, join(bin, tool)).catch(() => {});
  return bin;
}

test('IMPERSYNC_KWOK_DIR with kwok and kube-scheduler is used as is', async () => {
  const dir = join(root, 'ready');
  await fakes(dir, ['kwok', 'kube-scheduler']);
  const env = { PATH: await pathWithoutGo(), HOME: root, IMPERSYNC_KWOK_DIR: dir, IMPERSYNC_CACHE: join(root, 'c1') };
  assert.deepEqual(await locateNodeBinaries(env, quiet), {
    kwok: join(dir, 'kwok'),
    'kube-scheduler': join(dir, 'kube-scheduler'),
  });
});

test('without Go, a cached build or IMPERSYNC_KWOK_DIR, the error says how to get them', async () => {
  const env = { PATH: await pathWithoutGo(), HOME: root, IMPERSYNC_CACHE: join(root, 'empty-cache') };
  await assert.rejects(locateNodeBinaries(env, quiet), (err: Error) => {
    assert.match(err.message, /Go is not installed/);
    assert.match(err.message, /IMPERSYNC_KWOK_DIR/);
    assert.ok(err.message.includes(nodesScript), 'names the script to run');
    return true;
  });
});

test('IMPERSYNC_KWOK_DIR without kube-scheduler is reported, and the script falls back to a build', async () => {
  const dir = join(root, 'kwok-only');
  await fakes(dir, ['kwok']);
  let progress = '';
  const env = { PATH: await pathWithoutGo(), HOME: root, IMPERSYNC_KWOK_DIR: dir, IMPERSYNC_CACHE: join(root, 'c2') };
  await assert.rejects(
    locateNodeBinaries(env, (c) => (progress += c)),
    /Go is not installed/,
  );
  assert.match(progress, /lacks kwok or kube-scheduler; building them instead/);
});

test('the kwok stages are four Stage documents: node ready, pod starts, pod exits, pod deleted', () => {
  const docs = parseAllDocuments(kwokStagesYaml).map((d) => d.toJSON() as { kind: string; metadata: { name: string } });
  assert.deepEqual(
    docs.map((d) => [d.kind, d.metadata.name]),
    [
      ['Stage', 'impersync-node-ready'],
      ['Stage', 'impersync-pod-starts'],
      ['Stage', 'impersync-pod-exits'],
      ['Stage', 'impersync-pod-deleted'],
    ],
  );
});
