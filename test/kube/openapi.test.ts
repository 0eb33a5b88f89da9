// kube/openapi.ts's cache of OpenAPI v3 documents: the index read again when older than a few
// seconds, a document read again only when the index names a new URL (a CRD's schema changed), a
// bounded number kept, concurrent askers sharing one request. The fetch is scripted (pure cache
// logic); the real API server's documents are read in test/e2e/semantics-webhook.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OpenApiCache } from '../../src/kube/openapi.ts';
import type { KubeResult, RawRequest } from '../../src/kube/types.ts';

function server(paths: Record<string, string>) {
  const asked: string[] = [];
  const fetch = async (req: RawRequest): Promise<KubeResult<unknown>> => {
    const q = new URLSearchParams(req.query as Record<string, string>).toString();
    asked.push(q ? `${req.path}?${q}` : req.path);
    await new Promise((r) => setImmediate(r));
    if (req.path === '/openapi/v3')
      return {
        ok: true,
        value: { paths: Object.fromEntries(Object.entries(paths).map(([k, v]) => [k, { serverRelativeURL: v }])) },
        warnings: [],
      };
    return { ok: true, value: { components: { schemas: { from: `${req.path}?${q}` } } }, warnings: [] };
  };
  return { fetch, asked, paths };
}

test('a document is read once per URL; the index names a new one when its hash changes', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const s = server({ 'apis/apps/v1': '/openapi/v3/apis/apps/v1?hash=A', 'api/v1': '/openapi/v3/api/v1?hash=C' });
  const cache = new OpenApiCache();
  const [a, b] = await Promise.all([cache.document(s.fetch, 'apps/v1'), cache.document(s.fetch, 'apps/v1')]);
  assert.ok(a.ok && b.ok);
  assert.equal(a.value, b.value, 'concurrent askers share one answer');
  assert.deepEqual(s.asked, ['/openapi/v3', '/openapi/v3/apis/apps/v1?hash=A']);
  const core = await cache.document(s.fetch, 'v1');
  assert.ok(core.ok && core.value.url === '/openapi/v3/api/v1?hash=C');
  // Within 5 s nothing is asked again; after, the index is, and a changed hash is a new document.
  s.paths['apis/apps/v1'] = '/openapi/v3/apis/apps/v1?hash=B';
  await cache.document(s.fetch, 'apps/v1');
  assert.equal(s.asked.length, 3);
  t.mock.timers.tick(5_001);
  const fresh = await cache.document(s.fetch, 'apps/v1');
  assert.ok(fresh.ok && fresh.value.url === '/openapi/v3/apis/apps/v1?hash=B');
  assert.deepEqual(s.asked.slice(3), ['/openapi/v3', '/openapi/v3/apis/apps/v1?hash=B']);
});

test('a group-version the index does not name is a 404; at most 64 documents are kept', async () => {
  const paths: Record<string, string> = {};
  for (let i = 0; i < 70; i++) paths[`apis/g${i}.example.com/v1`] = `/openapi/v3/apis/g${i}.example.com/v1?hash=${i}`;
  const s = server(paths);
  const cache = new OpenApiCache();
  const missing = await cache.document(s.fetch, 'nope.example.com/v1');
  assert.ok(!missing.ok && missing.error.code === 404);
  for (let i = 0; i < 70; i++) assert.ok((await cache.document(s.fetch, `g${i}.example.com/v1`)).ok);
  const reads = s.asked.filter((p) => p !== '/openapi/v3').length;
  await cache.document(s.fetch, 'g69.example.com/v1'); // kept
  await cache.document(s.fetch, 'g0.example.com/v1'); // dropped, the least recently used
  assert.deepEqual(s.asked.filter((p) => p !== '/openapi/v3').slice(reads), [
    '/openapi/v3/apis/g0.example.com/v1?hash=0',
  ]);
});
