// A JSON request over a Transport as one identity, and the list+watch transport of kube/watch.ts
// over it: the one way both the destination clients (client.ts) and the control-cluster client
// (control.ts) ask an API server. Failures come back as KubeError values, never thrown.
import { errorFromResponse, fail, ok, parseWarnings } from './errors.ts';
import type { Transport } from './transport.ts';
import { isHttpResponse } from './transport.ts';
import type { KubeResult, RawRequest } from './types.ts';
import type { WatchTransport } from './watch.ts';

function queryString(query: Record<string, string | undefined> | undefined): string {
  if (!query) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(query))
    if (v !== undefined) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

/** Sends `req` with `identity` headers; a 2xx answer's JSON body is the value. */
export async function sendJson<T>(
  transport: Transport,
  identity: Record<string, string>,
  req: RawRequest,
): Promise<KubeResult<T>> {
  const headers: Record<string, string> = { ...identity };
  if (req.userAgent !== undefined) headers['user-agent'] = req.userAgent;
  let body: string | undefined;
  if (req.body !== undefined) {
    body = typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    headers['content-type'] = req.contentType ?? 'application/json';
  }
  const res = await transport.send({
    method: req.method,
    path: req.path + queryString(req.query),
    headers,
    ...(body !== undefined ? { body } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
    ...(req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {}),
  });
  if (!isHttpResponse(res)) return fail(res);
  if (res.status < 200 || res.status >= 300) return fail(errorFromResponse(res.status, res.body));
  let value: unknown = undefined;
  if (res.body !== '') {
    try {
      value = JSON.parse(res.body);
    } catch {
      return fail({
        code: res.status,
        reason: 'InvalidResponse',
        message: `${req.method} ${req.path}: the server answered with something that is not JSON`,
      });
    }
  }
  return ok(value as T, parseWarnings(res.warnings));
}

/** Lists and watches made over `transport` with `identity` headers, like every other request. */
export function watchTransportOver(transport: Transport, identity: Record<string, string>): WatchTransport {
  return {
    get: async (path, signal) => {
      if (signal.aborted) return { status: 0, body: undefined, text: 'aborted' };
      const res = await transport.send({ method: 'GET', path, headers: { ...identity }, signal });
      if (!isHttpResponse(res)) throw new Error(res.message);
      let body: unknown;
      try {
        body = res.body === '' ? undefined : JSON.parse(res.body);
      } catch {
        body = undefined;
      }
      return { status: res.status, body, text: res.body };
    },
    stream: async (path, signal) => {
      const res = await transport.stream(path, { ...identity }, signal);
      if ('code' in res) throw new Error(res.message);
      return { status: res.status, chunks: res.body, discard: res.discard };
    },
  };
}
