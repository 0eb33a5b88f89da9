// A real redis-server on loopback for the tests of Argo CD's cache: Debian's binary, found as
// scripts/redis-server finds it (IMPERSYNC_REDIS_SERVER, which scripts/run-tests.mjs exports, or
// PATH), one server per call with its own folder, no persistence; optionally TLS-only, with a
// password, or as a sentinel watching another server.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freeLoopbackPorts } from '../../src/controlplane/ports.ts';

export function redisServerBinary(): string {
  const given = process.env['IMPERSYNC_REDIS_SERVER'];
  if (given && existsSync(given)) return given;
  const found = spawnSync('bash', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  throw new Error(
    'redis-server is missing: apt-get install redis-server (Debian), run scripts/redis-server, or set IMPERSYNC_REDIS_SERVER to its path',
  );
}

export interface TestRedis {
  port: number;
  address: string;
  /** A client of this server (closed by stop()). */
  client(): Redis;
  stop(): Promise<void>;
}

export interface RedisServerOptions {
  password?: string;
  /** TLS only (no plain port): the server's certificate, key and the CA clients are checked against. */
  tls?: { cert: string; key: string; ca: string; requireClientCert?: boolean };
  /** Run as a sentinel of this master (`mymaster`). */
  sentinelOf?: { host: string; port: number; name: string };
  /** This port rather than a free one (a server started again where another was). */
  port?: number;
}

export async function startRedis(opts: RedisServerOptions = {}): Promise<TestRedis> {
  const bin = redisServerBinary();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'impersync-redis-'));
  const port = opts.port ?? ((await freeLoopbackPorts(1)) as [number])[0];
  const lines = [`bind 127.0.0.1`, `dir ${dir}`, `save ""`, `appendonly no`, `protected-mode no`];
  if (opts.tls) {
    await writeFile(path.join(dir, 'server.pem'), opts.tls.cert);
    await writeFile(path.join(dir, 'server.key'), opts.tls.key);
    await writeFile(path.join(dir, 'ca.pem'), opts.tls.ca);
    lines.push(
      'port 0',
      `tls-port ${port}`,
      `tls-cert-file ${path.join(dir, 'server.pem')}`,
      `tls-key-file ${path.join(dir, 'server.key')}`,
      `tls-ca-cert-file ${path.join(dir, 'ca.pem')}`,
      `tls-auth-clients ${opts.tls.requireClientCert ? 'yes' : 'no'}`,
    );
  } else lines.push(`port ${port}`);
  if (opts.password) lines.push(`requirepass ${opts.password}`);
  if (opts.sentinelOf)
    lines.push(
      `sentinel monitor ${opts.sentinelOf.name} ${opts.sentinelOf.host} ${opts.sentinelOf.port} 1`,
      `sentinel resolve-hostnames yes`,
    );
  const conf = path.join(dir, 'redis.conf');
  await writeFile(conf, lines.join('\n') + '\n');
  const args = opts.sentinelOf ? [conf, '--sentinel'] : [conf];
  const child: ChildProcess = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const clients: Redis[] = [];
  const stop = async () => {
    for (const c of clients) c.disconnect();
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  const end = Date.now() + 15_000;
  while (!/Ready to accept connections|Sentinel ID is/.test(output)) {
    if (child.exitCode !== null || Date.now() > end) {
      await stop();
      throw new Error(`redis-server did not start (${bin} ${args.join(' ')}): ${output.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    address: `127.0.0.1:${port}`,
    client: () => {
      const c = new Redis({
        host: '127.0.0.1',
        port,
        ...(opts.password ? { password: opts.password } : {}),
        ...(opts.tls ? { tls: { ca: opts.tls.ca } } : {}),
        maxRetriesPerRequest: 1,
      });
      clients.push(c);
      return c;
    },
    stop,
  };
}
