// The watch loop's reaction to what an API server can answer: a 410 Gone in the stream ("too old
// resource version", after etcd compaction, which a fresh control plane cannot be made to do on
// demand) and dropped connections. The API server side is a scripted HTTP server here; the real
// API server cases (selectors, add/modify/delete, liveness) are in test/e2e/controller-watch.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { connectControlCluster } from '../../src/kube/control.ts';
import { Watch } from '../../src/kube/watch.ts';
import type { WatchEvent } from '../../src/kube/watch.ts';

function cm(name: string, rv: string) {
  return { metadata: { name, namespace: 'argocd', resourceVersion: rv } };
}

test('410 Gone in the watch stream relists and reports the differences as events', { timeout: 20_000 }, async () => {
  let lists = 0;
  const watchRVs: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.searchParams.get('watch') !== '1') {
      lists++;
      const items = lists === 1 ? [cm('a', '5'), cm('b', '6')] : [cm('a', '9'), cm('c', '10')];
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ metadata: { resourceVersion: lists === 1 ? '6' : '10' }, items }));
      return;
    }
    watchRVs.push(url.searchParams.get('resourceVersion') ?? '');
    res.writeHead(200, { 'Content-Type': 'application/json' });
    if (watchRVs.length === 1) {
      res.write(JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } }) + '\n');
      res.end(
        JSON.stringify({
          type: 'ERROR',
          object: { kind: 'Status', code: 410, message: 'too old resource version: 7 (8)' },
        }) + '\n',
      );
    } else {
      // keep the connection open until the watch is stopped
      req.on('close', () => res.end());
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      { name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true },
    ],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const control = await connectControlCluster(kc);
  const w = new Watch(control.watchTransport(), {
    path: '/api/v1/namespaces/argocd/configmaps',
    kind: 'ConfigMap',
    apiVersion: 'v1',
    backoffInitialMs: 1,
    backoffMaxMs: 5,
  });
  const events: WatchEvent[] = [];
  w.on((e) => events.push(e));
  w.start();
  try {
    await w.synced;
    const end = Date.now() + 5000;
    while (watchRVs.length < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    assert.equal(lists, 2, 'relisted after 410');
    assert.deepEqual(watchRVs, ['6', '10'], 'watched from the list RV, then from the relist RV');
    assert.equal(w.restarts, 1);
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.object.metadata.name}`),
      ['ADDED a', 'ADDED b', 'MODIFIED a', 'ADDED c', 'DELETED b'],
    );
    assert.deepEqual([...w.store.keys()].sort(), ['argocd/a', 'argocd/c']);
    assert.equal(w.store.get('argocd/a')?.kind, 'ConfigMap', 'items get their kind');
  } finally {
    await w.stop();
    await control.close();
    server.closeAllConnections();
    server.close();
  }
});
