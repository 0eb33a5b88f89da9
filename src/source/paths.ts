// Paths inside a checkout, resolved the way the kernel resolves them: physically, each symlink
// followed where it stands and each `..` taken from the directory actually reached. A lexical check
// (path.resolve) is fooled by a chain of links that each look in-bounds: `l -> .` then `x -> l/..`
// is `x -> .` lexically, but physically `l/..` is the checkout's parent. Argo CD refuses
// out-of-bounds symlinks for the same family of CVEs; here every link of a checkout is checked when
// it is written, and every path a render reads through is checked again when it is used.
import { lstat, readdir, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';

/** Linux's MAXSYMLINKS: more links than this in one resolution is a loop (ELOOP). */
const MAX_LINKS = 40;

export type Resolution =
  | { kind: 'path'; path: string; exists: boolean }
  /** Too many links: the kernel would answer ELOOP. */
  | { kind: 'loop' }
  /** The budget of steps given ran out before the path was resolved. */
  | { kind: 'budget' };

/**
 * Steps (path components looked at) resolutions may still take, shared by the resolutions of one
 * check, and what they found on the way (the tree does not change during a check).
 */
export interface ResolutionBudget {
  steps: number;
  /** Path → its link target, '' for anything else that exists, null when it does not. */
  seen?: Map<string, string | null>;
}

/** What `p` is, as lstat and readlink tell: its link target, '' for anything else, null when missing. */
async function entry(p: string, budget: ResolutionBudget | undefined): Promise<string | null> {
  const known = budget?.seen?.get(p);
  if (known !== undefined) return known;
  const info = await lstat(p).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
    throw err;
  });
  const found = !info ? null : info.isSymbolicLink() ? await readlink(p) : '';
  budget?.seen?.set(p, found);
  return found;
}

/**
 * Resolves the absolute path `p` physically. Components that exist are followed through their
 * links; from the first one that does not exist (a dangling link, a missing file) the rest is
 * resolved lexically, which is what it would mean if it were created as plain folders.
 */
export async function resolvePhysical(p: string, budget?: ResolutionBudget): Promise<Resolution> {
  if (!path.isAbsolute(p)) throw new Error(`resolvePhysical needs an absolute path, got '${p}'`);
  // A path that exists is resolved by the kernel in one call, however many links it goes through;
  // only a dangling one is walked here, component by component.
  try {
    return { kind: 'path', path: await realpath(p), exists: true };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return { kind: 'loop' };
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
  }
  let pending = p.split('/');
  let current = '/';
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift() as string;
    if (part === '' || part === '.') continue;
    if (budget && --budget.steps < 0) return { kind: 'budget' };
    if (part === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    const target = await entry(next, budget);
    if (target === null) return { kind: 'path', path: path.resolve(next, ...pending), exists: false };
    if (target !== '') {
      if (++links > MAX_LINKS) return { kind: 'loop' };
      if (path.isAbsolute(target)) current = '/';
      pending = [...target.split('/'), ...pending];
      continue;
    }
    current = next;
  }
  return { kind: 'path', path: current, exists: true };
}

/** True when `p` is `root` or below it (both physical, absolute). */
export function isInside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || !(rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel));
}

/**
 * Where `abs` (a path written under `root`, the physical checkout root) really leads: its path
 * relative to `root` (`'.'` for the root itself), or undefined when it leaves `root` or loops.
 */
export async function physicalRelative(root: string, abs: string): Promise<string | undefined> {
  const r = await resolvePhysical(abs);
  if (r.kind !== 'path' || !isInside(root, r.path)) return undefined;
  return path.relative(root, r.path).split(path.sep).join('/') || '.';
}

export interface SymlinkViolation {
  /** The link, relative to the root (`a/b/x`). */
  link: string;
  /** What the link says, as written in the repository. */
  target: string;
  /** `complex`: the dangling links of the folder need more than SYMLINK_CHECK_STEPS steps to follow. */
  why: 'outside' | 'loop' | 'complex';
}

/**
 * Steps the check of one folder's dangling links may take: chains of dangling links, each walked
 * a component at a time, could otherwise keep the check (and the filesystem threads every render
 * shares) busy for hours, past any time limit.
 */
export const SYMLINK_CHECK_STEPS = 1_000_000;

/**
 * The first symlink under the physical folder `root` (dangling ones included) that leads outside
 * it, or undefined. Folders are walked as they are, never through a link, so every link is seen
 * exactly once where it stands.
 */
export async function findEscapingSymlink(root: string): Promise<SymlinkViolation | undefined> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const links = entries
    .filter((e) => e.isSymbolicLink())
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
  const budget: ResolutionBudget = { steps: SYMLINK_CHECK_STEPS, seen: new Map() };
  for (const link of links) {
    const r = await resolvePhysical(link, budget);
    if (r.kind === 'path' && isInside(root, r.path)) continue;
    return {
      link: path.relative(root, link).split(path.sep).join('/'),
      target: await readlink(link),
      why: r.kind === 'loop' ? 'loop' : r.kind === 'budget' ? 'complex' : 'outside',
    };
  }
  return undefined;
}
