// Fuzzing manifest parsing (src/source/parse.ts) with arbitrary text, YAML-ish fragments and JSON:
// either Kubernetes objects with their location, or a SourceError 'InvalidManifest' whose message
// starts with the file's name. Nothing else may escape: not a yaml library error, not a TypeError.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseManifests } from '../../src/source/parse.ts';
import { SourceError } from '../../src/source/errors.ts';

const fragment = fc.constantFrom(
  'apiVersion: v1\n',
  'kind: ConfigMap\n',
  'metadata:\n',
  '  name: x\n',
  '  namespace: 1\n',
  'data:\n  a: 0644\n',
  '---\n',
  '...\n',
  '- a\n',
  'items:\n- kind: X\n',
  'kind: List\n',
  '&a [1]\n',
  '*a\n',
  '<<: *a\n',
  '!!binary aGk=\n',
  '!!set {a, b}\n',
  '? complex\n',
  '{',
  '}',
  '[',
  ']',
  '"',
  "'",
  '\t',
  ':',
  '# Source: t.yaml\n',
  '%YAML 1.1\n',
  '\uFEFF',
  '\u0000',
  'key: value\nkey: dup\n',
  'generateName: h-\n',
);
const text = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.array(fragment, { maxLength: 20 }).map((parts) => parts.join('')),
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  fc
    .record(
      {
        apiVersion: fc.oneof(fc.constant('v1'), fc.jsonValue()),
        kind: fc.oneof(fc.constant('ConfigMap'), fc.jsonValue()),
        metadata: fc.jsonValue({ maxDepth: 2 }),
      },
      { requiredKeys: [] },
    )
    .map((v) => JSON.stringify(v)),
);

function check(body: string, file: string, sourceComments: boolean): void {
  let objects;
  try {
    objects = parseManifests(body, file, { sourceComments });
  } catch (err) {
    assert.ok(err instanceof SourceError, `not a SourceError: ${String(err)}`);
    assert.equal(err.reason, 'InvalidManifest');
    assert.ok(err.message.trim() !== '' && !/\[object |undefined/.test(err.message), err.message);
    if (!sourceComments) assert.ok(err.message.startsWith(file), `names the file: ${err.message}`);
    return;
  }
  for (const { object, location } of objects) {
    assert.ok(typeof object.apiVersion === 'string' && object.apiVersion !== '');
    assert.ok(typeof object.kind === 'string' && object.kind !== '');
    assert.equal(typeof object.metadata.name, 'string');
    assert.ok(location.document >= 1);
    // What goes to the API server must survive JSON.
    assert.doesNotThrow(() => JSON.stringify(object));
  }
}

test('fuzz: parseManifests on arbitrary text yields objects or an InvalidManifest SourceError naming the file', () => {
  fc.assert(
    fc.property(text, fc.constantFrom('app/x.yaml', 'app/x.json', 'app/x.yml'), fc.boolean(), (body, file, comments) =>
      check(body, file, comments),
    ),
    { numRuns: 1500 },
  );
});

test('fuzz: an alias bomb is refused with a clear error, not expanded', () => {
  const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
  for (let i = 0; i < 8; i++)
    bomb.push(
      `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
        .fill(`*${String.fromCharCode(97 + i)}`)
        .join(',')}]`,
    );
  const body = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  ${bomb.join('\n  ')}\n`;
  assert.throws(
    () => parseManifests(body, 'app/bomb.yaml'),
    (err: unknown) =>
      err instanceof SourceError && err.reason === 'TooLarge' && /^app\/bomb\.yaml: document 1 /.test(err.message),
  );
});
