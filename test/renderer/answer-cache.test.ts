// The renderer's answer cache (src/renderer/answer-cache.ts): an answer named by two keys is
// counted once, and the second name is good only while the first holds the answer it named.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AnswerCache } from '../../src/renderer/answer-cache.ts';
import type { EncodedAnswer } from '../../src/renderer/answer.ts';

const answer = (fill: string, bytes: number): EncodedAnswer => ({ body: Buffer.alloc(bytes, fill), objects: 1 });

test('an answer kept under its folder and named by its commit is counted once', () => {
  const cache = new AnswerCache(8192);
  const a = answer('a', 1000);
  cache.set('folder', a);
  cache.alias('commit', 'folder');
  assert.equal(cache.get('commit'), a);
  assert.equal(cache.get('folder'), a);
  assert.ok(cache.bytes < 1000 + 400, `${cache.bytes} bytes counted for one answer of 1000 and a name`);
  cache.alias('nothing', 'missing');
  assert.equal(cache.get('nothing'), undefined, 'a name of nothing is not kept');
});

test('a name is good only while its key holds the answer it named', () => {
  const cache = new AnswerCache(8192);
  const first = answer('a', 1000);
  cache.set('folder', first);
  cache.alias('commit-1', 'folder');
  const second = answer('b', 1000);
  cache.set('folder', second);
  assert.equal(cache.get('commit-1'), undefined, "the folder's answer was replaced (a hard refresh at another commit)");
  cache.alias('commit-2', 'folder');
  assert.equal(cache.get('commit-2'), second);
  // Answers of 1000 bytes each until the folder's is pushed out (least recently used first).
  for (let i = 0; i < 8; i++) cache.set(`other-${i}`, answer('c', 1000));
  assert.equal(cache.get('folder'), undefined);
  assert.equal(cache.get('commit-2'), undefined, 'its answer went: the name keeps nothing in memory');
  assert.ok(cache.bytes <= 8192);
});
