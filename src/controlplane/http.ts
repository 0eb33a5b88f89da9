// A minimal HTTPS client for the local API server: enough to wait for readiness and install CRDs
// without a Kubernetes client library, and a base for raw requests (server-side apply) in tests.
import https from 'node:https';

export type Endpoint = { server: string; caPem: string; token: string };

export type HttpResponse = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
};

export type HttpRequest = {
  method?: string;
  /** Path and query, e.g. '/api/v1/namespaces?limit=1'. */
  path: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs?: number;
};

/** Sends one request with the TLS and auth settings in `base` (e.g. from KubeConfig.applyToHTTPSOptions). */
export function sendRequest(server: string, base: https.RequestOptions, req: HttpRequest): Promise<HttpResponse> {
  const url = new URL(req.path, server);
  const headers: Record<string, string> = {
    accept: 'application/json',
    ...(base.headers as Record<string, string> | undefined),
    ...req.headers,
  };
  if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
  return new Promise((resolve, reject) => {
    const request = https.request(
      url,
      { ...base, method: req.method ?? 'GET', headers, timeout: req.timeoutMs ?? 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`${req.method ?? 'GET'} ${url.href} timed out`)));
    request.on('error', reject);
    if (req.body !== undefined) request.write(req.body);
    request.end();
  });
}

export function endpointOptions(endpoint: Endpoint): https.RequestOptions {
  return { ca: endpoint.caPem, headers: { authorization: `Bearer ${endpoint.token}` }, agent: false };
}

export function request(endpoint: Endpoint, req: HttpRequest): Promise<HttpResponse> {
  return sendRequest(endpoint.server, endpointOptions(endpoint), req);
}

/** The message of a Kubernetes Status body, or the raw text. */
export function statusMessage(res: HttpResponse): string {
  try {
    const body = JSON.parse(res.text) as { message?: unknown };
    if (typeof body.message === 'string') return body.message;
  } catch {
    // not JSON
  }
  return res.text.trim().slice(0, 500);
}
