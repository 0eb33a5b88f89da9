// Parsing manifests as kubectl reads them (YAML 1.1), with file and line in every error.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseManifests } from '../../src/source/parse.ts';
import { SourceError } from '../../src/source/errors.ts';
import { aliasBomb, manyKeysConfigMap } from '../support/attacks.ts';

function tooLarge(message: RegExp) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof SourceError, `expected a SourceError, got ${String(err)}`);
    assert.equal(err.reason, 'TooLarge', err.message);
    assert.match(err.message, message);
    return true;
  };
}

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

  test('a duplicate key is an error, stricter than Argo CD, and the message says why', () => {
    assert.throws(
      () => parseManifests(`${cm('d')}metadata:\n  name: again\n`, 'dup.yaml'),
      invalid(/^dup\.yaml:5: Map keys must be unique \(impersync refuses .*Argo CD would silently use its last value/),
    );
  });

  test('a quoted scalar reads to its closing quote across less indented lines, as go-yaml reads it', () => {
    const text = [
      cm('q').trimEnd(),
      'status:',
      '  conditions:',
      "    - message: 'a long message that doesn''t fit",
      '      on one line',
      "goes on at the left margin.'",
      '      reason: "first \\',
      '  second"',
      '      type: Scheduled',
      '',
    ].join('\n');
    const [p] = parseManifests(text, 'q.yaml');
    assert.deepEqual((p?.object as unknown as { status: unknown }).status, {
      conditions: [
        {
          message: "a long message that doesn't fit on one line goes on at the left margin.",
          reason: 'first second',
          type: 'Scheduled',
        },
      ],
    });
    // Only the scalar's lines move: an error after it keeps its line.
    assert.throws(() => parseManifests(`${text}oops: [\n`, 'q.yaml'), invalid(/^q\.yaml:1[45]: /));
    // A document marker still ends it, as in go-yaml.
    assert.throws(() => parseManifests(`${cm('d')}a: 'one\n---\n'\n`, 'd.yaml'), invalid(/^d\.yaml:\d+: /));
  });

  test('anyObject takes an object without metadata; manifests still need it', () => {
    const text = 'apiVersion: example.com/v1\nkind: Widget\nstatus: {phase: Ready}\n';
    assert.deepEqual(parseManifests(text, 'w.yaml', { anyObject: true })[0]?.object, {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      status: { phase: 'Ready' },
    });
    assert.throws(() => parseManifests(text, 'w.yaml'), invalid(/metadata is missing \(Widget\)/));
    assert.throws(
      () => parseManifests('kind: Widget\n', 'w.yaml', { anyObject: true }),
      invalid(/apiVersion is missing/),
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

  test('alias bombs are refused by what they expand to, naming the file, the document and the limit', () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 10; i++) {
      const prev = String.fromCharCode(96 + i);
      const cur = String.fromCharCode(97 + i);
      lines.push(`${cur}: &${cur} [*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev}]`);
    }
    assert.throws(
      () => parseManifests(`${lines.join('\n')}\n`, 'bomb.yaml'),
      tooLarge(/^bomb\.yaml: document 1 expands to more than 1000000 nodes \(aliases counted at every use\)/),
    );
    // Few aliases, each of a large string: 490 KiB of text, 480 MB as JSON.
    assert.throws(
      () => parseManifests(aliasBomb(), 'app/bomb.yaml'),
      tooLarge(
        /^app\/bomb\.yaml: document 1 is larger than 16 MiB \(aliases counted at every use\), the renderer's limit for one document$/,
      ),
    );
  });

  test('many aliases of a small anchor are fine (the size they expand to is what counts)', () => {
    const text = `${cm('many')}x: &a {a: 1, b: 2}\nl:\n${'- *a\n'.repeat(5000)}`;
    const [p] = parseManifests(text, 'many.yaml');
    const l = (p?.object as unknown as { l: unknown[] }).l;
    assert.equal(l.length, 5000);
    assert.deepEqual(l[4999], { a: 1, b: 2 });
  });

  test("the document limits are the caller's: size and expanded nodes, each named", () => {
    const limits = { maxDocumentBytes: 200, maxDocumentNodes: 30 };
    assert.throws(
      () => parseManifests(cm('big', `data:\n  a: "${'x'.repeat(300)}"\n`), 'big.yaml', { limits }),
      tooLarge(/^big\.yaml: document 1 is larger than 200 bytes/),
    );
    const nodes = `${cm('nodes')}x: &a [1, 2, 3, 4, 5]\ny: [*a, *a, *a, *a]\n`;
    assert.throws(
      () => parseManifests(nodes, 'n.yaml', { limits }),
      tooLarge(/^n\.yaml: document 1 expands to more than 30 nodes/),
    );
    assert.equal(parseManifests(nodes, 'n.yaml').length, 1, 'within the default limits');
  });

  test('an alias to the node it is in, or to no anchor, names the alias', () => {
    assert.throws(
      () => parseManifests('a: &a [*a]\n', 'r.yaml'),
      invalid(/^r\.yaml: document 1: alias \*a refers to the node it is in$/),
    );
  });

  test('anchors resolve to the last definition before the alias, as YAML says', () => {
    const [p] = parseManifests(`${cm('order')}a: &x 1\nb: *x\nc: &x 2\nd: *x\n`, 'o.yaml');
    const o = p?.object as Record<string, unknown>;
    assert.deepEqual([o.b, o.d], [1, 2]);
  });

  test('a legal ConfigMap of 88,000 keys parses, and a duplicate among them is found with its line', () => {
    const [p] = parseManifests(manyKeysConfigMap(), 'big/cm.yaml');
    assert.equal(Object.keys((p?.object as unknown as { data: object }).data).length, 88_000);
    assert.throws(
      () => parseManifests(`${manyKeysConfigMap('dup', 1000)}  k000005: again\n`, 'dup.yaml'),
      invalid(/^dup\.yaml:1006: Map keys must be unique \(impersync refuses a repeated key/),
    );
    // Duplicate keys in flow maps, merge keys that repeat, and keys equal only after resolution.
    assert.throws(() => parseManifests(`${cm('f')}x: {a: 1, a: 2}\n`, 'f.yaml'), invalid(/^f\.yaml:5: Map keys/));
    assert.throws(
      () => parseManifests(`${cm('num')}x: {1: a, 0x1: b}\n`, 'n.yaml'),
      invalid(/Map keys must be unique/),
    );
    const [m] = parseManifests(`${cm('m')}b: &b {p: 1}\nc: &c {q: 2}\nx:\n  <<: *b\n  <<: *c\n`, 'm.yaml');
    assert.deepEqual((m?.object as unknown as { x: unknown }).x, { p: 1, q: 2 });
  });

  test('10,000 manifests in one file parse', () => {
    const text = Array.from({ length: 10_000 }, (_, i) => cm(`cm-${i}`, `data:\n  i: "${i}"\n`)).join('---\n');
    const objs = parseManifests(text, 'many.yaml');
    assert.equal(objs.length, 10_000);
    assert.equal(objs[9_999]?.object.metadata.name, 'cm-9999');
    assert.equal(objs[9_999]?.location.document, 10_000);
  });
});
