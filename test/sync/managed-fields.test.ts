// The FieldsV1 reader (src/sync/managed-fields.ts) and its three users (ignoreDifferences'
// managedFieldsManagers, RespectIgnoreDifferences, the takeover of what Argo CD applied) against a
// tenant's object: a long keyed list costs its length, not its square, and a crafted managedFields
// stops with an error instead of holding the controller.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import type { IgnoreRule } from '../../src/sync/ignore.ts';
import { normalizeIgnored, respectIgnored } from '../../src/sync/ignore.ts';
import {
  ElementFinder,
  FieldsTooComplexError,
  MAX_DEPTH,
  MAX_READ_COST,
  NameFinder,
  managedFieldsOf,
  ownedValues,
  removeFieldSets,
  withoutFieldsOf,
} from '../../src/sync/managed-fields.ts';
import { afterTakeover } from '../../src/sync/takeover.ts';

const CSA = 'kubectl-client-side-apply';

test('a step names the first element with its key, its value or its index', () => {
  const find = new ElementFinder();
  const ports = [
    { containerPort: 80, protocol: 'TCP', name: 'http' },
    { containerPort: 80, protocol: 'UDP' },
    { containerPort: 80, protocol: 'UDP', name: 'again' },
    { protocol: 'TCP' },
  ];
  assert.equal(find.find(ports, 'k:{"containerPort":80,"protocol":"UDP"}'), 1, 'the first of two');
  assert.equal(find.find(ports, 'k:{"protocol":"TCP","containerPort":80}'), 0, 'key fields in any order');
  assert.equal(find.find(ports, 'k:{"containerPort":443,"protocol":"TCP"}'), -1);
  assert.equal(find.find(ports, 'k:{"name":"http"}'), 0, 'another kind of key on the same list');
  assert.equal(find.find(ports, 'k:{"containerPort":null,"protocol":"TCP"}'), -1, 'a missing key field is no match');
  assert.equal(find.find(['a', 'b', { c: 1 }], 'v:"b"'), 1);
  assert.equal(find.find(['a', 'b', { c: 1 }], 'v:{"c":1}'), 2);
  assert.equal(find.find(['a', 'b'], 'i:1'), 1);
  assert.equal(find.find(['a', 'b'], 'i:2'), -1);
  assert.equal(find.find(['a'], 'k:not json'), -1);
  const names = new NameFinder();
  const list: unknown[] = [{ name: 'a' }, { name: 'b' }, { name: 'a' }];
  assert.equal(names.find(list, 'a'), 0);
  names.replaced(list, 0, list[0], (list[0] = { other: 1 }));
  assert.equal(names.find(list, 'a'), 2, 'the next of that name once the first is replaced');
  list.push({ name: 'c' });
  names.appended(list);
  assert.equal(names.find(list, 'c'), 3);
});

/** A list that counts how often its elements are read. */
function counted<T>(items: T[]): { list: T[]; reads: () => number } {
  let reads = 0;
  const list = new Proxy(items, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  return { list, reads: () => reads };
}

/**
 * A Deployment whose one container has `n` env entries, all applied by kubectl client-side apply
 * (FieldsV1 as the server writes it: each element owned by its key, without `.` when `dot` is false).
 */
function tenantDeployment(n: number, env: unknown[], dot = true): KubeObject {
  const steps: Record<string, unknown> = {};
  for (let i = 0; i < n; i++)
    steps[`k:{"name":"v${i}"}`] = { ...(dot ? { '.': {} } : {}), 'f:name': {}, 'f:value': {} };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'd',
      namespace: 'tenant',
      resourceVersion: '7',
      managedFields: [
        {
          manager: CSA,
          operation: 'Update',
          apiVersion: 'apps/v1',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:spec': {
              'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:env': steps } } } },
            },
          },
        },
      ],
    },
    spec: { template: { spec: { containers: [{ name: 'c', env }] } } },
  };
}

const envOf = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `v${i}`, value: `x${i}` }));
const rule = (managers: string[]): IgnoreRule => ({
  group: 'apps',
  kind: 'Deployment',
  jsonPointers: [],
  jqPathExpressions: [],
  managedFieldsManagers: managers,
});

// Scanned step by step, each of these read about n²/2 = 12,500,000 elements (41 s of one event
// loop for 20,000 entries).
const N = 5000;

test("the takeover reads a tenant's 5,000 env entries a few times each, not once per entry", () => {
  const { list, reads } = counted(envOf(N));
  const live = tenantDeployment(N, list);
  // Git keeps the first 10: the other 4,990 are what the apply after the takeover removes.
  const target = structuredClone(tenantDeployment(N, envOf(10)));
  const predicted = structuredClone(tenantDeployment(N, envOf(N)));
  const after = afterTakeover(predicted, target, live, 'impersync', [CSA]);
  const env = (after.spec as { template: { spec: { containers: Array<{ env: unknown[] }> } } }).template.spec
    .containers[0]!.env;
  assert.deepEqual(env, envOf(10));
  assert.ok(reads() <= 10 * N, `${reads()} element reads for ${N} elements`);
});

