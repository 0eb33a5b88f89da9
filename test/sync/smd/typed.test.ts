// structured-merge-diff's operations as src/sync/smd implements them, on Kubernetes-shaped cases
// (containers by name, ports by containerPort+protocol with protocol's default, env, a finalizer
// set, atomic lists and maps, a custom resource preserving unknown fields). Two kinds of check:
// golden values (each also what the Go library gives: the comparison test below holds them to it),
// and every operation on every case compared with the real Go structured-merge-diff and
// kube-openapi schemaconv (./go, built from the module proxy on first use).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Value } from '../../../src/sync/smd/path.ts';
import { elementKey } from '../../../src/sync/smd/path.ts';
import { schemaFromOpenApiV3 } from '../../../src/sync/smd/schema.ts';
import type { FieldSet } from '../../../src/sync/smd/set.ts';
import { fieldSetFromFieldsV1 } from '../../../src/sync/smd/set.ts';
import { merge, removedFields, removeItems, SmdError, toFieldSet, validate } from '../../../src/sync/smd/typed.ts';
import type { SchemaLookup } from '../../../src/sync/webhook-mutation.ts';
import { removeWebhookMutation } from '../../../src/sync/webhook-mutation.ts';
import type { KubeObject } from '../../../src/api/index.ts';
import { CASES } from './cases.ts';
import type { Case } from './cases.ts';
import { DEPLOYMENT, DOCUMENT, WIDGET } from './fixtures.ts';
import { goReference } from './go-reference.ts';

const schema = schemaFromOpenApiV3(DOCUMENT);
const lookup = (typeName: string): SchemaLookup => ({ schema, type: { named: typeName } });
const keys = (s: FieldSet): string[] => [...s.paths()].map((p) => p.map(elementKey).join(' ')).sort();
const byName = (name: string): Case => {
  const c = CASES.find((x) => x.name.startsWith(name));
  assert.ok(c, name);
  return c;
};
const run = (c: Case) =>
  removeWebhookMutation(
    c.predicted as unknown as KubeObject,
    c.live as unknown as KubeObject,
    lookup(c.typeName),
    c.manager,
  );
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

test('the schema: kinds by GroupVersionKind; list and map types from the extensions, with patch-strategy fallbacks', () => {
  assert.equal(schema.gvks.get('apps/v1, Kind=Deployment'), DEPLOYMENT);
  assert.equal(schema.gvks.get('example.com/v1, Kind=Widget'), WIDGET);
  const s = schemaFromOpenApiV3({
    components: {
      schemas: {
        T: {
          type: 'object',
          properties: {
            byType: { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
            byMergeKey: {
              type: 'array',
              items: { type: 'object', properties: { id: { type: 'string' } } },
              'x-kubernetes-patch-strategy': 'merge',
              'x-kubernetes-patch-merge-key': 'id',
            },
            mergeNoKey: { type: 'array', items: { type: 'string' }, 'x-kubernetes-patch-strategy': 'merge' },
            retain: { type: 'array', items: { type: 'string' }, 'x-kubernetes-patch-strategy': 'retainKeys' },
            plain: { type: 'array', items: { type: 'string' } },
            atomicMap: { type: 'object', additionalProperties: { type: 'string' }, 'x-kubernetes-map-type': 'atomic' },
            free: { type: 'object' },
          },
        },
      },
    },
  });
  const t = s.types.get('T')?.map?.fields;
  const list = (n: string) => t?.get(n)?.type.inlined?.list;
  assert.deepEqual([list('byType')?.relationship, list('byType')?.keys], ['associative', []]);
  assert.deepEqual([list('byMergeKey')?.relationship, list('byMergeKey')?.keys], ['associative', ['id']]);
  assert.deepEqual([list('mergeNoKey')?.relationship, list('mergeNoKey')?.keys], ['associative', []]);
  assert.equal(list('retain')?.relationship, 'atomic');
  assert.equal(list('plain')?.relationship, 'atomic');
  assert.equal(t?.get('atomicMap')?.type.inlined?.map?.relationship, 'atomic');
  assert.deepEqual(t?.get('free')?.type.inlined?.map?.elementType, { named: '__untyped_deduced_' });
});

test('the schema: what schemaconv refuses is refused, naming the definition', () => {
  assert.throws(
    () =>
      schemaFromOpenApiV3({
        components: { schemas: { Bad: { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'bag' } } },
      }),
    /failed to convert models to schema: Bad: unknown list type bag/,
  );
  assert.throws(
    () =>
      schemaFromOpenApiV3({
        components: { schemas: { Odd: { type: 'object', properties: {}, 'x-kubernetes-map-type': 'loose' } } },
      }),
    /Odd: unknown map type loose/,
  );
  // v2 publishes an array without items, and a nullable field, without a type: the deduced type.
  const v2ish = schemaFromOpenApiV3({
    components: {
      schemas: {
        T: {
          type: 'object',
          properties: {
            noItems: { type: 'array' },
            nullableMap: {
              type: 'array',
              nullable: true,
              items: { type: 'object', properties: { k: { type: 'string' } } },
              'x-kubernetes-list-type': 'map',
              'x-kubernetes-list-map-keys': ['k'],
            },
          },
        },
      },
    },
  });
  const f = v2ish.types.get('T')?.map?.fields;
  assert.equal(f?.get('noItems')?.type.inlined?.list?.relationship, 'atomic');
  assert.equal(f?.get('nullableMap')?.type.inlined?.list?.relationship, 'atomic');
  assert.deepEqual(f?.get('nullableMap')?.type.inlined?.map?.elementType, { named: '__untyped_deduced_' });
});

test('a hostile schema: nesting beyond the bound is refused; a $ref cycle costs nothing more than the value', () => {
  let deep: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < 200; i++) deep = { type: 'object', properties: { x: deep } };
  assert.throws(() => schemaFromOpenApiV3({ components: { schemas: { Deep: deep } } }), /nested more than 64 levels/);
  // A type that refers to itself (as JSONSchemaProps does): built once, walked as deep as the value.
  const cyclic = schemaFromOpenApiV3({
    components: {
      schemas: {
        Node: {
          type: 'object',
          properties: { child: { $ref: '#/components/schemas/Node' }, v: { type: 'integer' } },
        },
      },
    },
  });
  const value = { child: { child: { v: 1 } } };
  assert.deepEqual(validate(cyclic, { named: 'Node' }, value), []);
  assert.deepEqual(keys(toFieldSet(cyclic, { named: 'Node' }, value)), ['f:child f:child f:v']);
});

