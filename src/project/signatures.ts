// Which signature a source's revision needs, as Argo CD v3.6.1 decides it (pure). The project's
// effective sourceIntegrity (AppProject.EffectiveSourceIntegrity): signatureKeys become one git
// policy for repos `*` in `head` mode with their keyIDs, unless sourceIntegrity.git is set, which
// then wins alone. Then the policies matching the repository URL (util/sourceintegrity
// findMatchingGitPolicies): a policy matches when one of its `repos[].url` globs matches and none
// of its `!` globs does; two or more matching policies are an error for that repository (so that a
// mistake never turns verification off); one decides: no `gpg` or mode `none` verifies nothing,
// `head` verifies the revision's tag or commit against `gpg.keys`, `strict` the tag and every
// ancestor of the commit back to seal commits, another mode is Argo CD's error. Where no policy
// verifies, signatureKeys set beside sourceIntegrity.git still judge a signed commit, with Argo
// CD's legacy messages (its controller's VerifyGnuPGSignature). The renderer verifies
// (source/signatures.ts).
import type { AppProject } from '../api/appproject.ts';
import { globMatch } from '../impersonation/glob.ts';

export type SignaturePolicy =
  | { kind: 'none' }
  | { kind: 'verify'; mode: 'head' | 'strict'; keys: string[] }
  /**
   * signatureKeys beside a sourceIntegrity.git that has no verifying policy for the repository:
   * Argo CD's controller still judges a signed commit's `git verify-commit` against them (its
   * legacy VerifyGnuPGSignature, when the check result is empty); an unsigned commit passes.
   */
  | { kind: 'legacy'; keys: string[] }
  /** Argo CD's own error for this repository, naming its URL as given: the render fails with it. */
  | { kind: 'error'; message: string };

interface GitPolicy {
  repos: string[];
  gpg?: { mode: string; keys: string[] } | undefined;
}

/** The git policies of AppProject.EffectiveSourceIntegrity; undefined: no git criteria at all. */
export function effectiveGitPolicies(project: AppProject): GitPolicy[] | undefined {
  const legacyKeys = (project.spec.signatureKeys ?? []).map((k) => k.keyID ?? '');
  const git = project.spec.sourceIntegrity?.git;
  if (legacyKeys.length === 0 || git) {
    if (!git) return undefined;
    return (git.policies ?? []).map((p) => ({
      repos: (p.repos ?? []).map((r) => r.url ?? ''),
      gpg: p.gpg ? { mode: p.gpg.mode ?? '', keys: p.gpg.keys ?? [] } : undefined,
    }));
  }
  return [{ repos: ['*'], gpg: { mode: 'head', keys: legacyKeys } }];
}

/** findMatchingGitPolicies: an include glob matches and no `!` glob does. */
function matches(policy: GitPolicy, repoURL: string): boolean {
  let include = false;
  for (const url of policy.repos) {
    if (url.startsWith('!')) {
      if (globMatch(url.slice(1), repoURL)) return false;
    } else if (globMatch(url, repoURL)) include = true;
  }
  return include;
}

/**
 * Argo CD's lookupGit for `repoURL`. `gpgEnabled` false (ARGOCD_GPG_ENABLED) verifies nothing, but
 * several matching policies stay an error, as Argo CD counts them first.
 */
export function signaturePolicy(project: AppProject, repoURL: string, gpgEnabled = true): SignaturePolicy {
  const policies = (effectiveGitPolicies(project) ?? []).filter((p) => matches(p, repoURL));
  if (policies.length > 1)
    return {
      kind: 'error',
      message: `multiple (${policies.length}) git source integrity policies found for repo URL: ${repoURL}`,
    };
  const gpg = policies[0]?.gpg;
  if (!gpg || gpg.mode === 'none' || !gpgEnabled) {
    // Reached with signatureKeys only when sourceIntegrity.git is set (else they are the policy for `*`).
    const legacyKeys = (project.spec.signatureKeys ?? []).map((k) => k.keyID ?? '');
    return legacyKeys.length > 0 && gpgEnabled ? { kind: 'legacy', keys: legacyKeys } : { kind: 'none' };
  }
  if (gpg.mode === 'head' || gpg.mode === 'strict') return { kind: 'verify', mode: gpg.mode, keys: gpg.keys };
  return { kind: 'error', message: `unknown GPG mode ${JSON.stringify(gpg.mode)} configured for GIT source integrity` };
}

/** Which sources Argo CD verifies: Git ones (not oci://, no chart), not empty. */
export function isGitSource(source: { repoURL?: string | undefined; chart?: string | undefined }): boolean {
  return !(source.repoURL ?? '').startsWith('oci://') && !source.chart;
}

/**
 * Argo CD's sourceintegrity.HasCriteria: some Git source's revision must be verified, or its
 * policies are in error (local manifests are then refused).
 */
export function hasSignatureCriteria(
  project: AppProject,
  sources: ReadonlyArray<{ repoURL?: string | undefined; chart?: string | undefined }>,
): boolean {
  return sources.some((s) => {
    const kind = isGitSource(s) ? signaturePolicy(project, s.repoURL ?? '').kind : 'none';
    return kind === 'verify' || kind === 'error';
  });
}
