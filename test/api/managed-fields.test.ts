// The FieldsV1 reader (src/api/managed-fields.ts): list elements found by their keys as the server
// names them, each list indexed once, so a tenant's long keyed list costs its length, not its square.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ElementFinder, ownedValues } from '../../src/api/managed-fields.ts';
import type { KubeObject } from '../../src/api/index.ts';

test('a step names the first element with its key, its value or its index', () => {
  const find = new ElementFinder();
  const ports = [
    { containerPort: 80, protocol: 'TCP', name: 'http' },
    { containerPort: 80, protocol: 'UDP' },
    { containerPort: 80, protocol: 'UDP', name: 'again' },
    { protocol: 'TCP' },
  ];
  assert.equal(find.find(ports, 'k:{"containerPort":80,"protocol":"UDP"}'), 1, 'the first of two');
  assert.equal(find.find(ports, 'k:{"protocol":"TCP","containerPort":80}'), 0, 'the key fields in any order');
  assert.equal(find.find(ports, 'k:{"containerPort":443,"protocol":"TCP"}'), -1);
  assert.equal(find.find(ports, 'k:{"name":"http"}'), 0, 'another kind of key on the same list');
  assert.equal(find.find(ports, 'k:{"containerPort":null,"protocol":"TCP"}'), -1, 'a missing key field is no match');
  assert.equal(find.find(['a', 'b', { c: 1 }], 'v:"b"'), 1);
  assert.equal(find.find(['a', 'b', { c: 1 }], 'v:{"c":1}'), 2);
  assert.equal(find.find(['a', 'b'], 'i:1'), 1);
  assert.equal(find.find(['a', 'b'], 'i:2'), -1);
  assert.equal(find.find(['a'], 'k:not json'), -1);
});

test('the values a set names in a long keyed list read each element a few times, not once per step', () => {
  const n = 5000;
  let reads = 0;
  const env = new Proxy(
    Array.from({ length: n }, (_, i) => ({ name: `v${i}`, value: `x${i}` })),
    {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    },
  );
  const steps: Record<string, unknown> = {};
  for (let i = n - 1; i >= 0; i--) steps[`k:{"name":"v${i}"}`] = { '.': {}, 'f:value': {} };
  const obj = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { env } } as unknown as KubeObject;
  const values = ownedValues(obj, { 'f:spec': { 'f:env': steps } });
  assert.equal(values.length, n);
  assert.deepEqual(values[0], [['spec', 'env', n - 1, 'value'], `x${n - 1}`]);
  // Scanning per step would read about n²/2 = 12,500,000 elements.
  assert.ok(reads <= 3 * n, `${reads} element reads for ${n} elements`);
});
