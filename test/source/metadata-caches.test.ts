// One total for what the renderer keeps in memory of repositories (src/source/metadata-caches.ts):
// shared out so that the parts never add up to more than the total the memory budget sets aside,
// and by default the sizes each cache has on its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_METADATA_CACHE_BYTES, metadataCacheSizes } from '../../src/source/metadata-caches.ts';
import { DEFAULT_INDEX_CACHE_BYTES } from '../../src/source/helm-repo.ts';
import { DEFAULT_TAG_CACHE_BYTES } from '../../src/source/oci.ts';
import { DEFAULT_REFS_CACHE_BYTES, DEFAULT_REFUSED_CACHE_BYTES } from '../../src/source/git.ts';

const MiB = 1024 * 1024;
const sum = (s: ReturnType<typeof metadataCacheSizes>): number =>
  s.helmIndexBytes + s.refsBytes + s.tagsBytes + s.listingBytes + s.refusedBytes;

test('the default total gives each cache its own default size, the listings a MiB less for the refusals', () => {
  const s = metadataCacheSizes(DEFAULT_METADATA_CACHE_BYTES);
  assert.equal(s.helmIndexBytes, DEFAULT_INDEX_CACHE_BYTES);
  assert.equal(s.refsBytes, DEFAULT_REFS_CACHE_BYTES);
  assert.equal(s.tagsBytes, DEFAULT_TAG_CACHE_BYTES);
  assert.equal(s.refusedBytes, DEFAULT_REFUSED_CACHE_BYTES);
  assert.equal(s.listingBytes, 31 * MiB);
  assert.equal(sum(s), DEFAULT_METADATA_CACHE_BYTES);
});

test('any total is shared out in whole bytes that add up to it', () => {
  for (const total of [0, 1, 8, 9, 10, 1000, 9 * 2048, 100 * MiB + 7, 2 ** 40 + 3]) {
    const s = metadataCacheSizes(total);
    assert.equal(sum(s), total, `the parts of ${total}`);
    for (const [name, bytes] of Object.entries(s))
      assert.ok(Number.isInteger(bytes) && bytes >= 0, `${name} of ${total}`);
  }
  assert.deepEqual(metadataCacheSizes(-5), metadataCacheSizes(0));
  assert.equal(metadataCacheSizes(9 * 2048).listingBytes, 2048 - 64);
});
