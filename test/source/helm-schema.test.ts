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
import type { ApplicationSource } from '../../src/api/application.ts';
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
