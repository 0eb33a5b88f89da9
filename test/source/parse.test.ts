// Parsing manifests as kubectl reads them (YAML 1.1), with file and line in every error.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseManifests } from '../../src/source/parse.ts';
import { SourceError } from '../../src/source/errors.ts';

function invalid(message: RegExp) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof SourceError, `expected a SourceError, got ${String(err)}`);
    assert.equal(err.reason, 'InvalidManifest');
    assert.match(err.message, message);
    return true;
  };
}

const cm = (name: string, extra = ''): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}`;

describe('parseManifests', () => {
  test('YAML 1.1 scalars as kubectl reads them: 0644 is 420, yes is true, timestamps and 1:30 stay strings', () => {
    const [p] = parseManifests(
      'apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nmode: 0644\nflag: yes\noff: off\nwhen: 2001-12-14\nclock: 1:30\nhex: 0x1f\nquoted: "0644"\n',
      'app/secret.yaml',
    );
    assert.ok(p);
    const o = p.object as Record<string, unknown>;
    assert.equal(o.mode, 420);
    assert.equal(o.flag, true);
    assert.equal(o.false, false, 'the key `off` is the boolean false in YAML 1.1');
    assert.equal(o.when, '2001-12-14');
    assert.equal(o.clock, '1:30');
    assert.equal(o.hex, 31);
    assert.equal(o.quoted, '0644');
  });

  test('merge keys are honoured', () => {
    const [p] = parseManifests(
      'base: &b {a: 1}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\ndata:\n  <<: *b\n  c: "2"\n',
      'm.yaml',
    );
    assert.deepEqual((p?.object as Record<string, unknown>).data, { a: 1, c: '2' });
  });

  test('multi-document files keep order and document numbers; empty and null documents are skipped', () => {
    const text = `---\n# only a comment\n---\n${cm('a')}---\n---\nnull\n---\n${cm('b')}...\n`;
    const objs = parseManifests(text, 'guestbook/all.yaml');
    assert.deepEqual(
      objs.map((o) => o.object.metadata.name),
      ['a', 'b'],
    );
    assert.deepEqual(
      objs.map((o) => o.location),
      [
        { file: 'guestbook/all.yaml', document: 2 },
        { file: 'guestbook/all.yaml', document: 5 },
      ],
    );
  });

  test('a file of only comments, or empty, holds no objects', () => {
    assert.deepEqual(parseManifests('# nothing here\n', 'a.yaml'), []);
    assert.deepEqual(parseManifests('', 'b.yaml'), []);
  });

  test('List kinds are expanded into their items', () => {
    const text =
      'apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: one}\n- apiVersion: v1\n  kind: Service\n  metadata: {name: two}\n';
    const objs = parseManifests(text, 'list.yaml');
    assert.deepEqual(
      objs.map((o) => `${o.object.kind}/${o.object.metadata.name}`),
      ['ConfigMap/one', 'Service/two'],
    );
    const typed = parseManifests(
      '{"apiVersion":"v1","kind":"ConfigMapList","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}]}',
      'list.json',
    );
    assert.equal(typed[0]?.object.metadata.name, 'x');
  });

  test('an empty List is no objects', () => {
    assert.deepEqual(parseManifests('apiVersion: v1\nkind: List\nitems: []\n', 'empty-list.yaml'), []);
  });

  test('JSON files, objects and arrays', () => {
    const one = parseManifests(
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j","namespace":"ns"},"data":{"mode":"0644"}}',
      'j.json',
    );
    assert.equal(one[0]?.object.metadata.namespace, 'ns');
    assert.deepEqual((one[0]?.object as Record<string, unknown>).data, { mode: '0644' });
    const two = parseManifests(
      `[${JSON.stringify({ apiVersion: 'v1', kind: 'A', metadata: { name: 'a' } })},${JSON.stringify({ apiVersion: 'v1', kind: 'B', metadata: { name: 'b' } })}]`,
      'two.json',
    );
    assert.deepEqual(
      two.map((o) => o.location.document),
      [1, 2],
    );
  });

  test('unknown fields are kept untouched', () => {
    const [p] = parseManifests(cm('u', 'spec:\n  madeUp: {deep: [1, 2]}\n'), 'u.yaml');
    assert.deepEqual((p?.object as Record<string, unknown>).spec, { madeUp: { deep: [1, 2] } });
  });

  test('a YAML syntax error names the file and line', () => {
    const text = `${cm('ok')}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  a: [1, 2\n  b: c: d\n`;
    assert.throws(() => parseManifests(text, 'guestbook/bad.yaml'), invalid(/^guestbook\/bad\.yaml:1[12]: \S/));
  });

  test('a duplicate key is an error, as in kubectl', () => {
    assert.throws(
      () => parseManifests(`${cm('d')}metadata:\n  name: again\n`, 'dup.yaml'),
      invalid(/^dup\.yaml:5: Map keys must be unique/),
    );
  });

  test('a JSON syntax error names the file and line', () => {
    assert.throws(
      () => parseManifests('{\n  "apiVersion": "v1",\n  "kind": "ConfigMap",\n  oops\n}', 'guestbook/bad.json'),
      invalid(/^guestbook\/bad\.json:4: /),
    );
  });

  test('a document that is not a Kubernetes object names the file, the document and what is missing', () => {
    assert.throws(
      () => parseManifests(`${cm('a')}---\njust a string\n`, 'app/x.yaml'),
      invalid(/^app\/x\.yaml: document 2 is not a Kubernetes object: it is a string/),
    );
    assert.throws(
      () => parseManifests('kind: ConfigMap\nmetadata: {name: a}\n', 'app/y.yaml'),
      invalid(/^app\/y\.yaml: document 1 is not a Kubernetes object: apiVersion is missing$/),
    );
    assert.throws(() => parseManifests('apiVersion: v1\nmetadata: {name: a}\n', 'y.yaml'), invalid(/kind is missing/));
    assert.throws(
      () => parseManifests('apiVersion: v1\nkind: ConfigMap\n', 'y.yaml'),
      invalid(/metadata is missing \(ConfigMap\)/),
    );
    assert.throws(
      () => parseManifests('apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {}}\n', 'y.yaml'),
      invalid(/metadata\.name is missing \(ConfigMap\)/),
    );
    assert.throws(
      () => parseManifests('- a\n- b\n', 'l.yaml'),
      invalid(/document 1 is not a Kubernetes object: it is a list/),
    );
    assert.throws(
      () => parseManifests('apiVersion: v1\nkind: List\nitems:\n- {kind: X}\n', 'l.yaml'),
      invalid(/^l\.yaml: document 1 items\[0\] is not a Kubernetes object: apiVersion is missing/),
    );
  });

  test('generateName without name is kept (hooks), with name left empty', () => {
    const [p] = parseManifests(
      'apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\n  annotations: {argocd.argoproj.io/hook: PreSync}\n',
      'hook.yaml',
    );
    assert.equal(p?.object.metadata.name, '');
    assert.equal(p?.object.metadata.generateName, 'migrate-');
  });

  test('alias bombs are refused instead of expanded', () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 10; i++) {
      const prev = String.fromCharCode(96 + i);
      const cur = String.fromCharCode(97 + i);
      lines.push(`${cur}: &${cur} [*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev}]`);
    }
    assert.throws(
      () => parseManifests(`${lines.join('\n')}\n`, 'bomb.yaml'),
      invalid(/^bomb\.yaml: document 1: .*alias/i),
    );
  });

  test('10,000 manifests in one file parse', () => {
    const text = Array.from({ length: 10_000 }, (_, i) => cm(`cm-${i}`, `data:\n  i: "${i}"\n`)).join('---\n');
    const objs = parseManifests(text, 'many.yaml');
    assert.equal(objs.length, 10_000);
    assert.equal(objs[9_999]?.object.metadata.name, 'cm-9999');
    assert.equal(objs[9_999]?.location.document, 10_000);
  });
});
