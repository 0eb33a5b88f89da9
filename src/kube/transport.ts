// One keep-alive connection pool per API server and credential (undici Agent with that server's
// TLS settings), so a reconcile reuses connections instead of paying for a TLS handshake per
// request. The pool is shared by every identity on that cluster: impersonation is a per-request
// header, not a property of the connection. Every request to every API server goes through here,
// the control cluster's (control.ts) as well as destinations': timeouts, GOAWAY retries, errors as
// values and the metrics hook are in this one place.
import { Agent, request } from 'undici';
import type { Credential } from './credentials.ts';
import { errorFromException, localError } from './errors.ts';
import type { ExecCredentials } from './exec-credential.ts';
import type { KubeError } from './types.ts';

export interface HttpResponse {
  status: number;
  body: string;
  warnings: string | string[] | undefined;
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path and query string, starting with `/`. */
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Abandons the request (a watch's list when the watch is stopped). */
  signal?: AbortSignal | undefined;
  /** Abandons the request when no answer came within this long (default: 60 s for the headers). */
  timeoutMs?: number | undefined;
}

/** Who a request went out as: an impersonated ServiceAccount, or the credential itself. */
export type RequestIdentity = 'serviceaccount' | 'controller';

/** Called once per request with its HTTP status (0: no answer), for metrics: who, which server, what. */
export type ResponseHook = (
  code: number,
  identity: RequestIdentity,
  request: { server: string; method: HttpRequest['method']; path: string },
) => void;

export interface TransportOptions {
  onResponse?: ResponseHook | undefined;
}

// Long enough to span the requests of one reconcile; the API server closes idle connections itself.
const KEEP_ALIVE_MS = 60_000;
const HEADERS_TIMEOUT_MS = 60_000;
const CONNECT_TIMEOUT_MS = 10_000;
const GOAWAY_ATTEMPTS = 8;

export class Transport {
  readonly server: string;
  readonly #credential: Credential;
  readonly #agent: Agent;
  readonly #onResponse: ResponseHook | undefined;
  // A credential plugin's client certificate needs a pool of its own; replaced when it rotates.
  #certAgent: { cert: string; agent: Agent } | undefined;

  constructor(credential: Credential, opts: TransportOptions = {}) {
    this.server = credential.server;
    this.#credential = credential;
    this.#onResponse = opts.onResponse;
    this.#agent = this.#newAgent(credential.cert, credential.key);
  }

  #newAgent(cert: string | undefined, key: string | undefined): Agent {
    const credential = this.#credential;
    const connect: Record<string, unknown> = { timeout: CONNECT_TIMEOUT_MS };
    if (credential.ca) connect['ca'] = credential.ca;
    if (cert) connect['cert'] = cert;
    if (key) connect['key'] = key;
    if (credential.insecure) connect['rejectUnauthorized'] = false;
    if (credential.serverName) connect['servername'] = credential.serverName;
    return new Agent({
      connect,
      keepAliveTimeout: KEEP_ALIVE_MS,
      keepAliveMaxTimeout: KEEP_ALIVE_MS,
      headersTimeout: HEADERS_TIMEOUT_MS,
      bodyTimeout: HEADERS_TIMEOUT_MS,
    });
  }

  /**
   * How one request authenticates: the header and the pool, and the plugin's credentials it used
   * (told of a 401), or the KubeError of a plugin that could not give any.
   */
  async #auth(): Promise<{ header: string | undefined; agent: Agent; used?: ExecCredentials } | KubeError> {
    const exec = this.#credential.exec;
    if (!exec) return { header: await this.#authorization(), agent: this.#agent };
    let used: ExecCredentials;
    try {
      used = await exec.get();
    } catch (err) {
      return localError('ExecCredentialError', `${this.server}: getting credentials: ${(err as Error).message}`);
    }
    let agent = this.#agent;
    if (used.cert && used.key) {
      if (this.#certAgent?.cert !== used.cert) {
        // client-go closes every connection when the certificate rotates.
        void this.#certAgent?.agent.close();
        this.#certAgent = { cert: used.cert, agent: this.#newAgent(used.cert, used.key) };
      }
      agent = this.#certAgent.agent;
    }
    return { header: used.token ? `Bearer ${used.token}` : undefined, agent, used };
  }

