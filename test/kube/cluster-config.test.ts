// A cluster Secret's config fields that change how the API server is reached, over a local HTTP
// server that records what arrives: `disableCompression` (Argo CD's client-go then sends no
// `Accept-Encoding: gzip`; impersync's transport never asks for compression), and `proxyUrl`
// (Argo CD connects through it; impersync refuses to connect at all rather than go direct).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { after, before, beforeEach, test } from 'node:test';
import type { Cluster } from '../../src/api/index.ts';
import { CredentialError, credentialForCluster } from '../../src/kube/credentials.ts';
import { DestinationClientFactory } from '../../src/kube/factory.ts';

let server: Server;
let url: string;
let seen: IncomingHttpHeaders[] = [];
const CM = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'x', namespace: 'team' } };

before(async () => {
  server = createServer((req, res) => {
    seen.push(req.headers);
    res.setHeader('content-type', 'application/json');
    // As kube-apiserver does: gzip only when the client asks for it.
    if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) {
      res.setHeader('content-encoding', 'gzip');
      res.end(gzipSync(JSON.stringify(CM)));
    } else res.end(JSON.stringify(CM));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  seen = [];
});

const cluster = (config: Record<string, unknown>): Cluster =>
  ({ name: 'remote', server: url, config: { bearerToken: 't', ...config }, secret: 'argocd/remote' }) as Cluster;
const GET = { method: 'GET' as const, path: '/api/v1/namespaces/team/configmaps/x' };

test('config.disableCompression: true: no Accept-Encoding goes out, as client-go sends none then', async () => {
  for (const config of [{ disableCompression: true }, {}]) {
    const f = new DestinationClientFactory({ server: url });
    try {
      const res = await f.forIdentity(cluster(config), { controller: true }).request(GET);
      assert.ok(res.ok, JSON.stringify(res));
      assert.deepEqual(res.ok ? res.value : undefined, CM);
    } finally {
      await f.close();
    }
  }
  assert.equal(seen.length, 2);
  for (const h of seen) assert.equal(h['accept-encoding'], undefined);
});

test('config.proxyUrl: no credential is built and no request reaches the server; the error names the field', () => {
  const proxied = cluster({ proxyUrl: 'http://proxy.internal:3128' });
  const names = (e: unknown) =>
    e instanceof CredentialError && /^cluster Secret argocd\/remote: config\.proxyUrl is not supported/.test(e.message);
  assert.throws(() => credentialForCluster(proxied, { server: url }), names);
  const f = new DestinationClientFactory({ server: url });
  assert.throws(() => f.forIdentity(proxied, { controller: true }), names);
  assert.equal(seen.length, 0);
  assert.doesNotThrow(
    () => credentialForCluster(cluster({ proxyUrl: '' }), { server: url }),
    'an empty proxyUrl is none',
  );
});