test("managedFieldsManagers read a tenant's 5,000 env entries a few times each, with or without '.'", () => {
  for (const dot of [true, false]) {
    const { list, reads } = counted(envOf(N));
    const live = tenantDeployment(N, list, dot);
    // The container's fields, not the container: each entry is removed (with '.') or emptied.
    const set = managedFieldsOf(live)[0]!.fieldsV1!;
    removeFieldSets(live, [JSON.parse(JSON.stringify(set).replace('{".":{},"f:env"', '{"f:env"')) as typeof set]);
    const containers = (live.spec as { template: { spec: { containers: unknown[] } } }).template.spec.containers;
    assert.deepEqual(containers, [{ name: 'c', env: dot ? [] : Array.from({ length: N }, () => ({})) }]);
    assert.ok(reads() <= 10 * N, `${reads()} element reads for ${N} elements (dot: ${dot})`);
  }
  const live = tenantDeployment(3, envOf(3));
  assert.deepEqual(withoutFieldsOf([live], live, ['someone else']), [live]);
});

test("RespectIgnoreDifferences copies a tenant's 5,000 live env values a few reads each", async () => {
  const { list, reads } = counted(envOf(N).map((e) => ({ ...e, value: `live-${e.value}` })));
  const live = tenantDeployment(N, list);
  const target = tenantDeployment(N, envOf(N));
  const out = await respectIgnored({ rules: [rule([CSA])], ignoreAggregatedRoles: false }, target, live);
  const env = (out.spec as { template: { spec: { containers: Array<{ env: Array<{ value: string }> }> } } }).template
    .spec.containers[0]!.env;
  assert.equal(env[N - 1]!.value, `live-x${N - 1}`);
  assert.ok(reads() <= 10 * N, `${reads()} element reads for ${N} elements`);
});

test('one element named in a thousand ways (its key spelled differently) is one path', () => {
  const steps: Record<string, unknown> = {};
  for (let i = 0; i < 1000; i++) steps[`k:{"name":"v0"${' '.repeat(i)}}`] = { 'f:value': {} };
  steps['i:0'] = { 'f:name': {} };
  const obj = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { env: envOf(3) } } as KubeObject;
  assert.deepEqual(ownedValues(obj, { 'f:spec': { 'f:env': steps } }), [
    [['spec', 'env', 0, 'value'], 'x0'],
    [['spec', 'env', 0, 'name'], 'v0'],
  ]);
});

test('managedFields naming one list by thousands of kinds of key stop with an error at the ninth', async () => {
  // Each kind of key (a set of key field names) costs an index of the whole list, and its keys' text:
  // 5,000 kinds of a list of 5,000 would read 25,000,000 elements.
  const items = Array.from({ length: N }, (_, i) => ({ [`a${i}`]: 1, name: `v${i}` }));
  const { list, reads } = counted(items);
  const steps: Record<string, unknown> = {};
  for (let i = 0; i < N; i++) steps[`k:{"a${i}":1}`] = { 'f:name': {} };
  const live = {
    apiVersion: 'v1',
    kind: 'X',
    metadata: { name: 'x', managedFields: [{ manager: CSA, fieldsV1: { 'f:spec': { 'f:env': steps } } }] },
    spec: { env: list },
  } as unknown as KubeObject;
  assert.throws(() => ownedValues(live, { 'f:spec': { 'f:env': steps } }), FieldsTooComplexError);
  assert.ok(reads() <= 9 * N, `${reads()} element reads`);
  const plain = { ...live, spec: { env: items } } as KubeObject;
  await assert.rejects(
    normalizeIgnored({ rules: [{ ...rule([CSA]), group: '', kind: 'X' }], ignoreAggregatedRoles: false }, plain, plain),
    /its managedFields name one list by more than 8 kinds of key/,
  );
  // One element whose key is a 600 kB field, named by eight kinds of key: each index holds the key's
  // text, and the cost counts it (a 1.5 MB object's keys fit eight times within the bound).
  const big = {
    name: 'c',
    args: Array.from({ length: 10_000 }, (_, i) => `--flag-${i}=${'x'.repeat(50)}`),
    tty: false,
  };
  const kinds: Record<string, unknown> = {};
  for (const extra of ['name', 'tty', 'image', 'stdin', 'workingDir', 'command', 'env', 'args'])
    kinds[`k:{"args":0${extra === 'args' ? '' : `,"${extra}":0`}}`] = { 'f:tty': {} };
  const heavy = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { c: [big] } } as KubeObject;
  const finder = new ElementFinder();
  assert.deepEqual(ownedValues(heavy, { 'f:spec': { 'f:c': kinds } }, { finder }), [], 'no element has those keys');
  const keyText = JSON.stringify(big.args).length;
  assert.ok(finder.cost.count >= (2 * keyText) / 20, `cost ${finder.cost.count} for 8 keys of ${keyText} characters`);
});

