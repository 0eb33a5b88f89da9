// Argo CD's cache written to a real redis-server on loopback (Debian's; test/support/redis.ts):
// the keys and values argocd-server reads, the message its tree stream waits for, the expirations,
// Argo CD's options (password, database, prefix, no compression, TLS with a CA and a client
// certificate, a sentinel), and a Redis that is down: nothing waits for it, the failure is counted
// and the values are written once it is back.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { ArgoCacheWriter } from '../../src/argocd-cache/writer.ts';
import { resolveRedisOptions } from '../../src/argocd-cache/options.ts';
import type { RedisConfig, RedisFlags } from '../../src/argocd-cache/options.ts';
import type { ApplicationTree, ClusterInfo, ResourceDiff } from '../../src/argocd-cache/types.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { startRedis } from '../support/redis.ts';
import { testCA } from '../support/tls.ts';

const tree: ApplicationTree = {
  nodes: [
    { group: 'apps', version: 'v1', kind: 'Deployment', namespace: 'tenant', name: 'web', uid: 'u1' },
    { group: 'apps', version: 'v1', kind: 'ReplicaSet', namespace: 'tenant', name: 'web-1', uid: 'u2' },
    { version: 'v1', kind: 'Pod', namespace: 'tenant', name: 'web-1-a', uid: 'u3' },
  ],
};
const managed: ResourceDiff[] = [
  { group: 'apps', kind: 'Deployment', namespace: 'tenant', name: 'web', liveState: '{}', targetState: '{}' },
];
const cluster: ClusterInfo = {
  connectionState: { status: 'Successful', message: '', attemptedAt: '2026-12-02T01:00:00Z' },
  serverVersion: 'v1.34.3',
  cacheInfo: {},
  applicationsCount: 1,
};

function config(flags: RedisFlags, env: Record<string, string> = {}): RedisConfig {
  const r = resolveRedisOptions({ flags, env });
  assert.ok(r.enabled, JSON.stringify(r));
  return r.config;
}