test('FieldsV1: "." marks the path itself, {} a leaf, keys by their fields in name order, unknown prefixes dropped', () => {
  const s = fieldSetFromFieldsV1({
    'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
    'f:spec': {
      'f:ports': { 'k:{"protocol":"TCP","containerPort":80}': { '.': {}, 'f:name': {} } },
      'f:finalizers': { 'v:"a"': {} },
      'f:args': { 'i:0': {} },
    },
    'x:future': {},
  });
  assert.deepEqual(keys(s), [
    'f:metadata f:labels',
    'f:metadata f:labels f:app',
    'f:spec f:args i:0',
    'f:spec f:finalizers v:"a"',
    'f:spec f:ports k:{"containerPort":80,"protocol":"TCP"}',
    'f:spec f:ports k:{"containerPort":80,"protocol":"TCP"} f:name',
  ]);
  assert.throws(() => fieldSetFromFieldsV1({ f: {} }), /key must be 2 characters long/);
});

test('ToFieldSet: leaves, keyed list items (a port keyed by its defaulted protocol), atomic lists and maps whole', () => {
  const c = byName('a port with its protocol');
  const got = keys(toFieldSet(schema, { named: DEPLOYMENT }, c.predicted as Value));
  const web = 'f:spec f:template f:spec f:containers k:{"name":"web"}';
  assert.ok(got.includes(`${web} f:ports k:{"containerPort":80,"protocol":"TCP"}`), 'protocol defaulted into the key');
  assert.ok(got.includes(`${web} f:ports k:{"containerPort":9090,"protocol":"UDP"} f:name`));
  assert.ok(got.includes(`${web} f:args`), 'an atomic list is one path');
  assert.ok(!got.some((k) => k.startsWith(`${web} f:args `)));
  assert.ok(got.includes('f:spec f:selector'), 'an atomic map is one path');
  assert.ok(!got.includes('f:spec f:template f:spec f:containers'), 'an associative list is its items, not itself');
});

test('removeWebhookMutation: what the webhook changed takes its live value; what the config owns keeps the answer', () => {
  const out = run(byName('a webhook that sets')) as Obj;
  assert.equal(out.metadata.annotations['webhook/counter'], '1', 'an annotation the webhook rewrites: live');
  assert.deepEqual(out.metadata.finalizers, ['example.com/a'], 'a set: the webhook’s value gone');
  const web = out.spec.template.spec.containers[0];
  assert.equal(web.image, 'nginx:2', 'the config’s change stays');
  assert.deepEqual(web.env, [
    { name: 'A', value: 'a' },
    { name: 'INJECTED', value: '1' },
  ]);
  assert.deepEqual(out.spec.template.spec.tolerations, [{ key: 'k', operator: 'Exists' }], 'an atomic list: live');
  assert.deepEqual(out.spec.template.spec.nodeSelector, { zone: 'a' }, 'an atomic map: live');
});

test('removeWebhookMutation: a container the webhook adds is not predicted; a field the manifest sets keeps the answer’s value', () => {
  const sidecar = run(byName('a sidecar')) as Obj;
  assert.deepEqual(
    sidecar.spec.template.spec.containers.map((c: Obj) => c.name),
    ['web'],
  );
  // Argo CD keeps a field its manager owns with the value the dry-run gave, a webhook's change included.
  const owned = run(byName('a field the manifest sets')) as Obj;
  assert.equal(owned.metadata.annotations.config, 'webhook-8');
});

