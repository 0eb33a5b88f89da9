// The control-cluster client (src/kube/control.ts) goes through the same transport as every
// destination: its credential on every request and never an impersonation header, answers and
// failures as values, a per-request timeout, and the one metrics hook. A scripted HTTP server
// stands in for the API server; the real one is test/e2e/controller-watch.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ControlClient } from '../../src/kube/control.ts';
import type { RequestIdentity } from '../../src/kube/transport.ts';

async function scripted(handler: http.RequestListener): Promise<{ url: string; close(): void }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

test('requests carry the credential and no impersonation; answers and refusals are values; each is counted', async () => {
  const seen: http.IncomingHttpHeaders[] = [];
  const server = await scripted((req, res) => {
    seen.push(req.headers);
    if (req.url === '/api/v1/namespaces/argocd/configmaps/argocd-cm')
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{"a":"1"}}');
    else
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"kind":"Status","reason":"NotFound","message":"configmaps \\"x\\" not found","code":404}');
  });
  const counted: Array<[number, RequestIdentity]> = [];
  const control = new ControlClient(
    { server: server.url, bearerToken: 'the-controller' },
    { onResponse: (code, identity) => counted.push([code, identity]) },
  );
  try {
    const found = await control.request<{ data: Record<string, string> }>({
      method: 'GET',
      path: '/api/v1/namespaces/argocd/configmaps/argocd-cm',
    });
    assert.ok(found.ok);
    assert.deepEqual(found.value.data, { a: '1' });
    const missing = await control.request({ method: 'GET', path: '/api/v1/namespaces/argocd/configmaps/x' });
    assert.deepEqual(missing.ok ? undefined : [missing.error.code, missing.error.reason, missing.error.message], [
      404,
      'NotFound',
      'configmaps "x" not found',
    ]);
    for (const h of seen) {
      assert.equal(h['authorization'], 'Bearer the-controller');
      assert.deepEqual(
        Object.keys(h).filter((k) => k.startsWith('impersonate-')),
        [],
      );
    }
    assert.deepEqual(counted, [
      [200, 'controller'],
      [404, 'controller'],
    ]);
  } finally {
    await control.close();
    server.close();
  }
});

test('a request without an answer within its timeout is a ConnectionError value naming the server', async () => {
  const server = await scripted(() => {
    // never answers
  });
  const control = new ControlClient({ server: server.url });
  try {
    const res = await control.request({ method: 'GET', path: '/api/v1/namespaces', timeoutMs: 200 });
    assert.ok(!res.ok);
    assert.equal(res.error.code, 0);
    assert.equal(res.error.reason, 'ConnectionError');
    assert.match(res.error.message, new RegExp(`^cannot reach ${server.url}: no answer within 200 ms`));
  } finally {
    await control.close();
    server.close();
  }
});
