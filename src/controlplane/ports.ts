// Free TCP ports on the loopback interface. The ports are released before the servers bind them,
// so another process may take one in between: callers retry when a bind fails.
import { createServer } from 'node:net';
import type { Server } from 'node:net';

export async function freeLoopbackPorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    // All are held open together, so the ports are distinct.
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
      const address = server.address();
      if (address === null || typeof address === 'string')
        throw new Error('could not read the address of a loopback listener');
      ports.push(address.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}
