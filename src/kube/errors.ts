// Turning what came back from an API server (or did not) into a KubeError value, keeping the
// server's own message verbatim: it is what a user acts on (a 403 names the ServiceAccount).
import type { KubeError, KubeResult } from './types.ts';

const REASON_BY_CODE: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** A KubeError from an HTTP status and the response body (a metav1.Status, or anything else). */
export function errorFromResponse(code: number, body: string): KubeError {
  let status: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed !== null && typeof parsed === 'object' && (parsed as { kind?: unknown }).kind === 'Status') {
      status = parsed as Record<string, unknown>;
    }
  } catch {
    // not JSON: the body itself is the message
  }
  const reason =
    typeof status?.['reason'] === 'string' && status['reason'] !== ''
      ? status['reason']
      : (REASON_BY_CODE[code] ?? 'Unknown');
  const message = typeof status?.['message'] === 'string' ? status['message'] : body.trim() || `HTTP ${code}`;
  return status ? { code, reason, message, status } : { code, reason, message };
}

/** No response at all: refused connection, TLS failure, timeout. */
export function errorFromException(server: string, err: unknown): KubeError {
  const e = err as { message?: unknown; code?: unknown; cause?: { message?: unknown; code?: unknown } };
  const detail = [e.message, e.cause?.message].filter((m) => typeof m === 'string' && m !== '').join(': ');
  const code = typeof e.code === 'string' ? e.code : typeof e.cause?.code === 'string' ? e.cause.code : '';
  return {
    code: 0,
    reason: 'ConnectionError',
    message: `cannot reach ${server}: ${detail || String(err)}${code && !detail.includes(code) ? ` (${code})` : ''}`,
  };
}

export function ok<T>(value: T, warnings: readonly string[] = []): KubeResult<T> {
  return { ok: true, value, warnings };
}

export function fail<T>(error: KubeError): KubeResult<T> {
  return { ok: false, error };
}

/** An error made here rather than by a server (bad input caught before sending). */
export function localError(reason: string, message: string): KubeError {
  return { code: 0, reason, message };
}

/** `Warning` headers: `299 - "unknown field \"spec.foo\""` → `unknown field "spec.foo"`. */
export function parseWarnings(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  const values = Array.isArray(header) ? header : [header];
  const out: string[] = [];
  for (const value of values) {
    // Several warnings may share one header, comma separated, each `code agent "text"`.
    const re = /\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"/g;
    let m: RegExpExecArray | null;
    let found = false;
    while ((m = re.exec(value)) !== null) {
      found = true;
      out.push((m[1] ?? '').replace(/\\(.)/g, '$1'));
    }
    if (!found && value.trim() !== '') out.push(value.trim());
  }
  return out;
}
