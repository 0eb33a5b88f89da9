// A Helm repository's index.yaml is tenant content: whoever writes an Application names the server,
// and the server says what the index holds. Parsed off the renderer's event loop, under a heap and
// a time limit, a huge or hostile index is a clear error for its own Application, and the renderer
// answers everyone else meanwhile.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IndexParser } from '../../src/source/helm-index.ts';
import { SourceError } from '../../src/source/errors.ts';

/** An index of `charts` charts of one version each: a mapping with that many keys. */
function index(charts: number): Uint8Array {
  const lines = ['apiVersion: v1', 'entries:'];
  for (let i = 0; i < charts; i++)
    lines.push(
      `  chart${i}:`,
      `  - version: 1.0.${i}`,
      `    digest: ${'a'.repeat(64)}`,
      '    urls:',
      `    - chart${i}-1.0.${i}.tgz`,
    );
  return new TextEncoder().encode(lines.join('\n') + '\n');
}

async function refusal(p: Promise<unknown>): Promise<SourceError> {
  const err = await p.then(
    () => assert.fail('should have been refused'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof SourceError, String(err));
  return err;
}

test("the charts and versions of an index, Helm's way: versions that are not strings left out", async () => {
  const parser = new IndexParser();
  const text = new TextEncoder().encode(
    [
      'apiVersion: v1',
      'entries:',
      '  web:',
      '  - {version: 1.2.0, urls: [web-1.2.0.tgz, 7], digest: abc}',
      '  - {version: 1.10}',
      '  - {version: "1.3.0"}',
      '  web:',
      '  - {version: 2.0.0, urls: [web-2.0.0.tgz]}',
      '  notalist: 3',
    ].join('\n'),
  );
  const got = await parser.parse(text, "Helm repository 'https://charts.example'");
  // The last of two equal keys wins, as in Helm's reader.
  assert.deepEqual([...got.entries()], [['web', [{ version: '2.0.0', urls: ['web-2.0.0.tgz'], digest: undefined }]]]);
});

test('a large index is parsed off the event loop: a small one asked after it is answered first', async () => {
  const parser = new IndexParser();
  const order: string[] = [];
  const big = parser.parse(index(60_000), 'big').then((m) => (order.push('big'), m));
  await new Promise((r) => setImmediate(r));
  const small = parser.parse(index(3), 'small').then((m) => (order.push('small'), m));
  const [b, s] = await Promise.all([big, small]);
  assert.equal(b.size, 60_000, 'the large index parses, every chart in it');
  assert.equal(s.size, 3);
  assert.deepEqual(order, ['small', 'big']);
});

test("an index that needs more memory than the parser's heap fails, naming the repository", async () => {
  const parser = new IndexParser({ heapBytes: 32 * 1024 * 1024 });
  const err = await refusal(parser.parse(index(100_000), "Helm repository 'https://huge.example'"));
  assert.equal(err.reason, 'TooLarge');
  assert.equal(
    err.message,
    "Helm repository 'https://huge.example': index.yaml needs more than the renderer's 32 MiB to parse",
  );
  // The parser goes on: the next index parses.
  assert.equal((await parser.parse(index(2), 'next')).size, 2);
});

test('an index that takes longer than the time limit fails; an alias bomb costs what its text costs; not YAML fails', async () => {
  const slow = new IndexParser({ timeoutMs: 50 });
  const err = await refusal(slow.parse(index(100_000), "Helm repository 'https://slow.example'"));
  assert.equal(err.reason, 'Timeout');
  assert.equal(err.message, "Helm repository 'https://slow.example': index.yaml took longer than 50 ms to parse");
  // Nine levels of ten aliases each: a billion versions if aliases were copies. They are one list,
  // so the chart has the versions written once, its 10 entries that are lists left out.
  const laughs = ['apiVersion: v1', 'defs:', '  l0: &l0 [{version: 1.0.0}]'];
  for (let i = 1; i < 10; i++)
    laughs.push(
      `  l${i}: &l${i} [${Array(10)
        .fill(`*l${i - 1}`)
        .join(', ')}]`,
    );
  laughs.push('entries:', '  bomb: *l9', '  plain: *l0');
  const bomb = await new IndexParser({ heapBytes: 32 * 1024 * 1024 }).parse(
    new TextEncoder().encode(laughs.join('\n')),
    'bomb',
  );
  assert.deepEqual(
    [...bomb.entries()],
    [
      ['bomb', []],
      ['plain', [{ version: '1.0.0', urls: [], digest: undefined }]],
    ],
  );
  const notYaml = await refusal(new IndexParser().parse(new TextEncoder().encode('entries: [unclosed'), 'broken'));
  assert.equal(notYaml.reason, 'InvalidSource');
  assert.match(notYaml.message, /^broken: index.yaml does not parse: /);
});
