// A chart's values.schema.json makes helm load what its references name: files anywhere on the
// renderer's disk and URLs. Before helm runs, every schema of the chart and of its subcharts (in
// folders and in .tgz archives) may refer only inside itself. Beside the checkout sits a JSON file
// (another tenant's, say) whose content decides whether the chart renders: an oracle on it, and
// an HTTP server counts the requests helm makes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import type { ApplicationSource } from '../../src/api/application.ts';
import { findSchemaReference } from '../../src/source/helm-schema.ts';
import { SourceError, SourceRenderer } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { toolsDir } from './tools.ts';

const chartYaml = (name: string) => `apiVersion: v2\nname: ${name}\nversion: 0.1.0\n`;
const template = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Chart.Name }}\n';
const schema = (ref: string) => JSON.stringify({ properties: { x: { $ref: ref } } });

describe("helm never loads what a chart's schema names outside itself", () => {
  let top: string;
  let repo: TestRepo;
  let renderer: SourceRenderer;
  let server: http.Server;
  let requests = 0;
  let secret: string;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-helm-schema-'));
    secret = path.join(top, 'secret.json');
    await writeFile(secret, JSON.stringify({ password: { enum: ['hunter2'] } }));
    server = http.createServer((_req, res) => {
      requests++;
      res.end('{"type": "object"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/schema.json`;

    // A subchart archive whose schema reads the secret, inside the parent chart's charts/.
    const sub = path.join(top, 'sub');
    await mkdir(path.join(sub, 'templates'), { recursive: true });
    await writeFile(path.join(sub, 'Chart.yaml'), chartYaml('sub'));
    await writeFile(path.join(sub, 'templates', 'cm.yaml'), template);
    await writeFile(path.join(sub, 'values.schema.json'), schema(`file://${secret}#/password`));
    await writeFile(path.join(sub, 'values.yaml'), 'x: guess\n');
    const tgz = path.join(top, 'sub-0.1.0.tgz');
    const tar = spawnSync('tar', ['czf', tgz, '-C', top, 'sub']);
    assert.equal(tar.status, 0, tar.stderr?.toString());

    repo = await TestRepo.create(path.join(top, 'repo'));
    const chart = (name: string, schemaText: string) => ({
      [`${name}/Chart.yaml`]: chartYaml(name),
      [`${name}/templates/cm.yaml`]: template,
      [`${name}/values.yaml`]: 'x: guess\n',
      [`${name}/values.schema.json`]: schemaText,
    });
    await repo.commit({
      // Relative to file:///values.schema.json: the renderer's whole disk.
      ...chart('relative', schema(`${secret.slice(1)}#/password`)),
      ...chart('absolute', schema(`file://${secret}#/password`)),
      ...chart('url', schema(url)),
      ...chart('metaschema', JSON.stringify({ $schema: url })),
      ...chart('dynamic', JSON.stringify({ properties: { x: { $dynamicRef: `file://${secret}#/password` } } })),
      // Helm drops a byte order mark before parsing: JSON.parse alone would call this no JSON.
      ...chart('bom', `\uFEFF${schema(`file://${secret}#/password`)}`),
      ...chart('inner', JSON.stringify({ properties: { x: { items: [{ $ref: `file://${secret}#/password` }] } } })),
      ...chart(
        'fine',
        JSON.stringify({
          $schema: 'http://json-schema.org/draft-07/schema#',
          properties: { x: { $ref: '#/definitions/word' } },
          definitions: { word: { type: 'string' } },
        }),
      ),
      'parent/Chart.yaml': chartYaml('parent'),
      'parent/templates/cm.yaml': template,
      'parent/charts/nested/Chart.yaml': chartYaml('nested'),
      'parent/charts/nested/templates/cm.yaml': template,
      'parent/charts/nested/values.schema.json': schema(url),
    });
    await mkdir(path.join(repo.dir, 'archived/charts'), { recursive: true });
    await writeFile(path.join(repo.dir, 'archived/Chart.yaml'), chartYaml('archived'));
    spawnSync('cp', [tgz, path.join(repo.dir, 'archived/charts/')]);
    await repo.commit({ 'archived/templates/cm.yaml': template });
    renderer = new SourceRenderer({ cacheDir: path.join(top, 'cache'), toolsDir: toolsDir() });
  });
  after(async () => {
    server?.close();
    if (top) await rm(top, { recursive: true, force: true });
  });

  const render = (p: string, helm: Record<string, unknown> = {}) =>
    renderer.render({ source: { repoURL: repo.url, path: p, helm } as ApplicationSource, appName: 'app' });

  test('a reference to a file or URL, in the chart or a subchart (folder or archive), is refused before helm runs', async () => {
    for (const [p, where] of [
      ['relative', /values\.schema\.json: \$ref '.*secret\.json#\/password' is refused/],
      ['absolute', /values\.schema\.json: \$ref 'file:\/\/.*secret\.json#\/password' is refused/],
      ['url', /values\.schema\.json: \$ref 'http:\/\/127\.0\.0\.1:\d+\/schema\.json' is refused/],
      ['metaschema', /values\.schema\.json: \$schema 'http:\/\/127\.0\.0\.1:\d+\/schema\.json' is refused/],
      ['dynamic', /values\.schema\.json: \$dynamicRef 'file:\/\/.*' is refused/],
      ['inner', /values\.schema\.json: \$ref 'file:\/\/.*' is refused/],
      ['bom', /values\.schema\.json: \$ref 'file:\/\/.*' is refused/],
      ['parent', /charts\/nested\/values\.schema\.json: \$ref 'http:.*' is refused/],
      ['archived', /charts\/sub-0\.1\.0\.tgz: sub\/values\.schema\.json: \$ref 'file:\/\/.*' is refused/],
    ] as const) {
      await assert.rejects(render(p), (err: unknown) => {
        assert.ok(err instanceof SourceError, String(err));
        assert.equal(err.reason, 'InvalidSource', `${p}: ${err.message}`);
        assert.match(err.message, new RegExp(`^helm chart '${p}': ${where.source}`));
        assert.match(err.message, /spec\.source\.helm\.skipSchemaValidation/);
        return true;
      });
    }
    assert.equal(requests, 0, 'helm fetched nothing');
  });

  test('references inside the schema and the drafts helm knows render; skipSchemaValidation renders without the schema', async () => {
    assert.deepEqual(
      (await render('fine')).objects.map((o) => o.object.metadata.name),
      ['fine'],
    );
    const r = await render('absolute', { skipSchemaValidation: true });
    assert.deepEqual(
      r.objects.map((o) => o.object.metadata.name),
      ['absolute'],
    );
  });
});

// A subchart archive is read by helm with Go's archive/tar and gzip; the check reads it itself. Each
// archive here hides a values.schema.json (that reads a file) from a reader that is not Go's, and
// helm 3.22 loads it from every one of them (it answers "value must be 'hunter2'").
describe('a schema in a subchart archive is found wherever helm finds it', () => {
  const ref = JSON.stringify({ properties: { x: { $ref: 'file:///etc/secret.json#/password' } } });
  const header = (name: string, size: number, opts: { type?: string; sizeField?: Buffer } = {}): Buffer => {
    const h = Buffer.alloc(512);
    h.write(name, 0, 100, 'utf8');
    h.write('0000644\0', 100);
    h.write('0000000\0', 108);
    h.write('0000000\0', 116);
    if (opts.sizeField) opts.sizeField.copy(h, 124);
    else h.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
    h.write('00000000000\0', 136);
    h.write(opts.type ?? '0', 156, 1, 'latin1');
    h.write('ustar\x0000', 257, 8, 'latin1');
    h.fill(0x20, 148, 156);
    const sum = h.reduce((n, b) => n + b, 0);
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    return h;
  };
  const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);
  const member = (name: string, data: string, opts: { type?: string } = {}) =>
    Buffer.concat([header(name, Buffer.byteLength(data), opts), pad(Buffer.from(data))]);
  const paxRecord = (k: string, v: string) => {
    const body = ` ${k}=${v}\n`;
    let n = body.length + 1;
    while (String(n).length + body.length !== n) n = String(n).length + body.length;
    return `${n}${body}`;
  };
  const chart = [
    member('sub/Chart.yaml', chartYaml('sub')),
    member('sub/values.yaml', 'x: guess\n'),
    member('sub/templates/cm.yaml', template),
  ];
  const swallowed = (() => {
    // A size with NULs before its digits: Go skips the 512 bytes of data, a reader stopping at the
    // first NUL reads them as a header whose data is the schema's member.
    const sizeField = Buffer.alloc(12);
    sizeField.write('1000', 7);
    const inner = header('sub/notes', 512 + pad(Buffer.from(ref)).length);
    return [Buffer.concat([header('sub/README', 512, { sizeField }), inner]), member('sub/values.schema.json', ref)];
  })();
  const hidden: Record<string, Buffer[]> = {
    'a name ending in /.': [member('sub/values.schema.json/.', ref)],
    'a name ending in /': [member('sub/values.schema.json/', ref)],
    'a type helm reads as a file': [member('sub/values.schema.json', ref, { type: 'Z' })],
    'a GNU long link between the long name and its member': [
      member('././@LongLink', 'sub/values.schema.json\0', { type: 'L' }),
      member('././@LongLink', 'target\0', { type: 'K' }),
      member('sub/harmless', ref),
    ],
    'a pax path after a GNU long name': [
      member('././@LongLink', 'sub/values.schema.json\0', { type: 'L' }),
      member('PaxHeader', paxRecord('path', 'sub/harmless'), { type: 'x' }),
      member('sub/harmless', ref),
    ],
    'a second pax header without a path': [
      member('PaxHeader', paxRecord('path', 'sub/harmless'), { type: 'x' }),
      member('PaxHeader', paxRecord('comment', 'nothing'), { type: 'x' }),
      member('sub/values.schema.json', ref),
    ],
    'two paths in one pax header': [
      member('PaxHeader', paxRecord('path', 'sub/harmless') + paxRecord('path', 'sub/values.schema.json'), {
        type: 'x',
      }),
      member('sub/harmless', ref),
    ],
    'a pax path inside another record': [
      member('PaxHeader', paxRecord('comment', `x\n${paxRecord('path', 'sub/harmless')}`), { type: 'x' }),
      member('sub/values.schema.json', ref),
    ],
    'a global pax header after a pax path': [
      member('PaxHeader', paxRecord('path', 'sub/harmless'), { type: 'x' }),
      member('GlobalHead', paxRecord('comment', 'x'), { type: 'g' }),
      member('sub/values.schema.json', ref),
    ],
    'an empty GNU long name': [member('././@LongLink', '\0', { type: 'L' }), member('sub/values.schema.json', ref)],
    'a pax size of 0': [
      member('PaxHeader', paxRecord('size', '0'), { type: 'x' }),
      Buffer.concat([header('sub/empty', 512 + pad(Buffer.from(ref)).length)]),
      member('sub/values.schema.json', ref),
    ],
    'a size with NULs before it': swallowed,
  };
  let top: string;
  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-helm-schema-tar-'));
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const check = async (name: string, tgz: Buffer) => {
    const dir = path.join(top, name.replace(/\W+/g, '-'));
    await mkdir(path.join(dir, 'charts'), { recursive: true });
    await writeFile(path.join(dir, 'Chart.yaml'), chartYaml('parent'));
    await writeFile(path.join(dir, 'charts', 'sub-0.1.0.tgz'), tgz);
    return findSchemaReference(dir);
  };

  test('a member hidden from a reader that is not Go archive/tar is checked, or the archive refused', async () => {
    for (const [name, members] of Object.entries(hidden)) {
      const bad = await check(name, gzipSync(Buffer.concat([...chart, ...members, Buffer.alloc(1024)])));
      assert.ok(bad, `${name}: not found`);
      assert.ok(
        (bad.keyword === '$ref' && bad.value === 'file:///etc/secret.json#/password') || bad.keyword === 'archive',
        `${name}: ${JSON.stringify(bad)}`,
      );
    }
  });

  test('an archive Go reads to its end and Node refuses for what follows it is refused', async () => {
    const tar = Buffer.concat([...chart, member('sub/values.schema.json', ref), Buffer.alloc(1024)]);
    const bad = await check('trailing', Buffer.concat([gzipSync(tar), Buffer.from('garbage')]));
    assert.equal(bad?.keyword, 'archive');
  });

  test('a well-formed archive is read as before', async () => {
    const tar = Buffer.concat([...chart, member('sub/values.schema.json', ref), Buffer.alloc(1024)]);
    assert.equal((await check('plain', gzipSync(tar)))?.value, 'file:///etc/secret.json#/password');
    const fine = Buffer.concat([...chart, member('sub/values.schema.json', '{}'), Buffer.alloc(1024)]);
    assert.equal(await check('fine', gzipSync(fine)), undefined);
  });
});
