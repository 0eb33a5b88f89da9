// Whether the project lets the renderer fetch from a repository that tenant content names rather
// than an Application's repoURL: a chart dependency's repository, a kustomize remote base or
// helmCharts repository. Argo CD's sourceRepos matcher (repos.ts), with one addition for OCI
// repositories, which are written three ways: `oci://host/path` (Argo CD 3's OCI sources),
// `host/path` (a Helm OCI repoURL; Argo CD judges an OCI dependency so, trimming `oci://`), and the
// `https://host/path` they are fetched over. Any form may permit the URL; a `!` entry that denies
// any form denies it. A URL with neither a scheme nor a user can only be an OCI repository here
// (kustomize's scp-like and shorthand Git URLs arrive as `user@host:` or https://).
import { sourceRepoDecision, type RepoDecision } from './repos.ts';

/** The forms a sourceRepos entry may name `url` by. */
function forms(url: string): string[] {
  const u = url.trim();
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(u)?.[0].toLowerCase();
  const bare = scheme === 'oci://' ? u.slice(scheme.length) : scheme === undefined && !u.includes('@') ? u : undefined;
  return bare === undefined ? [u] : [u, ...[`oci://${bare}`, bare, `https://${bare}`].filter((f) => f !== u)];
}

export function fetchDecision(sourceRepos: readonly string[] | undefined, url: string): RepoDecision {
  const entries = sourceRepos ?? [];
  const candidates = forms(url);
  // A negated entry alone decides only what it matches: `[entry]` is refused exactly when it does.
  const deny = entries.find((e) => e.startsWith('!') && candidates.some((c) => !sourceRepoDecision([e], c).permitted));
  if (deny !== undefined) return { permitted: false, because: `denied by sourceRepos entry '${deny}'` };
  const decisions = candidates.map((c) => sourceRepoDecision(entries, c));
  return decisions.find((d) => d.permitted) ?? (decisions[0] as RepoDecision);
}
