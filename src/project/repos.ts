// AppProject.spec.sourceRepos (spec §9), with Argo CD's meaning (AppProject.IsSourcePermitted):
// URLs are compared after normalisation, patterns are globs, `*` allows everything, and a pattern
// starting with `!` denies what it matches.
//
// Argo CD's loop, kept exactly: for each entry, a positive pattern that matches allows; a `!pattern`
// that does NOT match the URL also counts as allowing (so `['!https://evil/*']` alone allows every
// other repository); a `!pattern` that matches the URL denies at once, whatever came before.
import { globMatch } from '../impersonation/glob.ts';
import { resolveDotSegments } from '../repository/url.ts';

/**
 * Argo CD's git.NormalizeGitURL, for comparison only: trimmed, lower-cased, without a `.git`
 * suffix, scp-like `git@host:org/repo` written as `git@host/org/repo`, and no `ssh://` prefix.
 */
export function normalizeGitURL(url: string): string {
  let repo = url.trim().toLowerCase();
  if (/^(ssh:\/\/)?([^/:]*?)@[^@]+$/.test(repo) && !repo.startsWith('ssh://')) {
    repo = `ssh://${repo.replace(':', '/')}`;
  }
  if (repo.endsWith('.git')) repo = repo.slice(0, -'.git'.length);
  return repo.startsWith('ssh://') ? repo.slice('ssh://'.length) : repo;
}

/**
 * Argo CD matches sourceRepos with `/` as a glob separator: `*` and `?` stop at `/`, `**` does not.
 * The §2 matcher has no separators, so a pattern is matched segment by segment (same number of
 * `/`-separated segments, each segment a glob): exact for patterns made of text, `*` and `?`.
 * Patterns with `**`, classes, alternatives or escapes (which may span a `/`) are matched whole,
 * where `*` may cross `/`: more permissive than Argo CD only for such patterns.
 */
export function repoPatternMatch(pattern: string, url: string): boolean {
  if (/\*\*|[[{\\]/.test(pattern)) return globMatch(pattern, url);
  const ps = pattern.split('/');
  const us = url.split('/');
  return ps.length === us.length && ps.every((p, i) => globMatch(p, us[i] as string));
}

export interface RepoDecision {
  permitted: boolean;
  /** The entry that decided ("!https://evil/*"), or why nothing did. */
  because: string;
}

export function sourceRepoDecision(sourceRepos: readonly string[] | undefined, repoURL: string): RepoDecision {
  // Judged as what a client would fetch: `https://host/team-a/../evil` is under `https://host/`, not team-a.
  const src = normalizeGitURL(resolveDotSegments(repoURL));
  let allowedBy: string | undefined;
  for (const entry of sourceRepos ?? []) {
    const deny = entry.startsWith('!');
    const pattern = normalizeGitURL(deny ? entry.slice(1) : entry);
    // A bare `*` allows everything (Argo CD's shortcut); it is not taken for `!*`, as in Argo CD.
    const matched = (!deny && pattern === '*') || repoPatternMatch(pattern, src);
    if (deny && matched) return { permitted: false, because: `denied by sourceRepos entry '${entry}'` };
    if (!deny && matched) allowedBy ??= `allowed by sourceRepos entry '${entry}'`;
    if (deny && !matched)
      allowedBy ??= `allowed by sourceRepos entry '${entry}' (a negated entry that does not match allows)`;
  }
  if (allowedBy) return { permitted: true, because: allowedBy };
  return {
    permitted: false,
    because: (sourceRepos ?? []).length === 0 ? 'sourceRepos is empty' : 'no sourceRepos entry matches',
  };
}
