// A plain HTTP server on 127.0.0.1 that records every request it gets and answers each with what
// the test says: the stand-in for an internal address a hostile chart points the renderer at, so
// that a test can say "this server received no request at all", or what leaked from its answer.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordingServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `127.0.0.1:<port>` */
  host: string;
  /** The path and query of every request, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** Answers each request with `answer(path)` (status 200 unless said), default 404. */
export async function startRecordingServer(
  answer: (path: string) => { status?: number; body: string | Buffer } | undefined = () => undefined,
): Promise<RecordingServer> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const p = req.url ?? '/';
    requests.push(p);
    const a = answer(new URL(p, 'http://x').pathname);
    res.writeHead(a ? (a.status ?? 200) : 404);
    res.end(a?.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `http://${host}`,
    host,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
