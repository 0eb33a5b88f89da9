// A Helm repository's index.yaml and an OCI registry's tag list are tenant content: whoever writes
// an Application names the server, and the server says what they hold. An index is parsed off the
// renderer's event loop, under a heap and a time limit; a tag listing is bounded in bytes over all
// its pages; what is remembered of both is bounded in bytes. A huge or hostile answer is a clear
// error for its own Application, and the renderer answers everyone else meanwhile.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { IndexParser } from '../../src/source/helm-index.ts';
import { HelmRepositories } from '../../src/source/helm-repo.ts';
import { OciRegistries, ociReference } from '../../src/source/oci.ts';
import { chartArchive, startHelmRepo, type HelmRepoServer } from '../support/helm.ts';
import { refused } from '../support/renderer.ts';

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
  const { index: got } = await parser.parse(text, "Helm repository 'https://charts.example'");
  // The last of two equal keys wins, as in Helm's reader.
  assert.deepEqual([...got.entries()], [['web', [{ version: '2.0.0', urls: ['web-2.0.0.tgz'], digest: undefined }]]]);
});

test('a large index is parsed off the event loop: a small one asked after it is answered first', async () => {
  const parser = new IndexParser();
  const order: string[] = [];
  const big = parser.parse(index(60_000), 'big').then((m) => (order.push('big'), m.index));
  await new Promise((r) => setImmediate(r));
  const small = parser.parse(index(3), 'small').then((m) => (order.push('small'), m.index));
  const [b, s] = await Promise.all([big, small]);
  assert.equal(b.size, 60_000, 'the large index parses, every chart in it');
  assert.equal(s.size, 3);
  assert.deepEqual(order, ['small', 'big']);
});

test("an index that needs more memory than the parser's heap fails, naming the repository", async () => {
  const parser = new IndexParser({ heapBytes: 32 * 1024 * 1024 });
  const err = await refused(parser.parse(index(100_000), "Helm repository 'https://huge.example'"));
  assert.equal(err.reason, 'TooLarge');
  assert.equal(
    err.message,
    "Helm repository 'https://huge.example': index.yaml needs more than the renderer's 32 MiB to parse",
  );
  // The parser goes on: the next index parses.
  assert.equal((await parser.parse(index(2), 'next')).index.size, 2);
});

test('an index that takes longer than the time limit fails; an alias bomb costs what its text costs; not YAML fails', async () => {
  const slow = new IndexParser({ timeoutMs: 50 });
  const err = await refused(slow.parse(index(100_000), "Helm repository 'https://slow.example'"));
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
    [...bomb.index.entries()],
    [
      ['bomb', []],
      ['plain', [{ version: '1.0.0', urls: [], digest: undefined }]],
    ],
  );
  // js-yaml's own message quotes the lines around the error: an index is any server's answer.
  const junk = new TextEncoder().encode('entries: [unclosed index-secret-marker');
  const notYaml = await refused(new IndexParser().parse(junk, "Helm repository 'https://broken.example'"));
  assert.equal(notYaml.reason, 'InvalidSource');
  assert.equal(
    notYaml.message,
    `the index.yaml of Helm repository 'https://broken.example' does not parse as YAML (${junk.length} bytes; its content is not shown)`,
  );
});

test('remembered indexes are bounded in bytes: past the budget the least recently used is fetched again', async () => {
  const repos = await Promise.all([1, 2, 3].map(() => startHelmRepo({ plain: true })));
  try {
    for (const r of repos) r.setCharts([{ name: 'web', version: '1.0.0', archive: chartArchive('web', '1.0.0') }]);
    // Each index is counted as 458 bytes, its key and its record about 200 more: room for two.
    const helm = new HelmRepositories({ credentialId: async () => 'anonymous', limits: { indexCacheBytes: 1500 } });
    const fetches = (r: HelmRepoServer) => r.requests.filter((q) => q.path === '/index.yaml').length;
    const ask = (r: HelmRepoServer) => helm.versions(r.url, 'web', undefined, 60_000);
    const [a, b, c] = repos as [HelmRepoServer, HelmRepoServer, HelmRepoServer];
    await ask(a);
    await ask(b);
    await ask(a); // a is now the most recently used
    await ask(c); // no room for three: b goes
    await ask(a);
    await ask(b);
    assert.deepEqual([fetches(a), fetches(b), fetches(c)], [1, 2, 1]);
  } finally {
    await Promise.all(repos.map((r) => r.close()));
  }
});

