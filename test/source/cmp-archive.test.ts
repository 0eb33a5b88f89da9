// The app folder streamed to a plugin with Argo CD's --plugin-tar-exclude globs
// (util/io/files/tar.go matchesExclusionPattern): read back with GNU tar, the archive leaves out
// what the globs name, a folder with all it holds, and keeps the rest.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { archiveRepository, excluded } from '../../src/source/cmp/archive.ts';

let root: string;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'cmp-archive-'));
  for (const [rel, text] of Object.entries({
    'app/main.yaml': 'a',
    'app/notes.md': 'b',
    'README.md': 'c',
    'big/blob.bin': 'd',
    'deep/x/y/secret.key': 'e',
    'deep/x/keep.yaml': 'f',
  })) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), text);
  }
});

after(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

/** The regular files of a tar.gz, as GNU tar lists them. */
function listed(tgz: Buffer): string[] {
  return execFileSync('tar', ['-tzf', '-'], { input: tgz, encoding: 'utf8' })
    .split('\n')
    .filter((l) => l !== '' && !l.endsWith('/'))
    .sort();
}

test("excluded: Argo CD's rule, a glob with a / against the path with **, one without against the whole path", () => {
  assert.equal(excluded(['*.md'], 'README.md'), true);
  assert.equal(excluded(['*.md'], 'app/notes.md'), false, 'filepath.Match: * stops at /');
  assert.equal(excluded(['**/*.md'], 'app/notes.md'), true);
  assert.equal(excluded(['**/*.md'], 'README.md'), true, '** matches no folder too');
  assert.equal(excluded(['big'], 'big'), true);
  assert.equal(excluded(['deep/**/*.key'], 'deep/x/y/secret.key'), true);
  assert.equal(excluded(['deep/**/*.key'], 'deep/x/keep.yaml'), false);
});

test('the archive leaves out the excluded files and folders, and keeps the rest', async () => {
  const all = await archiveRepository(root, { maxFiles: 100, maxBytes: 1 << 20 });
  assert.deepEqual(listed(all.tgz), [
    'README.md',
    'app/main.yaml',
    'app/notes.md',
    'big/blob.bin',
    'deep/x/keep.yaml',
    'deep/x/y/secret.key',
  ]);
  const some = await archiveRepository(root, { maxFiles: 100, maxBytes: 1 << 20 }, ['*.md', 'big', 'deep/**/*.key']);
  assert.deepEqual(listed(some.tgz), ['app/main.yaml', 'app/notes.md', 'deep/x/keep.yaml']);
  assert.notEqual(some.checksum, all.checksum);
});