test('thousands of managedFields entries each owning one entry of a long list stop at the bound', () => {
  // Each entry removes its element, and the next one indexes the changed list again.
  const n = 3000;
  const { list, reads } = counted(envOf(n));
  const sets = Array.from({ length: n }, (_, i) => ({
    'f:spec': { 'f:env': { [`k:{"name":"v${i}"}`]: { '.': {} } } },
  }));
  const obj = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { env: list } } as KubeObject;
  assert.throws(() => removeFieldSets(obj, sets), FieldsTooComplexError);
  assert.ok(reads() <= MAX_READ_COST + 3 * n, `${reads()} element reads, not about ${(n * n) / 2}`);
  // A real object's few entries are well within it.
  const few = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { env: envOf(n) } } as KubeObject;
  removeFieldSets(few, sets.slice(0, 10));
  assert.equal((few.spec as { env: unknown[] }).env.length, n - 10);
});

test('managedFields deeper than the walk goes stop with an error, not a stack overflow', () => {
  let value: unknown = { leaf: 1 };
  let set: Record<string, unknown> = { 'f:leaf': {} };
  for (let d = 0; d < MAX_DEPTH + 5; d++) {
    value = { a: value };
    set = { 'f:a': set };
  }
  const obj = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: value } as KubeObject;
  assert.throws(() => ownedValues(obj, { 'f:spec': set }), /go deeper than 200 levels/);
  assert.throws(() => removeFieldSets(obj, [{ 'f:spec': set }]), /go deeper than 200 levels/);
});

test('the takeover follows list elements without a name by their key (ports) and value (finalizers)', () => {
  const ports = (list: number[]) => list.map((p) => ({ containerPort: p, protocol: 'TCP' }));
  const mk = (list: number[], finalizers: string[]): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'd',
      resourceVersion: '1',
      finalizers,
      managedFields: [
        {
          manager: CSA,
          operation: 'Update',
          fieldsV1: {
            'f:metadata': { 'f:finalizers': Object.fromEntries(finalizers.map((f) => [`v:${JSON.stringify(f)}`, {}])) },
            'f:spec': {
              'f:ports': Object.fromEntries(
                list.map((p) => [`k:{"containerPort":${p},"protocol":"TCP"}`, { '.': {}, 'f:containerPort': {} }]),
              ),
            },
          },
        },
      ],
    },
    spec: { ports: ports(list) },
  });
  const live = mk([80, 443, 8080], ['a.example/x', 'b.example/y']);
  // Git drops port 443 and finalizer a: followed by index, the second port would be Git's 8080
  // (443 kept, and {} left of it once its fields went) and the first finalizer Git's b.
  const after = afterTakeover(structuredClone(live), mk([80, 8080], ['b.example/y']), live, 'impersync', [CSA]);
  assert.deepEqual((after.spec as { ports: unknown }).ports, ports([80, 8080]));
  assert.deepEqual(after.metadata.finalizers, ['b.example/y']);
  // Git reorders them: nothing is dropped.
  const reordered = afterTakeover(
    structuredClone(live),
    mk([8080, 443, 80], ['b.example/y', 'a.example/x']),
    live,
    'impersync',
    [CSA],
  );
  assert.deepEqual((reordered.spec as { ports: unknown }).ports, ports([80, 443, 8080]));
  assert.deepEqual(reordered.metadata.finalizers, ['a.example/x', 'b.example/y']);
});

test('the takeover removes entries 9 and 10 themselves, not 9 and the one after it', () => {
  const live = tenantDeployment(12, envOf(12));
  const keep = envOf(12).filter((_, i) => i !== 9 && i !== 10);
  const target = tenantDeployment(12, keep);
  const after = afterTakeover(structuredClone(live), target, live, 'impersync', [CSA]);
  const env = (after.spec as { template: { spec: { containers: Array<{ env: unknown[] }> } } }).template.spec
    .containers[0]!.env;
  assert.deepEqual(env, keep);
});

test("every step of a set read is charged, a map's fields as well as a list's elements: 20,000 fields owned cost 20,000", () => {
  const spec: Record<string, unknown> = {};
  const steps: Record<string, unknown> = {};
  for (let i = 0; i < 20_000; i++) {
    spec[`k${i}`] = i;
    steps[`f:k${i}`] = {};
  }
  const set = { 'f:spec': steps };
  const cost = { count: 0 };
  removeFieldSets({ spec: { ...spec } }, [set], cost);
  assert.ok(cost.count >= 20_000, `${cost.count} units`);
  // Under a lower bound (the watch's), the same walk stops.
  assert.throws(
    () => removeFieldSets({ spec: { ...spec } }, [set], { count: 0, limit: 10_000 }),
    FieldsTooComplexError,
  );
});
