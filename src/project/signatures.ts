// Which signature a source's revision needs, as Argo CD's AppProject decides it (pure): a
// sourceIntegrity policy when the project has one (the first git policy one of whose `repos` globs
// matches the repository URL; `gpg.mode` none: nothing, head: the revision's tag or commit signed by
// one of `gpg.keys`), else the legacy signatureKeys (any of their keyIDs, Argo CD's legacy
// messages). The renderer verifies (source/signatures.ts); `strict` (every ancestor) is refused
// rather than checked less than asked.
import type { AppProject } from '../api/appproject.ts';
import { globMatch } from '../impersonation/glob.ts';

export type SignaturePolicy =
  { kind: 'none' } | { kind: 'verify'; keys: string[]; legacy: boolean } | { kind: 'refused'; message: string };

export function signaturePolicy(project: AppProject, repoURL: string): SignaturePolicy {
  const integrity = project.spec.sourceIntegrity;
  if (integrity) {
    const policy = (integrity.git?.policies ?? []).find((p) => (p.repos ?? []).some((r) => globMatch(r, repoURL)));
    const mode = policy?.gpg?.mode;
    if (!policy?.gpg || mode === 'none') return { kind: 'none' };
    if (mode === 'head') return { kind: 'verify', keys: policy.gpg.keys ?? [], legacy: false };
    return {
      kind: 'refused',
      message: `AppProject ${project.metadata.name}: sourceIntegrity.git.policies[].gpg.mode '${mode ?? ''}' is not supported by impersync (head and none are)`,
    };
  }
  const keys = (project.spec.signatureKeys ?? []).map((k) => k.keyID ?? '').filter((k) => k !== '');
  return keys.length > 0 ? { kind: 'verify', keys, legacy: true } : { kind: 'none' };
}

/** Argo CD's sourceintegrity.HasCriteria: some source's revision must be verified (local manifests are then refused). */
export function hasSignatureCriteria(project: AppProject, repoURLs: readonly string[]): boolean {
  return repoURLs.some((u) => signaturePolicy(project, u).kind !== 'none');
}
