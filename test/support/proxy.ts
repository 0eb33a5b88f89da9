// An HTTP CONNECT proxy on loopback for the repository tests (issue 13): it tunnels to whatever
// target it is asked for and writes down each target, so a test can tell a request that went through
// the proxy (`proxy`) from one that went straight to the server (`noProxy`).
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TestProxy {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The `host:port` of every CONNECT so far, oldest first. */
  connects(): string[];
  close(): Promise<void>;
}

export async function startProxy(): Promise<TestProxy> {
  const connects: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((_req, res) => {
    res.writeHead(405);
    res.end('CONNECT only');
  });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const target = req.url ?? '';
    connects.push(target);
    const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
    const upstream = net.connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connects: () => [...connects],
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
