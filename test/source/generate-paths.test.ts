// argocd.argoproj.io/manifest-generate-paths, the pure part: Argo CD's GetSourceRefreshPaths and
// AppFilesHaveChanged cases (util/app/path/path_test.go's, in substance).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appFilesHaveChanged, goMatch, refreshPaths } from '../../src/source/generate-paths.ts';

test('refreshPaths: relative to the source path, absolute from the root, `;`-separated and trimmed', () => {
  assert.deepEqual(refreshPaths('.', 'apps/guestbook'), ['apps/guestbook']);
  assert.deepEqual(refreshPaths('.; /shared ;../common;;', 'apps/guestbook'), [
    'apps/guestbook',
    'shared',
    'apps/common',
  ]);
  assert.deepEqual(refreshPaths('/', 'apps/guestbook'), ['']);
  assert.deepEqual(refreshPaths('values/*.yaml', 'app'), ['app/values/*.yaml']);
  assert.deepEqual(refreshPaths('', 'app'), []);
  assert.deepEqual(refreshPaths(undefined, 'app'), []);
});

test('appFilesHaveChanged: a file equal to, under, or matching a path; none: false; an empty list: true', () => {
  assert.equal(appFilesHaveChanged(['app'], ['app/cm.yaml']), true);
  assert.equal(appFilesHaveChanged(['app'], ['app']), true);
  assert.equal(appFilesHaveChanged(['app'], ['application/cm.yaml']), false, 'a path boundary, not a prefix');
  assert.equal(appFilesHaveChanged(['app'], ['other/cm.yaml', 'README.md']), false);
  assert.equal(appFilesHaveChanged(['app', 'shared'], ['shared/base.yaml']), true);
  assert.equal(appFilesHaveChanged(['app/*.yaml'], ['app/cm.yaml']), true);
  assert.equal(appFilesHaveChanged(['app/*.yaml'], ['app/sub/cm.yaml']), false);
  assert.equal(appFilesHaveChanged([''], ['anything/at/all']), true, 'the root covers everything');
  assert.equal(appFilesHaveChanged(['app'], []), true);
  assert.equal(appFilesHaveChanged([], ['x']), true);
});

test("goMatch: Go's filepath.Match", () => {
  assert.equal(goMatch('/a/*.yaml', '/a/b.yaml'), true);
  assert.equal(goMatch('/a/?.yaml', '/a/b.yaml'), true);
  assert.equal(goMatch('/a/[bc].yaml', '/a/c.yaml'), true);
  assert.equal(goMatch('/a/[^b].yaml', '/a/b.yaml'), false);
  assert.equal(goMatch('/a/*', '/a/b/c'), false);
  assert.equal(goMatch('/a/[', '/a/['), false, 'a bad pattern matches nothing');
});
