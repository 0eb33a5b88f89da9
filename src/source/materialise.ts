// Writing the files of one commit to disk, for a render to read: refused before anything is
// written when the commit's tree is over the renderer's checkout limits (files and bytes, listed
// from the clone with `git ls-tree`), written through a private index with `git read-tree` under
// the tool limits, and refused after when any symlink in it leads outside it (paths.ts). The tree
// check also holds kustomize's clones of remote bases (git-guard.ts).
import { randomBytes } from 'node:crypto';
import { mkdir, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { SourceError } from './errors.ts';
import { tail, type RunResult } from './exec.ts';
import { formatBytes } from './limits.ts';
import { SYMLINK_CHECK_STEPS, findEscapingSymlink } from './paths.ts';
import type { Scrub } from './scrub.ts';
import { scrubber } from './scrub.ts';

/** A commit refused for what it holds (its size, its symlinks): the same at every checkout under the same limits. */
export class CommitRefused extends SourceError {}

export interface CheckoutLimits {
  /** Largest sum of the sizes of a commit's files. */
  checkoutMaxBytes: number;
  /** Most files in a commit. */
  checkoutMaxFiles: number;
}

export const DEFAULT_CHECKOUT_LIMITS: CheckoutLimits = {
  checkoutMaxBytes: 1024 * 1024 * 1024,
  checkoutMaxFiles: 100_000,
};

/** Runs git with the clone's environment; `env` adds to it, `scrub` replaces the cache's scrubber. */
export type GitRunner = (
  args: string[],
  o: { label: string; cwd?: string; env?: NodeJS.ProcessEnv; maxStdoutBytes?: number; scrub?: Scrub },
) => Promise<RunResult>;

export interface CommitToWrite {
  /** The bare clone. */
  gitDir: string;
  /** The repository as shown in messages (redacted). */
  shown: string;
  sha: string;
  /** Folder the commit's own folder is made in. */
  parent: string;
  /** The cache folder, named `<cache>` in messages. */
  cacheDir: string;
}

/**
 * Writes the files of `c.sha` into a new folder under `c.parent` and returns it with their size.
 * `reserve` is given that size before anything is written and resolves once the cache has room
 * for it (git.ts); `unreserve` gives the room back when writing fails. Holds the clone's mutex.
 */
export async function materialise(
  git: GitRunner,
  c: CommitToWrite,
  limits: CheckoutLimits,
  room: { reserve(bytes: number): Promise<void>; unreserve(bytes: number): void } = {
    reserve: async () => {},
    unreserve: () => {},
  },
): Promise<{ dir: string; bytes: number }> {
  const bytes = await checkTreeSize(git, c, limits);
  await room.reserve(bytes);
  try {
    return { dir: await write(git, c), bytes };
  } catch (err) {
    room.unreserve(bytes);
    throw err;
  }
}

async function write(git: GitRunner, c: CommitToWrite): Promise<string> {
  await mkdir(c.parent, { recursive: true });
  // A unique directory per materialisation: an eviction in progress can never touch a newer copy.
  const dir = path.join(c.parent, `${c.sha}-${randomBytes(4).toString('hex')}`);
  await mkdir(dir);
  const index = `${dir}.index`;
  try {
    const r = await git(['--git-dir', c.gitDir, '--work-tree', dir, 'read-tree', '--reset', '-u', c.sha], {
      cwd: dir,
      env: { GIT_INDEX_FILE: index },
      label: `checkout of ${c.sha} from '${c.shown}'`,
      // Paths in the new tree are the repository's own: shown relative to its root.
      scrub: scrubber([
        { from: index, to: '<index>' },
        { from: dir, to: '' },
        { from: c.cacheDir, to: '<cache>' },
      ]),
    });
    if (r.code !== 0) {
      throw new SourceError('ToolFailed', `checkout of ${c.sha} from '${c.shown}' failed: ${tail(r.stderr)}`);
    }
    await refuseEscapingSymlinks(dir, c.shown, c.sha);
    return dir;
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  } finally {
    await rm(index, { force: true });
  }
}

/** Refuses a commit whose files add up to more than the limits, from its tree alone (nothing written); its size. */
async function checkTreeSize(git: GitRunner, c: CommitToWrite, limits: CheckoutLimits): Promise<number> {
  const where = `commit ${c.sha} of '${c.shown}'`;
  const r = await git(['ls-tree', '-r', '-l', '-z', '--full-tree', c.sha], {
    label: `listing the files of ${where}`,
    maxStdoutBytes: treeListingBytes(limits),
  }).catch((err: unknown) => {
    if (err instanceof SourceError && err.reason === 'TooLarge') {
      throw new CommitRefused(
        'TooLarge',
        `${where} has more files than the renderer's checkout limit of ${limits.checkoutMaxFiles} files`,
      );
    }
    throw err;
  });
  if (r.code !== 0) throw new SourceError('ToolFailed', `listing the files of ${where} failed: ${tail(r.stderr)}`);
  const size = treeSize(r.stdout.toString('utf8'));
  const over = sizeOverLimits(size, limits);
  if (over) throw new CommitRefused('TooLarge', `${where} has ${over}`);
  return size.bytes;
}

/** Files and bytes of a tree listing (`git ls-tree -r -l -z`). */
export function treeSize(listing: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const entry of listing.split('\0')) {
    // "<mode> <type> <object> <size>\t<path>"; submodules (type commit) have size "-" and no files.
    const m = /^\d+ blob [0-9a-f]+ +(\d+)\t/.exec(entry);
    if (!m) continue;
    files++;
    bytes += Number(m[1]);
  }
  return { files, bytes };
}

