// /healthz (the process answers), /readyz (caches synced; the readiness check decides) and
// /metrics (Prometheus text) on one port.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

export interface HealthOptions {
  port: number;
  host?: string;
  registry: Registry;
  /** Empty string when ready; otherwise why not. */
  readiness: () => string;
}

export async function startHealthServer(opts: HealthOptions): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const why = opts.readiness();
      if (why === '') res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
      else res.writeHead(503, { 'Content-Type': 'text/plain' }).end(`not ready: ${why}\n`);
    } else if (path === '/metrics') {
      opts.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': opts.registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${String(err)}\n`),
      );
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
