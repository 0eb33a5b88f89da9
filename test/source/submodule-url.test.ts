// Submodule URLs as git resolves them (relative to the superproject's URL), and gpg's status lines
// as the signature check reads them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveSubmoduleURL } from '../../src/source/submodule-list.ts';
import { gitModulesEnabled } from '../../src/source/submodules.ts';

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
