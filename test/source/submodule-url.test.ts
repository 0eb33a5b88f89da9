// Submodule URLs as git resolves them (relative to the superproject's URL), and gpg's status lines
// as the signature check reads them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveSubmoduleURL } from '../../src/source/submodule-list.ts';
import { gitModulesEnabled } from '../../src/source/submodules.ts';
import { keyID, parseStatus } from '../../src/source/signatures.ts';

describe('resolveSubmoduleURL', () => {
  const cases: Array<[string, string, string]> = [
    ['https://git.example.com/org/parent.git', '../lib.git', 'https://git.example.com/org/lib.git'],
    ['https://git.example.com/org/parent', './lib', 'https://git.example.com/org/parent/lib'],
    ['https://git.example.com/org/parent/', '../../other/lib', 'https://git.example.com/other/lib'],
    ['https://git.example.com/parent', '../../../../lib', 'https://git.example.com/lib'],
    ['git@github.com:org/parent.git', '../lib.git', 'git@github.com:org/lib.git'],
    ['git@github.com:parent.git', '../lib.git', 'git@github.com:lib.git'],
    [
      'https://git.example.com/org/parent',
      'https://elsewhere.example.com/x.git',
      'https://elsewhere.example.com/x.git',
    ],
    ['https://git.example.com/org/parent', 'file:///etc', 'file:///etc'],
  ];
  for (const [parent, url, want] of cases) {
    it(`${url} in ${parent} is ${want}`, () => assert.equal(resolveSubmoduleURL(parent, url), want));
  }
});

describe('gitModulesEnabled (Argo CD: env.ParseBoolFromEnv, default true)', () => {
  it('is on unless the variable is a Go false', () => {
    assert.equal(gitModulesEnabled({}), true);
    assert.equal(gitModulesEnabled({ ARGOCD_GIT_MODULES_ENABLED: 'false' }), false);
    assert.equal(gitModulesEnabled({ ARGOCD_GIT_MODULES_ENABLED: '0' }), false);
    assert.equal(gitModulesEnabled({ ARGOCD_GIT_MODULES_ENABLED: 'True' }), true);
    assert.equal(gitModulesEnabled({ ARGOCD_GIT_MODULES_ENABLED: 'nonsense' }), true);
  });
});

describe("gpg's status lines", () => {
  it('reads a good signature with its key and cipher', () => {
    const v = parseStatus(
      '[GNUPG:] NEWSIG\n[GNUPG:] GOODSIG 4AEE18F83AFDEB23 A <a@x>\n[GNUPG:] VALIDSIG 0123456789ABCDEF01234AEE18F83AFDEB23 2026-01-01 1 0 4 0 22 10 00 X\n',
    );
    assert.deepEqual(v, { result: 'good', keyID: '4AEE18F83AFDEB23', cipher: 'EDDSA', identity: 'A <a@x>' });
  });
  it('reads a revoked key, a missing key and no signature', () => {
    assert.equal(parseStatus('[GNUPG:] REVKEYSIG 4AEE18F83AFDEB23 A <a@x>\n').result, 'revoked');
    const missing = parseStatus('[GNUPG:] ERRSIG 4AEE18F83AFDEB23 1 8 00 1 9\n[GNUPG:] NO_PUBKEY 4AEE18F83AFDEB23\n');
    assert.deepEqual([missing.result, missing.cipher], ['unknown', 'RSA']);
    assert.equal(parseStatus('').result, 'unsigned');
  });
  it('compares key IDs as Argo CD does: the last 16 hex digits, upper case', () => {
    assert.equal(keyID('0x0123456789abcdef0123456789ABCDEF4aee18f8'), '89ABCDEF4AEE18F8');
  });
});
