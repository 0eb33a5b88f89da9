// Helm value files given by URL (argocd-cm helm.valuesFileSchemes), rendered by a real renderer
// with a real helm, fetched from a real HTTPS server on loopback that the test CA signs: an allowed
// scheme is fetched and its values used; a scheme the list leaves out is Argo CD's "the URL scheme
// 'x' is not allowed"; and the attacks fail: no credential reaches the value file's host even when
// a repository of that host has one, a file:// URL reads no local file even when an admin allows
// the scheme, a file over the size limit is refused, and a link-local or cloud metadata address is
// never asked, given as the URL or reached by a redirect.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError, SourceRenderer, type RenderInput } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { testCA } from '../support/tls.ts';
import { toolsDir } from './tools.ts';

const FILES: Record<string, string> = {
  'chart/Chart.yaml': 'apiVersion: v2\nname: demo\nversion: 0.1.0\n',
  'chart/values.yaml': 'color: blue\n',
  'chart/templates/cm.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  color: {{ .Values.color | quote }}\n',
};
const LIMIT = 64 * 1024;

describe('helm value files by URL', () => {
  let repo: TestRepo;
  let cacheDir: string;
  let renderer: SourceRenderer;
  let server: https.Server;
  let plain: http.Server;
  let base: string;
  let plainBase: string;
  const seen: Array<{ path: string; authorization: string | undefined }> = [];

  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const p = req.url ?? '/';
    seen.push({ path: p, authorization: req.headers.authorization });
    if (p === '/values.yaml') return void res.end('color: red\n');
    if (p === '/moved') return void res.writeHead(302, { location: `${base}/values.yaml` }).end();
    if (p === '/to-file') return void res.writeHead(302, { location: 'file:///etc/passwd' }).end();
    if (p === '/to-metadata')
      return void res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    if (p === '/huge') return void res.end(`color: "${'x'.repeat(LIMIT * 2)}"\n`);
    res.writeHead(404).end();
  };

  const app = (valueFiles: string[], tools?: RenderInput['tools']): RenderInput => ({
    source: { repoURL: repo.fileURL, targetRevision: 'main', path: 'chart', helm: { valueFiles } } as ApplicationSource,
    appName: 'shop',
    destinationNamespace: 'team-b',
    project: 'tenants',
    ...(tools ? { tools } : {}),
  });
  const color = (r: { objects: Array<{ object: unknown }> }) =>
    (r.objects[0]?.object as { data: Record<string, string> }).data['color'];

  before(async () => {
    const ca = testCA();
    // The renderer trusts what the system trusts, as helm's getter in Argo CD's repo-server does;
    // here the system's store holds the test CA too.
    tls.setDefaultCACertificates([...tls.getCACertificates('default'), ca.caCert]);
    server = https.createServer({ cert: ca.cert, key: ca.key }, handler);
    plain = http.createServer(handler);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    plainBase = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
    repo = await TestRepo.create();
    await repo.commit(FILES, 'chart');
    cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-values-url-'));
    renderer = new SourceRenderer({
      allowLocalRepositories: true,
      cacheDir,
      toolsDir: toolsDir(),
      limits: { maxFileBytes: LIMIT },
    });
  });
  after(async () => {
    server?.closeAllConnections();
    plain?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await new Promise((r) => plain?.close(r));
    await repo?.remove();
    if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  });

  test("https and http, Argo CD's default schemes: the file is fetched and its values win over the chart's", async () => {
    assert.equal(color(await renderer.render(app([`${base}/values.yaml`]))), 'red');
    assert.equal(color(await renderer.render(app([`${plainBase}/values.yaml`]))), 'red');
    assert.equal(color(await renderer.render(app([`${base}/moved`]))), 'red', 'a redirect is followed');
  });

  test("a scheme helm.valuesFileSchemes leaves out: Argo CD's message, nothing fetched", async () => {
    const before = seen.length;
    await assert.rejects(
      renderer.render(app([`${plainBase}/values.yaml`], { valuesFileSchemes: ['https'] })),
      (err: unknown) =>
        err instanceof SourceError &&
        err.reason === 'InvalidSource' &&
        /error resolving value file path: the URL scheme 'http' is not allowed/.test(err.message),
    );
    await assert.rejects(
      renderer.render(app([`${base}/values.yaml`], { valuesFileSchemes: [] })),
      /the URL scheme 'https' is not allowed/,
    );
    assert.equal(seen.length, before, 'no request was sent');
    // The scheme is compared without case, as Argo CD's strings.EqualFold.
    assert.equal(color(await renderer.render(app([`${base}/values.yaml`], { valuesFileSchemes: ['HTTPS'] }))), 'red');
  });

  test('attack: a value file on a host whose repository has a credential gets none', async () => {
    const before = seen.length;
    const input: RenderInput = {
      ...app([`${base}/values.yaml`, `${base}/moved`]),
      repository: { url: repo.fileURL, username: 'alice', password: 's3cret' },
      dependencyRepositories: [
        { url: base, repository: { url: base, username: 'alice', password: 's3cret', caCerts: testCA().caCert } },
      ],
    };
    assert.equal(color(await renderer.render(input)), 'red');
    const asked = seen.slice(before);
    assert.ok(asked.length >= 3, JSON.stringify(asked));
    assert.deepEqual(
      asked.filter((r) => r.authorization !== undefined),
      [],
      'no Authorization header reached the value file host',
    );
  });

  test('attack: file:// reads no local file, neither by default nor when an admin allows the scheme, nor by a redirect', async () => {
    await assert.rejects(renderer.render(app(['file:///etc/passwd'])), /the URL scheme 'file' is not allowed/);
    await assert.rejects(
      renderer.render(app(['file:///etc/passwd'], { valuesFileSchemes: ['https', 'file'] })),
      (err: unknown) =>
        err instanceof SourceError &&
        /the URL scheme 'file' is allowed by argocd-cm helm.valuesFileSchemes, but the renderer fetches value files over https and http only/.test(
          err.message,
        ),
    );
    await assert.rejects(renderer.render(app([`${base}/to-file`])), (err: unknown) => {
      assert.ok(err instanceof SourceError);
      assert.doesNotMatch(err.message, /root:/, 'nothing of /etc/passwd');
      return true;
    });
  });

  test('attack: a value file at a link-local or cloud metadata address is refused, given so or by a redirect, before any connection', async () => {
    const refused = (err: unknown) =>
      err instanceof SourceError &&
      err.reason === 'InvalidSource' &&
      /is a link-local or cloud metadata address, from which the renderer never fetches a file whose content reaches the rendered objects/.test(
        err.message,
      );
    for (const url of [
      'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
      'http://[::ffff:169.254.169.254]/latest/meta-data/',
      'http://[fe80::1]/values.yaml',
      'http://[fd00:ec2::254]/latest/meta-data/',
      'http://100.100.100.200/latest/meta-data/',
    ])
      await assert.rejects(renderer.render(app([url])), refused, url);
    const before = seen.length;
    await assert.rejects(renderer.render(app([`${base}/to-metadata`])), refused);
    assert.deepEqual(
      seen.slice(before).map((r) => r.path),
      ['/to-metadata'],
      'only the redirect was asked for',
    );
  });

  test("attack: a value file over the renderer's file limit is refused, not written", async () => {
    await assert.rejects(
      renderer.render(app([`${base}/huge`])),
      (err: unknown) =>
        err instanceof SourceError &&
        err.reason === 'TooLarge' &&
        /is larger than the renderer's limit/.test(err.message),
    );
  });

  test('a missing file is an error, ignoreMissingValueFiles or not (Argo CD hands the URL to helm)', async () => {
    const input = app([`${base}/absent.yaml`]);
    (input.source.helm as Record<string, unknown>)['ignoreMissingValueFiles'] = true;
    await assert.rejects(renderer.render(input), /could not be fetched: the server answered 404/);
  });
});