test('removeWebhookMutation: a field the apply removes stays removed; one another actor removed comes back from live', () => {
  const out = run(byName('a label the apply removes')) as Obj;
  assert.deepEqual(out.metadata.labels, { app: 'web', other: 'theirs' });
});

test('removeWebhookMutation on a custom resource preserving unknown fields: owned leaves kept, the rest from live', () => {
  const out = run(byName('a custom resource')) as Obj;
  assert.deepEqual(out.spec, { size: 2, extra: { a: 2, b: 'live' }, items: ['x', 'webhook'] });
});

test('a field the removal empties and live lacks: dropped on a built-in kind, as remarshal drops an omitempty null', () => {
  const out = run(byName('annotations only the webhook sets')) as Obj;
  assert.equal('annotations' in out.metadata, false);
  // Under preserve-unknown-fields a field the webhook adds is a path of its own: removed whole.
  const w = byName('a custom resource');
  const live = structuredClone(w.live) as Obj;
  delete live.spec.extra;
  const predicted = structuredClone(w.predicted) as Obj;
  predicted.spec.other = { injected: true };
  const cr = removeWebhookMutation(
    predicted as unknown as KubeObject,
    live as unknown as KubeObject,
    lookup(WIDGET),
    'impersync',
  ) as unknown as Obj;
  assert.deepEqual(cr.spec.extra, { a: 2 });
  assert.equal('other' in cr.spec, false);
});

test('removeWebhookMutation errors are Argo CD’s, naming the object', () => {
  assert.throws(() => run(byName('the manager owns nothing')), {
    message:
      'error removing non config mutations for resource Deployment/web: no managed fields found for manager: argocd-controller',
  });
  assert.throws(() => run(byName('live has two env entries')), {
    message:
      'error removing non config mutations for resource Deployment/web: error converting live state from unstructured to apps/v1, Kind=Deployment: .spec.template.spec.containers[name="web"].env: duplicate entries for key [name="A"]',
  });
  const c = byName('a sidecar');
  const bare = { ...c.predicted, metadata: { name: 'web' } } as unknown as KubeObject;
  assert.throws(() => removeWebhookMutation(bare, c.live as unknown as KubeObject, lookup(DEPLOYMENT), 'impersync'), {
    message:
      'error removing non config mutations for resource Deployment/web: predictedLive for resource Deployment/web must have the managedFields',
  });
  assert.throws(
    () =>
      removeWebhookMutation(
        c.predicted as unknown as KubeObject,
        c.live as unknown as KubeObject,
        { error: 'unable to resolve parseableType for GroupVersionKind: apps/v1, Kind=Deployment' },
        'impersync',
      ),
    /Deployment\/web: unable to resolve parseableType for GroupVersionKind: apps\/v1, Kind=Deployment$/,
  );
});

test('every operation on every case gives what the Go structured-merge-diff gives', () => {
  for (const c of CASES) {
    const go = goReference({ document: DOCUMENT, ...c });
    const tr = { named: c.typeName };
    const live = c.live as Value;
    const predicted = c.predicted as Value;
    const errs = validate(schema, tr, live);
    assert.equal(errs.length ? new SmdError(errs).message : '', go.validate ?? '', `${c.name}: validate`);
    assert.deepEqual(
      keys(toFieldSet(schema, tr, predicted)),
      keys(fieldSetFromFieldsV1(go.fieldSet)),
      `${c.name}: ToFieldSet`,
    );
    if (errs.length) continue; // Go's Compare and Merge start from values that validated
    assert.deepEqual(
      keys(removedFields(schema, tr, live, predicted)),
      keys(fieldSetFromFieldsV1(go.removed)),
      `${c.name}: Compare`,
    );
    assert.deepEqual(merge(schema, tr, live, predicted), go.merged, `${c.name}: Merge`);
    if (c.remove)
      assert.deepEqual(
        removeItems(schema, tr, predicted, fieldSetFromFieldsV1(c.remove)),
        go.removeItems ?? null,
        `${c.name}: RemoveItems`,
      );
    if (go.error)
      assert.throws(
        () => run(c),
        (e: Error) => e.message.endsWith(go.error as string),
        c.name,
      );
    else {
      const expected = structuredClone(go.result) as Obj;
      for (const at of c.remarshalDrops ?? []) {
        const parts = at.split('.');
        const parent = parts.slice(0, -1).reduce((o: Obj, k) => o[k] as Obj, expected);
        assert.equal(parent[parts.at(-1) as string], null, `${c.name}: Go leaves ${at} null`);
        delete parent[parts.at(-1) as string];
      }
      assert.deepEqual(run(c), expected, `${c.name}: removeWebhookMutation`);
    }
  }
});
