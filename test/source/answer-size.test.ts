// measureJSON counts what JSON.stringify would write, without writing it, and stops at its limits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { measureJSON } from '../../src/source/answer-size.ts';

test('the size is the size of the JSON, byte for byte', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const m = measureJSON(v, Number.MAX_SAFE_INTEGER, 1000);
      assert.deepEqual(m, { ok: true, bytes: Buffer.byteLength(JSON.stringify(v)) });
    }),
  );
  const sample = {
    a: [1, -2.5, 1e21, null, true, 'é"\n\u2028'],
    b: { c: undefined, d: 'x'.repeat(300) },
    e: [undefined],
  };
  assert.deepEqual(measureJSON(sample, 1e9, 10), { ok: true, bytes: Buffer.byteLength(JSON.stringify(sample)) });
});

test('a string used many times counts every time; over the limit or too deep it stops', () => {
  const s = 'x'.repeat(1024 * 1024);
  const many = Array.from({ length: 1000 }, () => s);
  assert.deepEqual(measureJSON(many, 64 * 1024 * 1024, 10), { ok: false, why: 'size' });
  let deep: unknown = [];
  for (let i = 0; i < 100; i++) deep = [deep];
  assert.deepEqual(measureJSON(deep, 1e9, 50), { ok: false, why: 'depth' });
  assert.equal(measureJSON(deep, 1e9, 101).ok, true);
});
