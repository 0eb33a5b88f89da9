// The project's word on a repository that tenant content names (a chart dependency, a kustomize
// remote or helmCharts repository): Argo CD's sourceRepos matcher, an OCI repository matched in
// each of the three ways it is written, and a `!` entry that denies any of them denying it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fetchDecision } from '../../src/project/fetch-repos.ts';

const permitted = (sourceRepos: string[], url: string) => fetchDecision(sourceRepos, url).permitted;

test('an https or ssh URL is judged as Argo CD judges it, nothing more', () => {
  assert.equal(permitted(['https://charts.example.com/*'], 'https://charts.example.com/stable'), true);
  assert.equal(permitted(['https://charts.example.com/*'], 'http://charts.example.com/stable'), false);
  assert.equal(permitted(['https://charts.example.com/*'], 'https://charts.example.com.evil.net/x'), false);
  assert.equal(permitted(['*', '!https://10.0.0.1/*'], 'https://10.0.0.1/charts'), false);
  assert.equal(permitted([], 'https://charts.example.com/stable'), false);
  assert.deepEqual(fetchDecision([], 'https://x/y'), { permitted: false, because: 'sourceRepos is empty' });
});

test('an OCI repository is permitted by oci://, by host/path (Argo CD) or by https://', () => {
  for (const url of ['oci://registry.example.com/charts', 'registry.example.com/charts']) {
    for (const entry of ['oci://registry.example.com/*', 'registry.example.com/*', 'https://registry.example.com/*'])
      assert.equal(permitted([entry], url), true, `${entry} permits ${url}`);
    assert.equal(permitted(['oci://other.example.com/*'], url), false);
  }
});

test('a `!` entry that denies any form of an OCI repository denies it, whatever allowed another form', () => {
  for (const deny of ['!oci://registry.example.com/*', '!registry.example.com/*', '!https://registry.example.com/*']) {
    assert.deepEqual(fetchDecision(['*', 'oci://registry.example.com/*', deny], 'oci://registry.example.com/charts'), {
      permitted: false,
      because: `denied by sourceRepos entry '${deny}'`,
    });
  }
  // Argo CD's `!*` is not the bare `*`: it matches only what has no `/`.
  assert.equal(permitted(['*', '!*'], 'oci://registry.example.com/charts'), true);
});