/** Most bytes of `git ls-tree -r -l -z` read for a tree within `limits` (each entry: its path and ~60 bytes). */
export function treeListingBytes(limits: CheckoutLimits): number {
  return Math.min(512 * 1024 * 1024, Math.max(1024 * 1024, limits.checkoutMaxFiles * 4200));
}

/** What of a tree (`git ls-tree -r -l -z` output) is over the limits, e.g. "7 files, over ...", or undefined. */
export function treeOverLimits(listing: string, limits: CheckoutLimits): string | undefined {
  return sizeOverLimits(treeSize(listing), limits);
}

/** What of `files` and `bytes` is over the limits (the files first), e.g. "7 files, over ...", or undefined. */
export function sizeOverLimits(
  { files, bytes }: { files: number; bytes: number },
  limits: CheckoutLimits,
): string | undefined {
  if (files > limits.checkoutMaxFiles) {
    return `${files} files, over the renderer's checkout limit of ${limits.checkoutMaxFiles} files`;
  }
  if (bytes > limits.checkoutMaxBytes) {
    return `${formatBytes(bytes)} of files, over the renderer's checkout limit of ${formatBytes(limits.checkoutMaxBytes)}`;
  }
  return undefined;
}

/**
 * A repository's symlinks must stay inside it, resolved physically (paths.ts): otherwise a render
 * could read the renderer's files or another repository's checkout through one.
 */
async function refuseEscapingSymlinks(dir: string, shown: string, sha: string): Promise<void> {
  const bad = await findEscapingSymlink(await realpath(dir));
  if (!bad) return;
  if (bad.why === 'complex') {
    throw new CommitRefused(
      'TooLarge',
      `repository '${shown}' at ${sha} has dangling symlinks that take more than the renderer's ${SYMLINK_CHECK_STEPS} steps to check (at ${bad.link})`,
    );
  }
  if (bad.why === 'loop') {
    throw new CommitRefused(
      'InvalidSource',
      `repository '${shown}' at ${sha} has a symlink loop: ${bad.link} -> ${bad.target}`,
    );
  }
  // Argo CD's repo-server's words (its CheckOutOfBoundsSymlinks), which name the file only.
  throw new CommitRefused('InvalidSource', `repository contains out-of-bounds symlinks. file: ${bad.link}`);
}
