import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/observability/logger.ts';
import { createMetrics, rendererRequestMetrics } from '../../src/observability/metrics.ts';
import { startHealthServer } from '../../src/observability/health.ts';

function capture(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(c, _e, cb) {
      chunks.push(String(c));
      cb();
    },
  });
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

test('the logger writes JSON and redacts tokens, certificates, Secret data and auth headers', () => {
  const out = capture();
  const log = createLogger({ level: 'info' }, out.stream);
  log.info(
    {
      application: 'argocd/guestbook',
      cluster: { config: { bearerToken: 'tok', tlsClientConfig: { caData: 'CA' } }, password: 'pw' },
      secret: { data: { config: 'e30=' } },
      headers: { authorization: 'Bearer x' },
      token: 't',
    },
    'hello',
  );
  log.debug('not shown at info');
  const [line, ...rest] = out.lines();
  assert.equal(rest.length, 0);
  assert.ok(line);
  assert.equal(line['msg'], 'hello');
  assert.equal(line['level'], 'info');
  assert.equal(line['application'], 'argocd/guestbook');
  const text = JSON.stringify(line);
  for (const secret of ['"tok"', '"CA"', 'pw', 'e30=', 'Bearer x', '"t"'])
    assert.ok(!text.includes(secret), `${secret} leaked: ${text}`);
  assert.equal((line['headers'] as Record<string, unknown>)['authorization'], '[REDACTED]');
});

test('health server answers /healthz, /readyz by readiness, /metrics with the registry', async () => {
  const metrics = createMetrics();
  metrics.syncs.inc({ phase: 'Succeeded' });
  metrics.identityDecisions.inc({ outcome: 'impersonate' }, 2);
  let why = 'caches not synced';
  const server = await startHealthServer({
    port: 0,
    host: '127.0.0.1',
    registry: metrics.registry,
    readiness: () => why,
  });
  try {
    const base = `http://127.0.0.1:${server.port}`;
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    const notReady = await fetch(`${base}/readyz`);
    assert.equal(notReady.status, 503);
    assert.match(await notReady.text(), /caches not synced/);
    why = '';
    assert.equal((await fetch(`${base}/readyz`)).status, 200);
    const text = await (await fetch(`${base}/metrics`)).text();
    assert.match(text, /impersync_syncs_total\{phase="Succeeded"\} 1/);
    assert.match(text, /impersync_identity_decisions_total\{outcome="impersonate"\} 2/);
    assert.equal((await fetch(`${base}/nope`)).status, 404);
  } finally {
    await server.close();
  }
});

test("renderer requests are counted per replica, and a replica's series go when it does", async () => {
  const metrics = createMetrics();
  const hooks = rendererRequestMetrics(metrics);
  hooks.onChange(['http://10.0.0.1:8081', 'http://10.0.0.2:8081']);
  hooks.onRequest('http://10.0.0.1:8081', 'render', 'ok');
  hooks.onRequest('http://10.0.0.1:8081', 'render', 'ok');
  hooks.onRequest('http://10.0.0.2:8081', 'resolve', 'unreachable');
  let text = await metrics.registry.metrics();
  assert.match(
    text,
    /impersync_renderer_requests_total\{replica="http:\/\/10\.0\.0\.1:8081",request="render",outcome="ok"\} 2/,
  );
  assert.match(
    text,
    /impersync_renderer_requests_total\{replica="http:\/\/10\.0\.0\.2:8081",request="resolve",outcome="unreachable"\} 1/,
  );
  assert.match(text, /impersync_renderer_replicas 2/);
  // 10.0.0.2's Pod replaced by 10.0.0.3: its series are dropped, 10.0.0.1's kept.
  hooks.onChange(['http://10.0.0.1:8081', 'http://10.0.0.3:8081']);
  text = await metrics.registry.metrics();
  assert.doesNotMatch(text, /10\.0\.0\.2/);
  assert.match(text, /replica="http:\/\/10\.0\.0\.1:8081",request="render",outcome="ok"\} 2/);
  assert.match(text, /impersync_renderer_replicas 2/);
});
