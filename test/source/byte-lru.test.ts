// The one map-by-bytes of the renderer's caches (source/byte-lru.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ByteLru, ENTRY_OVERHEAD_BYTES } from '../../src/source/byte-lru.ts';

/** What an entry of `key` and a value of `bytes` is counted as. */
const cost = (key: string, bytes: number): number => bytes + 2 * key.length + ENTRY_OVERHEAD_BYTES;

test('kept by bytes: the least recently used go until a new value fits; a read makes a value recent', () => {
  const lru = new ByteLru<string>(2 * cost('a', 400) + 100);
  lru.set('a', 'A', 400);
  lru.set('b', 'B', 400);
  assert.equal(lru.get('a'), 'A');
  lru.set('c', 'C', 400); // three do not fit: b, the least recently used, goes
  assert.deepEqual(
    ['a', 'b', 'c'].map((k) => lru.get(k)),
    ['A', undefined, 'C'],
  );
  assert.equal(lru.bytes, 2 * cost('a', 400));
  lru.set('a', 'A2', 500); // replacing counts the new size only
  assert.equal(lru.bytes, cost('a', 500) + cost('c', 400));
  assert.equal(lru.size, 2);
});

test('a value larger than an entry may be is not kept, and pushes nothing out', () => {
  const lru = new ByteLru<string>(4000, cost('small', 1000));
  lru.set('small', 's', 500);
  lru.set('big', 'b', 1010);
  assert.equal(lru.get('big'), undefined);
  assert.equal(lru.get('small'), 's');
  lru.set('small', 'grown', 1001); // too large now: the old value goes too, nothing stale is kept
  assert.equal(lru.get('small'), undefined);
  assert.equal(lru.bytes, 0);
});

test('values counted as nothing under long keys a tenant picks still count their keys: the bound holds', () => {
  const limit = 64 * 1024;
  const lru = new ByteLru<string[]>(limit);
  for (let i = 0; i < 100_000; i++) lru.set(`https://evil.example/${'r'.repeat(180)}/${i}`, [], 0);
  assert.ok(lru.bytes <= limit, `${lru.bytes} bytes counted, of ${limit}`);
  assert.ok(lru.size < 200, `${lru.size} empty listings kept`);
  const none = new ByteLru<string[]>(0);
  none.set('k', [], 0);
  assert.equal(none.size, 0, 'a cache of 0 bytes keeps nothing');
});

test('fits says whether set would keep a value: its key and record counted', () => {
  const lru = new ByteLru<string>(1000);
  const most = 1000 - cost('key', 0);
  assert.equal(lru.fits('key', most), true);
  assert.equal(lru.fits('key', most + 1), false);
  lru.set('key', 'v', most + 1);
  assert.equal(lru.size, 0);
  lru.set('key', 'v', most);
  assert.equal(lru.bytes, 1000);
});
