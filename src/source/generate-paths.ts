// The argocd.argoproj.io/manifest-generate-paths annotation (pure): which paths of a repository an
// Application's manifests depend on, and whether a list of changed files touches them, as Argo CD
// v3.6.1 reads them (util/app/path GetSourceRefreshPaths, AppFilesHaveChanged). When a new commit
// changes none of them, Argo CD's repo-server moves the previous commit's cached manifests to the
// new one (UpdateRevisionForPaths) instead of generating them again.
import path from 'node:path/posix';

/**
 * The annotation's `;`-separated paths, each trimmed: an absolute one from the repository root
 * (its leading `/` dropped), any other relative to the source path, cleaned. Empty: no path given.
 */
export function refreshPaths(annotation: string | undefined, sourcePath: string | undefined): string[] {
  const out: string[] = [];
  for (const raw of (annotation ?? '').split(';')) {
    const item = raw.trim();
    if (item === '') continue;
    if (item.startsWith('/')) out.push(item.slice(1));
    else out.push(goClean(path.join(sourcePath ?? '', item)));
  }
  return out;
}

/** Go's filepath.Clean: `.` for an empty path, no trailing slash, `..` resolved lexically. */
function goClean(p: string): string {
  const cleaned = path.normalize(p === '' ? '.' : p);
  return cleaned.length > 1 && cleaned.endsWith('/') ? cleaned.slice(0, -1) : cleaned;
}

/**
 * Argo CD's AppFilesHaveChanged: true when a changed file is one of the paths, under one of them,
 * or matches one as a glob (Go's filepath.Match); true as well when either list is empty.
 */
export function appFilesHaveChanged(paths: readonly string[], changedFiles: readonly string[]): boolean {
  if (changedFiles.length === 0 || paths.length === 0) return true;
  for (const file of changedFiles) {
    const f = absolute(file);
    for (const item of paths) {
      const p = absolute(item);
      if (f === p || under(p, f) || goMatch(p, f)) return true;
    }
  }
  return false;
}

function absolute(p: string): string {
  return p.startsWith('/') ? p : `/${p}`;
}

/** security.EnforceToCurrentRoot: `file`, cleaned, is inside the folder `root`. */
function under(root: string, file: string): boolean {
  const r = goClean(root);
  const f = goClean(file);
  return r === '/' || f === r || f.startsWith(`${r}/`);
}

/** Go's filepath.Match: `*` and `?` within a path segment, `[...]` classes, `\` escapes; a bad pattern matches nothing. */
export function goMatch(pattern: string, name: string): boolean {
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '\\') {
      i++;
      if (i >= pattern.length) return false;
      re += escape(pattern[i] as string);
    } else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) return false;
      let body = pattern.slice(i + 1, end);
      if (body.startsWith('^')) body = `^${body.slice(1)}`;
      if (body.includes('/')) return false;
      re += `[${body.replace(/\\(.)/g, (_m, ch: string) => escape(ch))}]`;
      i = end;
    } else re += escape(c);
  }
  try {
    return new RegExp(`${re}$`, 'u').test(name);
  } catch {
    return false;
  }
}

function escape(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