  #answered(status: number, used: ExecCredentials | undefined): void {
    if (status === 401 && used) this.#credential.exec?.unauthorized(used);
  }

  async #authorization(): Promise<string | undefined> {
    const c = this.#credential;
    if (c.authorization) {
      const fresh = await c.authorization();
      if (fresh) return fresh;
    }
    if (c.bearerToken) return `Bearer ${c.bearerToken}`;
    if (c.basic) return `Basic ${Buffer.from(`${c.basic.username}:${c.basic.password}`).toString('base64')}`;
    return undefined;
  }

  /** Sends one request; a network failure comes back as a KubeError value, never a throw. */
  async send(req: HttpRequest): Promise<HttpResponse | KubeError> {
    // An HTTP/2 GOAWAY ends the streams still open on that connection without an answer. The API
    // server sends one with every 401 (it closes connections that fail to authenticate), so with a
    // bad credential each of several requests in flight on a connection but one is cut off, again
    // on the next connection. The cut-off ones were not processed: asking again on a fresh
    // connection gets the server's real answer (401, 200...). Every method we send but POST is
    // idempotent (server-side apply, GET, DELETE), so those are asked again, a few times.
    for (let attempt = 1; ; attempt++) {
      const res = await this.#sendOnce(req);
      // A request its caller abandoned (a stopped watch's list) had no answer to count.
      if (isHttpResponse(res) || !req.signal?.aborted)
        this.#count(isHttpResponse(res) ? res.status : 0, req.headers, req.method, req.path);
      if (isHttpResponse(res) || req.method === 'POST' || !res.message.includes('GOAWAY') || attempt >= GOAWAY_ATTEMPTS)
        return res;
      await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
    }
  }

  /** The metrics hook: a request carrying Impersonate-User went out as that ServiceAccount. */
  #count(code: number, headers: Record<string, string>, method: HttpRequest['method'], path: string): void {
    this.#onResponse?.(code, headers['impersonate-user'] !== undefined ? 'serviceaccount' : 'controller', {
      server: this.server,
      method,
      path,
    });
  }

  async #sendOnce(req: HttpRequest): Promise<HttpResponse | KubeError> {
    const timeout = req.timeoutMs !== undefined ? AbortSignal.timeout(req.timeoutMs) : undefined;
    const signal = timeout && req.signal ? AbortSignal.any([req.signal, timeout]) : (timeout ?? req.signal);
    try {
      const headers: Record<string, string> = { 'user-agent': 'impersync', accept: 'application/json', ...req.headers };
      const auth = await this.#auth();
      if (!('agent' in auth)) return auth;
      if (auth.header) headers['authorization'] = auth.header;
      const res = await request(this.server + req.path, {
        method: req.method,
        headers,
        ...(req.body !== undefined ? { body: req.body } : {}),
        ...(signal ? { signal } : {}),
        dispatcher: auth.agent,
      });
      this.#answered(res.statusCode, auth.used);
      const body = await res.body.text();
      return { status: res.statusCode, body, warnings: res.headers['warning'] };
    } catch (err) {
      if (timeout?.aborted && !req.signal?.aborted)
        return errorFromException(this.server, new Error(`no answer within ${req.timeoutMs} ms`));
      return errorFromException(this.server, err);
    }
  }

  /**
   * A GET whose body is read as it arrives (a watch): no body timeout, since a quiet watch is
   * normal; the caller's liveness timer and signal end it.
   */
  async stream(
    path: string,
    headers: Record<string, string>,
    signal: AbortSignal,
  ): Promise<{ status: number; body: AsyncIterable<Uint8Array>; discard(): void } | KubeError> {
    try {
      const all: Record<string, string> = { 'user-agent': 'impersync', accept: 'application/json', ...headers };
      const auth = await this.#auth();
      if (!('agent' in auth)) return auth;
      if (auth.header) all['authorization'] = auth.header;
      const res = await request(this.server + path, {
        method: 'GET',
        headers: all,
        dispatcher: auth.agent,
        signal,
        bodyTimeout: 0,
      });
      this.#answered(res.statusCode, auth.used);
      this.#count(res.statusCode, headers, 'GET', path);
      return { status: res.statusCode, body: res.body, discard: () => void res.body.dump().catch(() => undefined) };
    } catch (err) {
      if (!signal.aborted) this.#count(0, headers, 'GET', path);
      return errorFromException(this.server, err);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.#agent.close(), this.#certAgent?.agent.close()]);
  }
}

export function isHttpResponse(x: HttpResponse | KubeError): x is HttpResponse {
  return typeof (x as HttpResponse).body === 'string';
}
