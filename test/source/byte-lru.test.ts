// The one map-by-bytes of the renderer's caches (source/byte-lru.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ByteLru } from '../../src/source/byte-lru.ts';

test('kept by bytes: the least recently used go until a new value fits; a read makes a value recent', () => {
  const lru = new ByteLru<string>(10);
  lru.set('a', 'A', 4);
  lru.set('b', 'B', 4);
  assert.equal(lru.get('a'), 'A');
  lru.set('c', 'C', 4); // 12 > 10: b, the least recently used, goes
  assert.deepEqual(
    ['a', 'b', 'c'].map((k) => lru.get(k)),
    ['A', undefined, 'C'],
  );
  assert.equal(lru.bytes, 8);
  lru.set('a', 'A2', 6); // replacing counts the new size only
  assert.equal(lru.bytes, 10);
  assert.equal(lru.size, 2);
});

test('a value larger than an entry may be is not kept, and pushes nothing out', () => {
  const lru = new ByteLru<string>(100, 25);
  lru.set('small', 's', 20);
  lru.set('big', 'b', 26);
  assert.equal(lru.get('big'), undefined);
  assert.equal(lru.get('small'), 's');
  lru.set('small', 'grown', 30); // too large now: the old value goes too, nothing stale is kept
  assert.equal(lru.get('small'), undefined);
  assert.equal(lru.bytes, 0);
});
