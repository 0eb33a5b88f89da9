// The submodules a commit records, read from the clone without a work tree: its gitlinks (tree
// entries of mode 160000, each the commit the submodule is pinned to) and, for each, the URL its
// `.gitmodules` gives that path, as `git submodule update --init` reads them. `.gitmodules` is
// tenant content: read by git itself from the commit's blob (`git config --blob`, which follows no
// include), its output bounded; a submodule path git would not write (`..`, `.git`) is refused.
import { SourceError } from './errors.ts';
import { tail } from './exec.ts';
import type { GitRunner } from './materialise.ts';

export interface RecordedSubmodule {
  /** Its path in the commit, `/`-separated. */
  path: string;
  /** The commit it is pinned to. */
  sha: string;
  /** The URL `.gitmodules` gives it, as written (relative URLs are resolved by the caller). */
  url: string;
}

export interface SubmoduleListing {
  submodules: RecordedSubmodule[];
  /** Files and bytes of the commit's own tree (what the checkout limits count). */
  files: number;
  bytes: number;
}

const MAX_GITMODULES_OUTPUT = 1024 * 1024;
const MAX_LISTING = 512 * 1024 * 1024;

/** The submodules of `sha` (none when it has no `.gitmodules`, as Argo CD runs no update then). */
export async function listSubmodules(git: GitRunner, sha: string, shown: string): Promise<SubmoduleListing> {
  const where = `commit ${sha} of '${shown}'`;
  const ls = await git(['ls-tree', '-r', '-l', '-z', '--full-tree', sha], {
    label: `listing the files of ${where}`,
    maxStdoutBytes: MAX_LISTING,
  });
  if (ls.code !== 0) throw new SourceError('ToolFailed', `listing the files of ${where} failed: ${tail(ls.stderr)}`);
  const links = new Map<string, string>();
  let files = 0;
  let bytes = 0;
  let hasGitmodules = false;
  for (const entry of ls.stdout.toString('utf8').split('\0')) {
    const m = /^(\d+) (blob|commit|tree) ([0-9a-f]+) +(\d+|-)\t(.*)$/s.exec(entry);
    if (!m) continue;
    const [, , type, object, size, p] = m as unknown as [string, string, string, string, string, string];
    if (type === 'commit') links.set(p, object);
    else if (type === 'blob') {
      files++;
      bytes += Number(size);
      if (p === '.gitmodules') hasGitmodules = true;
    }
  }
  if (links.size === 0 || !hasGitmodules) return { submodules: [], files, bytes };
  const cfg = await git(['config', '--blob', `${sha}:.gitmodules`, '--null', '--list'], {
    label: `reading .gitmodules of ${where}`,
    maxStdoutBytes: MAX_GITMODULES_OUTPUT,
  }).catch((err: unknown) => {
    if (err instanceof SourceError && err.reason === 'TooLarge')
      throw new SourceError('TooLarge', `.gitmodules of ${where} is larger than 1 MiB`);
    throw err;
  });
  if (cfg.code !== 0)
    throw new SourceError('InvalidSource', `.gitmodules of ${where} does not parse: ${tail(cfg.stderr)}`);
  const byName = new Map<string, { path?: string; url?: string }>();
  for (const item of cfg.stdout.toString('utf8').split('\0')) {
    const nl = item.indexOf('\n');
    const key = nl < 0 ? item : item.slice(0, nl);
    const value = nl < 0 ? '' : item.slice(nl + 1);
    const m = /^submodule\.(.+)\.(path|url)$/s.exec(key);
    if (!m) continue;
    const entry = byName.get(m[1] as string) ?? {};
    entry[m[2] as 'path' | 'url'] = value;
    byName.set(m[1] as string, entry);
  }
  const urlOf = new Map<string, string>();
  for (const e of byName.values())
    if (e.path !== undefined && e.url !== undefined) urlOf.set(trimSlashes(e.path), e.url);
  const submodules: RecordedSubmodule[] = [];
  for (const [p, linked] of [...links].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (p.split('/').some((part) => part === '' || part === '.' || part === '..' || part.toLowerCase() === '.git'))
      throw new SourceError('InvalidSource', `${where} has a submodule at '${p}', a path git does not write`);
    const url = urlOf.get(p);
    // git's own message (`git submodule update --init`), which fails Argo CD's checkout too.
    if (url === undefined)
      throw new SourceError('InvalidSource', `${where}: No url found for submodule path '${p}' in .gitmodules`);
    submodules.push({ path: p, sha: linked, url });
  }
  return { submodules, files, bytes };
}

const trimSlashes = (p: string) => p.replace(/^\/+|\/+$/g, '');

/**
 * A submodule URL as git resolves it (`./x`, `../x` against the superproject's remote URL, one
 * path segment off per `../`); any other URL as it is. The result is judged like a source URL.
 */
export function resolveSubmoduleURL(parent: string, url: string): string {
  if (!url.startsWith('./') && !url.startsWith('../')) return url;
  let base = parent.replace(/\/+$/, '');
  // The part of the parent that segments are taken off: after the authority, or after `host:`.
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*/.exec(base);
  const scp = scheme ? undefined : /^[^@/:]+@(\[[^\]/]+\]|[^/:]+):/.exec(base);
  const prefixLength = scheme ? scheme[0].length : scp ? scp[0].length : 0;
  let rest = url;
  for (;;) {
    if (rest.startsWith('./')) rest = rest.slice(2);
    else if (rest.startsWith('../')) {
      rest = rest.slice(3);
      const cut = base.lastIndexOf('/');
      base = cut >= prefixLength ? base.slice(0, cut) : base.slice(0, prefixLength);
    } else break;
  }
  const sep = base.length === prefixLength && scp ? '' : '/';
  return `${base}${sep}${rest}`;
}
