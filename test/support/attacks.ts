// The hostile inputs of issue 12 ("One tenant cannot stall, starve or crash the controller for the
// others"), as files a tenant could commit: each small in Git, each once enough to take a shared
// controller down. The unit, renderer, real-controller tests and bench/tenants all use these.
import { spawnSync } from 'node:child_process';
import { git, TestRepo } from './git.ts';

/**
 * A legal ConfigMap of about 1 MiB holding `keys` keys (88,000 by default): the YAML parser's
 * duplicate-key check compares every key with every other, 85 s of one core for this one file.
 */
export function manyKeysConfigMap(name = 'many-keys', keys = 88_000): string {
  const lines = [`apiVersion: v1`, `kind: ConfigMap`, `metadata:`, `  name: ${name}`, `data:`];
  for (let i = 0; i < keys; i++) lines.push(`  k${String(i).padStart(6, '0')}: v`);
  return `${lines.join('\n')}\n`;
}

/**
 * About 490 KiB of YAML that expands to about 480 MB: one anchored 480 KiB string used as the
 * value of 999 keys. Under the parser's alias-count rule (1,000 uses) it is legal; as JSON it is
 * what the controller would read, send as a dry-run and hold.
 */
export function aliasBomb(name = 'alias-bomb', uses = 999, stringBytes = 480 * 1024): string {
  const lines = [`apiVersion: v1`, `kind: ConfigMap`, `metadata:`, `  name: ${name}`, 'data:'];
  lines.push(`  k0: &s ${'x'.repeat(stringBytes)}`);
  for (let i = 1; i <= uses; i++) lines.push(`  k${i}: *s`);
  return `${lines.join('\n')}\n`;
}

/**
 * A ConfigMap of `keys` keys, each value `value`-prefixed: commit it with one value, sync, then
 * commit it with another, and every line of it differs (12,000 keys: a text diff of 4.7 GB).
 */
export function wideConfigMap(name: string, value: string, keys = 12_000): string {
  const lines = [`apiVersion: v1`, `kind: ConfigMap`, `metadata:`, `  name: ${name}`, `data:`];
  for (let i = 0; i < keys; i++) lines.push(`  key-${i}: "${value}-${i}"`);
  return `${lines.join('\n')}\n`;
}

/**
 * A repository of a few KiB in Git whose commit checks out to `copies` × `blobBytes` (2.5 GiB by
 * default): one blob of zeros, named `copies` times in the tree. Its own repository, so that the
 * files missing from its work tree never reach another test's commit.
 */
export async function checkoutBombRepo(
  opts: { copies?: number; blobBytes?: number; path?: string } = {},
): Promise<TestRepo> {
  const copies = opts.copies ?? 250;
  const blobBytes = opts.blobBytes ?? 10 * 1024 * 1024;
  const folder = opts.path ?? 'bomb';
  const repo = await TestRepo.create();
  await repo.commit({ [`${folder}/cm.yaml`]: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n' });
  const r = spawnSync('git', ['hash-object', '-w', '--stdin'], {
    cwd: repo.dir,
    input: Buffer.alloc(blobBytes),
    encoding: 'utf8',
    maxBuffer: 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`git hash-object: ${r.stderr}`);
  const blob = r.stdout.trim();
  const info = Array.from({ length: copies }, (_, i) => `100644 ${blob}\t${folder}/zeros-${i}.bin`).join('\n');
  const u = spawnSync('git', ['update-index', '--add', '--index-info'], { cwd: repo.dir, input: `${info}\n` });
  if (u.status !== 0) throw new Error(`git update-index: ${u.stderr}`);
  git(repo.dir, 'commit', '--quiet', '-m', 'checkout bomb');
  return repo;
}
