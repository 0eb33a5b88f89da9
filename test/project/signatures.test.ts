// Which signature a source's revision needs (project/signatures.ts), as Argo CD v3.6.1 decides it:
// AppProject.EffectiveSourceIntegrity, then util/sourceintegrity lookupGit / findMatchingGitPolicies.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAppProject } from '../../src/api/appproject.ts';
import { hasSignatureCriteria, signaturePolicy } from '../../src/project/signatures.ts';

const proj = (spec: Record<string, unknown>) =>
  parseAppProject({ apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'p' }, spec });
const policy = (urls: string[], mode: string, keys: string[] = []) => ({
  repos: urls.map((url) => ({ url })),
  gpg: { mode, keys },
});
const integrity = (...policies: unknown[]) => proj({ sourceIntegrity: { git: { policies } } });

describe('signaturePolicy', () => {
  it('signatureKeys: one head policy for every repository, with their keyIDs', () => {
    assert.deepEqual(signaturePolicy(proj({ signatureKeys: [{ keyID: 'ABCDEF0123456789' }] }), 'https://x/r'), {
      kind: 'verify',
      mode: 'head',
      keys: ['ABCDEF0123456789'],
    });
    // An empty keyID is still a key, one that allows no signature.
    assert.deepEqual(signaturePolicy(proj({ signatureKeys: [{ keyID: '' }] }), 'https://x/r'), {
      kind: 'verify',
      mode: 'head',
      keys: [''],
    });
    assert.deepEqual(signaturePolicy(proj({}), 'https://x/r'), { kind: 'none' });
  });
  it("sourceIntegrity.git wins over signatureKeys, which judge only where no policy verifies (Argo CD's legacy check)", () => {
    const both = proj({
      signatureKeys: [{ keyID: 'ABCDEF0123456789' }],
      sourceIntegrity: {
        git: { policies: [policy(['https://x/*'], 'head', ['K1']), policy(['https://z/*'], 'none')] },
      },
    });
    assert.deepEqual(signaturePolicy(both, 'https://x/r'), { kind: 'verify', mode: 'head', keys: ['K1'] });
    assert.deepEqual(signaturePolicy(both, 'https://y/r'), { kind: 'legacy', keys: ['ABCDEF0123456789'] });
    assert.deepEqual(signaturePolicy(both, 'https://z/r'), { kind: 'legacy', keys: ['ABCDEF0123456789'] });
    // Off with ARGOCD_GPG_ENABLED=false, and no local-manifests refusal (Argo CD's HasCriteria reads policies only).
    assert.deepEqual(signaturePolicy(both, 'https://y/r', false), { kind: 'none' });
    assert.equal(hasSignatureCriteria(both, [{ repoURL: 'https://y/r' }]), false);
    const noGit = proj({ signatureKeys: [{ keyID: 'ABCDEF0123456789' }], sourceIntegrity: {} });
    assert.deepEqual(signaturePolicy(noGit, 'https://y/r'), {
      kind: 'verify',
      mode: 'head',
      keys: ['ABCDEF0123456789'],
    });
  });
  it("reads Argo CD's YAML: repos are objects {url}", () => {
    assert.throws(
      () => integrity({ repos: ['https://x/*'], gpg: { mode: 'head', keys: [] } }),
      /sourceIntegrity\.git\.policies\[0\]\.repos\[0\]/,
    );
    assert.deepEqual(signaturePolicy(integrity(policy(['https://x/*'], 'head', ['K1'])), 'https://x/r'), {
      kind: 'verify',
      mode: 'head',
      keys: ['K1'],
    });
  });
  it('a policy matches when an include glob matches and no `!` glob does, wherever it stands', () => {
    const p = integrity(policy(['https://x/*', '!https://x/public/*'], 'head', ['K1']));
    assert.deepEqual(signaturePolicy(p, 'https://x/team/r'), { kind: 'verify', mode: 'head', keys: ['K1'] });
    assert.deepEqual(signaturePolicy(p, 'https://x/public/r'), { kind: 'none' });
    const first = integrity(policy(['!https://x/public/*', 'https://x/*'], 'head', ['K1']));
    assert.deepEqual(signaturePolicy(first, 'https://x/public/r'), { kind: 'none' });
    // Exclusions alone include nothing.
    assert.deepEqual(signaturePolicy(integrity(policy(['!https://y/*'], 'head')), 'https://x/r'), { kind: 'none' });
  });
  it("several matching policies are Argo CD's error, not the first one's verdict", () => {
    const p = integrity(policy(['https://x/public/*'], 'none'), policy(['https://x/*'], 'head', ['K1']));
    assert.deepEqual(signaturePolicy(p, 'https://x/public/r'), {
      kind: 'error',
      message: 'multiple (2) git source integrity policies found for repo URL: https://x/public/r',
    });
    assert.deepEqual(signaturePolicy(p, 'https://x/team/r'), { kind: 'verify', mode: 'head', keys: ['K1'] });
    // Even with ARGOCD_GPG_ENABLED=false: Argo CD counts the policies first.
    assert.equal(signaturePolicy(p, 'https://x/public/r', false).kind, 'error');
    assert.deepEqual(signaturePolicy(p, 'https://x/team/r', false), { kind: 'none' });
  });
  it("mode none and a policy without gpg verify nothing; head and strict verify; an unknown mode is Argo CD's error", () => {
    assert.deepEqual(signaturePolicy(integrity(policy(['*'], 'none')), 'https://x/r'), { kind: 'none' });
    assert.deepEqual(signaturePolicy(integrity({ repos: [{ url: '*' }] }), 'https://x/r'), { kind: 'none' });
    assert.deepEqual(signaturePolicy(integrity(policy(['*'], 'Head')), 'https://x/r'), {
      kind: 'error',
      message: 'unknown GPG mode "Head" configured for GIT source integrity',
    });
    assert.deepEqual(signaturePolicy(integrity(policy(['*'], 'strict', ['K'])), 'https://x/r'), {
      kind: 'verify',
      mode: 'strict',
      keys: ['K'],
    });
  });
});

describe('hasSignatureCriteria (local manifests refused)', () => {
  const p = integrity(policy(['https://x/public/*'], 'none'), policy(['https://x/team/*'], 'head', ['K1']));
  it('some Git source has a policy that verifies, or policies in error', () => {
    assert.equal(hasSignatureCriteria(p, [{ repoURL: 'https://y/r' }, { repoURL: 'https://x/team/r' }]), true);
    assert.equal(hasSignatureCriteria(p, [{ repoURL: 'https://x/public/r' }]), false);
  });
  it('Helm and OCI sources are never verified', () => {
    const all = integrity(policy(['*'], 'head', ['K1']));
    assert.equal(hasSignatureCriteria(all, [{ repoURL: 'https://charts/x', chart: 'c' }]), false);
    assert.equal(hasSignatureCriteria(all, [{ repoURL: 'oci://reg/x' }]), false);
    assert.equal(hasSignatureCriteria(all, [{ repoURL: 'https://x/r' }]), true);
  });
});