function writer(c: RedisConfig, lines: string[] = []) {
  const registry = new Registry();
  const sink = new Writable({
    write(chunk, _e, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { w: new ArgoCacheWriter(c, { logger: createLogger({ level: 'debug' }, sink), registry }), registry };
}

const write = (instance: string) => ({
  instance,
  build: async () => ({ tree, managed }),
  cluster: { server: 'https://kubernetes.default.svc', info: async () => cluster },
});

test("an Application's tree, managed resources and cluster info: Argo CD's keys, gzip JSON, expirations and the update message", async () => {
  const redis = await startRedis();
  const { w } = writer(config({ redis: redis.address }));
  try {
    const sub = redis.client();
    const messages: string[] = [];
    sub.on('message', (channel: string) => messages.push(channel));
    await sub.subscribe('app|managed-resources|guestbook|1.8.3');
    w.submit(write('guestbook'));
    await w.idle();
    const c = redis.client();
    const keys = (await c.keys('*')).sort();
    assert.deepEqual(keys, [
      'app|managed-resources|guestbook|1.8.3.gz',
      'app|resources-tree|guestbook|1.8.3.gz',
      'cluster|info|https://kubernetes.default.svc|1.8.3.gz',
    ]);
    const got = JSON.parse(
      gunzipSync((await c.getBuffer('app|resources-tree|guestbook|1.8.3.gz')) as Buffer).toString(),
    );
    assert.deepEqual(
      got.nodes.map((n: { kind: string }) => n.kind),
      // Normalize's order: by group/kind/namespace/name, the core group ('') first.
      ['Pod', 'Deployment', 'ReplicaSet'],
    );
    const diffs = JSON.parse(
      gunzipSync((await c.getBuffer('app|managed-resources|guestbook|1.8.3.gz')) as Buffer).toString(),
    );
    assert.equal(diffs[0].name, 'web');
    const ttl = await c.pttl('app|resources-tree|guestbook|1.8.3.gz');
    assert.ok(ttl > 3_500_000 && ttl <= 3_600_000, `an hour (ARGOCD_APP_STATE_CACHE_EXPIRATION's default): ${ttl}`);
    const clusterTtl = await c.pttl('cluster|info|https://kubernetes.default.svc|1.8.3.gz');
    assert.ok(clusterTtl > 500_000 && clusterTtl <= 600_000, `ten minutes: ${clusterTtl}`);
    const end = Date.now() + 5000;
    while (messages.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(messages, ['app|managed-resources|guestbook|1.8.3']);
  } finally {
    await w.close();
    await redis.stop();
  }
});

test('one write per Application at a time: a slow older write never lands after a newer one', async () => {
  const redis = await startRedis();
  const { w } = writer(config({ redis: redis.address }));
  try {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const named = (name: string): ApplicationTree => ({
      nodes: [{ group: 'apps', version: 'v1', kind: 'Deployment', namespace: 'tenant', name, uid: name }],
    });
    // The older refresh's build is still listing when the newer one is submitted.
    w.submit({ instance: 'guestbook', build: async () => (await held, { tree: named('old'), managed }) });
    await new Promise((r) => setTimeout(r, 50));
    w.submit({ instance: 'guestbook', build: async () => ({ tree: named('new'), managed }) });
    await new Promise((r) => setTimeout(r, 200));
    release();
    await w.idle();
    const got = JSON.parse(
      gunzipSync((await redis.client().getBuffer('app|resources-tree|guestbook|1.8.3.gz')) as Buffer).toString(),
    );
    assert.deepEqual(
      got.nodes.map((n: { name: string }) => n.name),
      ['new'],
    );
  } finally {
    await w.close();
    await redis.stop();
  }
});

test('a password, a database, a key prefix, no compression and shards, as Argo CD takes them', async () => {
  const redis = await startRedis({ password: 's3cret' });
  const c = config(
    { redis: redis.address, redisdb: '3', redisCompress: 'none' },
    { REDIS_PASSWORD: 's3cret', ARGOCD_REDIS_KEY_PREFIX: 'team-a:', ARGOCD_APPLICATION_TREE_SHARD_SIZE: '2' },
  );
  const { w } = writer(c);
  try {
    w.submit(write('guestbook'));
    await w.idle();
    const client = redis.client();
    await client.select(3);
    assert.deepEqual((await client.keys('*')).sort(), [
      'team-a:app|managed-resources|guestbook|1.8.3',
      'team-a:app|resources-tree|guestbook|1.8.3',
      'team-a:app|resources-tree|guestbook|1|1.8.3',
      'team-a:cluster|info|https://kubernetes.default.svc|1.8.3',
    ]);
    const first = JSON.parse((await client.get('team-a:app|resources-tree|guestbook|1.8.3')) as string);
    assert.equal(first.shardsCount, 2);
    assert.equal(first.nodes.length, 2);
  } finally {
    await w.close();
    await redis.stop();
  }
});

test('TLS: the server checked against --redis-ca-certificate, a client certificate where the server asks for one', async () => {
  const ca = testCA();
  const redis = await startRedis({ tls: { cert: ca.cert, key: ca.key, ca: ca.caCert, requireClientCert: true } });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'impersync-redis-tls-'));
  const files = { ca: path.join(dir, 'ca.pem'), cert: path.join(dir, 'client.pem'), key: path.join(dir, 'client.key') };
  await writeFile(files.ca, ca.caCert);
  await writeFile(files.cert, ca.clientCert);
  await writeFile(files.key, ca.clientKey);
  const { w } = writer(
    config({
      redis: redis.address,
      redisUseTls: true,
      redisCaCertificate: files.ca,
      redisClientCertificate: files.cert,
      redisClientKey: files.key,
    }),
  );
  // Without the CA the server's certificate is refused: nothing is written.
  const lines: string[] = [];
  const { w: untrusting, registry } = writer(config({ redis: redis.address, redisUseTls: true }), lines);
  try {
    w.submit(write('guestbook'));
    await w.idle();
    const admin = new (await import('ioredis')).Redis({
      host: '127.0.0.1',
      port: redis.port,
      tls: { ca: ca.caCert, cert: ca.clientCert, key: ca.clientKey },
      maxRetriesPerRequest: 1,
    });
    try {
      assert.ok(await admin.exists('app|resources-tree|guestbook|1.8.3.gz'));
      untrusting.submit(write('other'));
      const end = Date.now() + 15_000;
      while (
        !(await registry.getSingleMetricAsString('impersync_argocd_cache_writes_total')).includes('result="error"')
      )
        if (Date.now() > end) assert.fail('no failed write counted');
        else await new Promise((r) => setTimeout(r, 100));
      assert.equal(await admin.exists('app|resources-tree|other|1.8.3.gz'), 0);
      assert.ok(
        lines.some((l) => /certificate/i.test(l)),
        lines.join(''),
      );
    } finally {
      admin.disconnect();
    }
  } finally {
    await w.close();
    await untrusting.close();
    await redis.stop();
  }
});

test('a sentinel: the master it names is written to (--sentinel, --sentinelmaster)', async () => {
  const master = await startRedis();
  const sentinel = await startRedis({ sentinelOf: { host: '127.0.0.1', port: master.port, name: 'argocd' } });
  const { w } = writer(config({ sentinel: [sentinel.address], sentinelmaster: 'argocd' }));
  try {
    w.submit(write('guestbook'));
    await w.idle();
    assert.ok(await master.client().exists('app|resources-tree|guestbook|1.8.3.gz'));
  } finally {
    await w.close();
    await sentinel.stop();
    await master.stop();
  }
});

test('a Redis that is down stalls nothing: the failure is logged and counted, and the values are written once it is back', async () => {
  const first = await startRedis();
  const port = first.port;
  await first.stop();
  const lines: string[] = [];
  const { w, registry } = writer(config({ redis: `127.0.0.1:${port}` }), lines);
  try {
    const started = Date.now();
    w.submit(write('guestbook'));
    assert.ok(Date.now() - started < 50, 'submit returns at once');
    const end = Date.now() + 20_000;
    while (!(await registry.getSingleMetricAsString('impersync_argocd_cache_writes_total')).includes('result="error"'))
      if (Date.now() > end) assert.fail('no failed write counted');
      else await new Promise((r) => setTimeout(r, 100));
    assert.ok(
      lines.some((l) => l.includes('Redis refused or cannot be reached')),
      lines.join(''),
    );
    // Back on the same port: the latest values are retried and land.
    const again = await startRedis({ port });
    try {
      const until = Date.now() + 30_000;
      while (!(await again.client().exists('app|resources-tree|guestbook|1.8.3.gz')))
        if (Date.now() > until) assert.fail('not written after Redis came back');
        else await new Promise((r) => setTimeout(r, 200));
    } finally {
      await again.stop();
    }
  } finally {
    await w.close();
  }
});
