// The controller's own connection to its control cluster (where Applications, AppProjects,
// argocd-cm and cluster Secrets live): raw HTTP(S) requests authenticated from a KubeConfig.
// Raw JSON rather than client-node's typed API, whose serializer drops fields it does not know
// (Application status, operation). Never handed to sync/ or source/: destination work goes through
// the DestinationClient built for the Application's identity (ARCHITECTURE.md, the identity rule).
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';

export interface ApiResponse {
  status: number;
  body: unknown;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  /** Seconds before a request without response is abandoned; none for watches. */
  timeoutMs?: number;
}

/** A failed API call: carries the HTTP status and the API server's Status message. */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  constructor(method: string, path: string, status: number, body: unknown, text: string) {
    const st = body as { message?: string; reason?: string } | null;
    super(`${method} ${path}: ${status} ${st?.message ?? text.slice(0, 300)}`);
    this.name = 'ApiError';
    this.status = status;
    this.reason = st?.reason ?? '';
  }
}

export class KubeApi {
  readonly kc: KubeConfig;
  /** Called after each request with its HTTP status (metrics). */
  onResponse: ((method: string, status: number) => void) | undefined;

  constructor(kc: KubeConfig) {
    this.kc = kc;
  }

  server(): string {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    return cluster.server;
  }

  private async open(method: string, path: string, opts: RequestOptions): Promise<IncomingMessage> {
    const url = new URL(this.server().replace(/\/+$/, '') + path);
    const reqOpts: https.RequestOptions = {
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      headers: { Accept: 'application/json' },
    };
    await this.kc.applyToHTTPSOptions(reqOpts);
    const payload =
      opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    if (payload !== undefined) {
      (reqOpts.headers as Record<string, string>)['Content-Type'] = opts.contentType ?? 'application/json';
      (reqOpts.headers as Record<string, string | number>)['Content-Length'] = Buffer.byteLength(payload);
    }
    const lib = url.protocol === 'http:' ? http : https;
    if (url.protocol === 'http:') delete reqOpts.agent;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = lib.request({ ...reqOpts, signal: opts.signal }, resolve);
      req.on('error', reject);
      if (opts.timeoutMs !== undefined) {
        req.setTimeout(opts.timeoutMs, () =>
          req.destroy(new Error(`${method} ${path}: no response after ${opts.timeoutMs} ms`)),
        );
      }
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /** One request; the body is parsed as JSON when it is JSON. Non-2xx is returned, not thrown. */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse> {
    const res = await this.open(method, path, { timeoutMs: 30_000, ...opts });
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown = undefined;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    const status = res.statusCode ?? 0;
    this.onResponse?.(method, status);
    return { status, body, text };
  }

  /** Like request, but a non-2xx status throws an ApiError. */
  async call(method: string, path: string, opts: RequestOptions = {}): Promise<unknown> {
    const res = await this.request(method, path, opts);
    if (res.status < 200 || res.status >= 300) throw new ApiError(method, path, res.status, res.body, res.text);
    return res.body;
  }

  /** A streaming GET (watches): the caller reads and closes the response. */
  async stream(path: string, signal: AbortSignal): Promise<IncomingMessage> {
    const res = await this.open('GET', path, { signal });
    this.onResponse?.('WATCH', res.statusCode ?? 0);
    return res;
  }
}
