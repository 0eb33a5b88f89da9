// Which signature a source's revision needs (project/signatures.ts), as Argo CD's AppProject says.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAppProject } from '../../src/api/appproject.ts';
import { hasSignatureCriteria, signaturePolicy } from '../../src/project/signatures.ts';

const proj = (spec: Record<string, unknown>) =>
  parseAppProject({ apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'p' }, spec });

describe('signaturePolicy', () => {
  it("signatureKeys: every repository, Argo CD's legacy messages", () => {
    assert.deepEqual(signaturePolicy(proj({ signatureKeys: [{ keyID: 'ABCDEF0123456789' }] }), 'https://x/r'), {
      kind: 'verify',
      keys: ['ABCDEF0123456789'],
      legacy: true,
    });
    assert.deepEqual(signaturePolicy(proj({}), 'https://x/r'), { kind: 'none' });
  });
  it('sourceIntegrity: the first policy whose repos match decides; none is an exception', () => {
    const p = proj({
      signatureKeys: [{ keyID: 'IGNORED' }],
      sourceIntegrity: {
        git: {
          policies: [
            { repos: ['https://x/public/*'], gpg: { mode: 'none' } },
            { repos: ['https://x/*'], gpg: { mode: 'head', keys: ['K1'] } },
          ],
        },
      },
    });
    assert.deepEqual(signaturePolicy(p, 'https://x/public/r'), { kind: 'none' });
    assert.deepEqual(signaturePolicy(p, 'https://x/team/r'), { kind: 'verify', keys: ['K1'], legacy: false });
    assert.deepEqual(signaturePolicy(p, 'https://y/r'), { kind: 'none' });
    assert.equal(hasSignatureCriteria(p, ['https://y/r', 'https://x/team/r']), true);
    assert.equal(hasSignatureCriteria(p, ['https://x/public/r']), false);
  });
  it('strict is refused, not checked less than asked', () => {
    const p = proj({
      sourceIntegrity: { git: { policies: [{ repos: ['*'], gpg: { mode: 'strict', keys: ['K'] } }] } },
    });
    const r = signaturePolicy(p, 'https://x/r');
    assert.equal(r.kind, 'refused');
    assert.match(r.kind === 'refused' ? r.message : '', /mode 'strict' is not supported by impersync/);
  });
});