test("a registry's tag listing is bounded in bytes over all its pages, and its answers must be JSON", async () => {
  // 50 pages of 512 KiB of tags, each naming the next: 25 MiB, past a 4 MiB budget.
  // One page of 300,000 tags: more than a call's arguments may be.
  const many = JSON.stringify({ name: 'charts/web', tags: Array.from({ length: 300_000 }, (_, i) => `${i}`) });
  const page = JSON.stringify({ name: 'charts/web', tags: Array.from({ length: 40_000 }, (_, i) => `1.0.${i}-pad`) });
  let mode: 'pages' | 'garbage' | 'one' = 'pages';
  const served: string[] = [];
  const server = http.createServer((req, res) => {
    served.push(req.url ?? '');
    if (mode === 'garbage') return void res.end('<html>not a tag list: tags-secret-marker</html>');
    if (mode === 'one') return void res.end(many);
    const n = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('page') ?? '0');
    res.writeHead(200, {
      'content-type': 'application/json',
      link: `</v2/charts/web/tags/list?n=1000&page=${n + 1}>; rel="next"`,
    });
    res.end(page);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const access = { url: `${host}/charts`, enableOCI: true, insecureOCIForceHttp: true };
    const oci = new OciRegistries({
      credentialId: async () => 'anonymous',
      limits: { maxLayerBytes: 64 * 1024 * 1024, timeoutMs: 10_000, maxTagListBytes: 4 * 1024 * 1024 },
    });
    const ref = ociReference(`${host}/charts/web`, access);
    const big = await refused(oci.tags(ref, access));
    assert.equal(big.reason, 'TooLarge');
    assert.equal(big.message, `the tags of 'oci://${host}/charts/web' are more than the renderer's limit of 4 MiB`);
    assert.ok(served.length <= 9, `stopped at the budget, not at the 50th page: ${served.length} pages asked`);
    mode = 'one';
    assert.equal((await oci.tags(ref, access)).length, 300_000);
    mode = 'garbage';
    const garbage = await refused(oci.tags(ref, access));
    assert.equal(garbage.reason, 'InvalidSource');
    assert.equal(
      garbage.message,
      `the tags of 'oci://${host}/charts/web': the registry's answer does not parse as JSON (47 bytes; its content is not shown)`,
    );
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('what a parsed index costs the renderer is what it is counted as, and bounded, whatever its aliases', async () => {
  // 300 KB of YAML: one list of 100,000 URLs, an alias of it under each of 200 versions. Kept
  // whole, that was 20 million array slots (150 MiB) on the renderer's heap, counted as 23 KB in
  // the index cache; only the first URL is ever downloaded, so only it is kept.
  const lines = ['apiVersion: v1', `defs: &u [${Array(100_000).fill('""').join(',')}]`, 'entries:'];
  for (let c = 0; c < 20; c++) {
    lines.push(`  c${c}:`);
    for (let v = 0; v < 10; v++) lines.push(`  - {version: 1.0.${v}, urls: *u}`);
  }
  const { index: got, bytes } = await new IndexParser().parse(new TextEncoder().encode(lines.join('\n')), 'urls');
  const versions = [...got.values()].flat();
  assert.equal(versions.length, 200);
  assert.ok(
    versions.every((v) => v.urls.length === 1 && v.urls[0] === ''),
    'one URL a version',
  );
  assert.ok(bytes >= 200 * 96, String(bytes));
  // An alias of one long string is one string in the worker, and a copy for each place it is in
  // once sent to the renderer: 100 versions of a 256 KiB string are 50 MiB there, past the limit.
  const big = ['apiVersion: v1', `big: &b "${'x'.repeat(256 * 1024)}"`, 'entries:', '  c:'];
  for (let v = 0; v < 100; v++) big.push('  - {version: *b}');
  const err = await refused(
    new IndexParser({ maxResultBytes: 8 * 1024 * 1024 }).parse(new TextEncoder().encode(big.join('\n')), 'aliased'),
  );
  assert.equal(err.reason, 'TooLarge');
  assert.equal(err.message, "aliased: index.yaml holds more than the renderer's limit of 8 MiB once parsed");
});
