// The Redis options of Argo CD's application controller (src/argocd-cache/options.ts): flags win
// over Argo CD's variables, which win over argocd-cmd-params-cm's keys; off without a Redis.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseGoDuration, resolveRedisOptions } from '../../src/argocd-cache/options.ts';
import { redisFlags } from '../../src/cli/run.ts';

test('no --redis, REDIS_SERVER, redis.server or sentinel: no cache is written', () => {
  assert.deepEqual(resolveRedisOptions({ env: {} }), { enabled: false, warnings: [] });
});

test('a flag, then the variable, then the key; Argo CD defaults for the rest', () => {
  const data = {
    'redis.server': 'from-key:6379',
    'redis.db': '2',
    'redis.compression': 'none',
    'redis.key.prefix': 'p:',
  };
  const key = resolveRedisOptions({ env: {}, data });
  assert.ok(key.enabled);
  assert.equal(key.config.address, 'from-key:6379');
  assert.equal(key.config.db, 2);
  assert.equal(key.config.compression, 'none');
  assert.equal(key.config.prefix, 'p:');
  assert.equal(key.config.sentinelMaster, 'master');
  assert.equal(key.config.appStateExpirationMs, 3_600_000);
  assert.equal(key.config.maxRetries, 3);
  const env = resolveRedisOptions({
    env: { REDIS_SERVER: 'from-env:6379', REDIS_PASSWORD: 'pw', REDIS_USERNAME: 'u' },
    data,
  });
  assert.ok(env.enabled);
  assert.equal(env.config.address, 'from-env:6379');
  assert.deepEqual([env.config.username, env.config.password], ['u', 'pw']);
  const flag = resolveRedisOptions({
    flags: { redis: 'argocd-redis:6379', redisCompress: 'gzip' },
    env: { REDIS_SERVER: 'x:1' },
    data,
  });
  assert.ok(flag.enabled);
  assert.equal(flag.config.address, 'argocd-redis:6379');
  assert.equal(flag.config.compression, 'gzip');
});

test('sentinels from the flag or REDIS_SENTINEL_HOSTS (comma-separated), with the master group', () => {
  const r = resolveRedisOptions({
    env: { REDIS_SENTINEL_HOSTS: 'a:26379, b:26379', REDIS_SENTINEL_MASTER: 'argocd' },
  });
  assert.ok(r.enabled);
  assert.deepEqual(r.config.sentinels, [
    { host: 'a', port: 26379 },
    { host: 'b', port: 26379 },
  ]);
  assert.equal(r.config.sentinelMaster, 'argocd');
  assert.equal(r.config.address, undefined);
});

test("unusable settings: Argo CD's error, and the cache stays off rather than the controller", () => {
  const bad = resolveRedisOptions({ env: { REDIS_SERVER: 'r:6379', REDIS_COMPRESSION: 'zstd' } });
  assert.deepEqual(bad, { enabled: false, error: 'unknown compression type: zstd', warnings: [] });
  const noPort = resolveRedisOptions({ env: { REDIS_SERVER: 'argocd-redis' } });
  assert.ok('error' in noPort && /host:port/.test(noPort.error));
  const db = resolveRedisOptions({ env: { REDIS_SERVER: 'r:6379', REDISDB: '-1' } });
  assert.ok(db.enabled);
  assert.equal(db.config.db, 0);
  assert.match(db.warnings[0] ?? '', /REDISDB/);
  const tls = resolveRedisOptions({
    flags: { redis: 'r:6379', redisUseTls: true, redisClientCertificate: 'c.pem' },
    env: {},
  });
  assert.ok('error' in tls && /go together/.test(tls.error));
});

test("`impersync run`'s flags: a compression, database or duration that cannot be used is refused", () => {
  assert.equal(redisFlags({ 'redis-compress': 'lz4' }), "--redis-compress must be gzip or none, not 'lz4'");
  assert.equal(redisFlags({ redisdb: 'one' }), "--redisdb must be a whole number, not 'one'");
  assert.match(String(redisFlags({ 'app-state-cache-expiration': 'soon' })), /duration/);
  const ok = redisFlags({ redis: 'argocd-redis:6379', sentinel: ['a:1', 'b:2'], 'redis-use-tls': true });
  assert.ok(typeof ok !== 'string');
  assert.deepEqual(ok.sentinel, ['a:1', 'b:2']);
  assert.equal(ok.redisUseTls, true);
});

test("Go's durations", () => {
  assert.equal(parseGoDuration('1h'), 3_600_000);
  assert.equal(parseGoDuration('1h30m'), 5_400_000);
  assert.equal(parseGoDuration('1.5h'), 5_400_000);
  assert.equal(parseGoDuration('45s'), 45_000);
  assert.equal(parseGoDuration('0'), 0);
  assert.equal(parseGoDuration('10'), undefined);
  assert.equal(parseGoDuration(''), undefined);
});
