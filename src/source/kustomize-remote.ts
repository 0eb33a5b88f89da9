// Remote references in kustomizations, read the way kustomize v5 reads them, and the project's
// word on each. kustomize fetches two kinds: git repositories (`github.com/org/repo//path?ref=v1`,
// `https://host/org/repo.git//path`, `git@host:org/repo`, `file:///srv/repo`), which it clones
// with git, and http(s) files, which it downloads itself. Both are allowed only when the
// AppProject's sourceRepos allows their repository URL (Argo CD's matcher, permitted.ts), and
// only over the network: file:// and every other scheme is refused.
import { redactURL } from './errors.ts';
import { sourceRepoRefusal } from './permitted.ts';
import { classifyRepoURL } from './repo-url.ts';

export interface RemoteRepo {
  /** What kustomize gives `git fetch`: scheme, user and host, then the repository path. */
  cloneURL: string;
  /** ?ref= (or ?version=). */
  ref: string | undefined;
  /** ?submodules= (kustomize's default is true). */
  submodules: boolean;
}

/**
 * The git repository kustomize would clone for `value`, or undefined when kustomize would not read
 * it as one (kustomize's NewRepoSpecFromURL: an optional git:: prefix, an ssh/https/http/file
 * scheme or scp-like user@host:, github.com shorthands, then `_git/`, `//` or `.git` to end the
 * repository path, else its first two segments).
 */
export function parseRemoteRepo(value: string): RemoteRepo | undefined {
  if (value.startsWith('/')) return undefined;
  const [spec = '', query = ''] = splitOnce(value, '?');
  const params = new URLSearchParams(query);
  const ref = params.get('ref') || params.get('version') || undefined;
  const submodules = !/^(0|f|false)$/i.test(params.get('submodules') ?? '');

  let n = spec.replace(/^git::/i, '');
  const scheme = ['ssh://', 'https://', 'http://', 'file://'].find((s) => n.toLowerCase().startsWith(s)) ?? '';
  n = n.slice(scheme.length);
  const user = /^([a-zA-Z][a-zA-Z0-9-]*)@/.exec(n)?.[0] ?? '';
  n = n.slice(user.length);
  const github = /^github\.com[/:]/i.test(n);
  const scp = scheme === '' && (user !== '' || github);
  if (scheme === '' && !scp) return undefined;
  if (scheme === 'file://') return { cloneURL: `file://${user}${n}`, ref, submodules };

  let sep = n.indexOf('/');
  if (scp) {
    const colon = n.indexOf(':');
    if (sep === -1 || (colon > 0 && colon < sep)) sep = colon;
  }
  let host = sep >= 0 ? n.slice(0, sep + 1) : n;
  const rest = sep >= 0 ? n.slice(sep + 1) : '';
  let prefix = scheme + user;
  if (github) {
    const ssh = scheme === 'ssh://' || user !== '';
    prefix = ssh ? user : 'https://';
    host = ssh ? 'github.com:' : 'github.com/';
  }
  if (host === '') return undefined;
  const repoPath = repositoryPath(rest);
  if (repoPath === undefined) return undefined;
  return { cloneURL: prefix + host + repoPath, ref, submodules };
}

function repositoryPath(rest: string): string | undefined {
  let repo: string;
  let sub: string;
  const gitRoot = rest.indexOf('_git/');
  if (gitRoot >= 0) {
    const after = rest.slice(gitRoot + '_git/'.length).split('/');
    repo = rest.slice(0, gitRoot + '_git/'.length) + (after[0] ?? '');
    sub = after.slice(1).join('/');
  } else if (rest.includes('//')) {
    [repo = '', sub = ''] = splitOnce(rest, '//');
  } else if (rest.includes('.git')) {
    const end = rest.indexOf('.git') + '.git'.length;
    [repo, sub] = [rest.slice(0, end), rest.slice(end)];
  } else {
    const segments = rest.split('/');
    if (segments.length < 2) return undefined;
    [repo, sub] = [segments.slice(0, 2).join('/'), segments.slice(2).join('/')];
  }
  if (repo === '' || sub.replace(/^\/+/, '').split('/')[0] === '..') return undefined;
  return repo;
}

/** kustomize downloads an entry itself when it is an http(s) URL (fileloader's IsRemoteFile). */
export function isRemoteFile(value: string): boolean {
  return /^https?:\/\//i.test(value);
}

/** Anything written as `scheme://...`: kustomize never reads such a value as a path of the repository. */
export function hasScheme(value: string): boolean {
  return /^(git::)?[a-z][a-z0-9+.-]*:\/\//i.test(value);
}

/**
 * Why the project does not allow kustomize to fetch `url` (a clone URL or an http(s) file), or
 * undefined when it does. `sourceRepos` absent means no remote reference is allowed.
 */
export function remoteRefusal(url: string, sourceRepos: readonly string[] | undefined): string | undefined {
  return notNetwork(url, url) ?? sourceRepoRefusal(url, sourceRepos);
}

/** The same for a helmCharts repository: an oci:// one is pulled over https, and judged as the OCI repository it is. */
export function chartRepositoryRefusal(url: string, sourceRepos: readonly string[] | undefined): string | undefined {
  if (!/^oci:\/\//i.test(url)) return remoteRefusal(url, sourceRepos);
  return notNetwork(url.replace(/^oci:/i, 'https:'), url) ?? sourceRepoRefusal(url, sourceRepos);
}

function notNetwork(url: string, shown: string): string | undefined {
  if (classifyRepoURL(url).kind === 'network' && !/^git:\/\//i.test(url)) return undefined;
  return `'${redactURL(shown)}' is not a network repository (https, http or ssh)`;
}

/** The repository URL an http(s) file is judged by: the repository kustomize would see in it, else the URL itself. */
export function repositoryOfFile(url: string): string {
  return parseRemoteRepo(url)?.cloneURL ?? splitOnce(url, '?')[0] ?? url;
}

function splitOnce(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + sep.length)];
}
