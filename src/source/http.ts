// HTTP(S) for Helm repositories and OCI registries, with a repository's settings: its CA
// certificates (argocd-tls-certs-cm replaces the system's for that server, as Argo CD does),
// client certificate, `insecure`, `proxy` and `noProxy`. Credentials stay in this process's memory:
// they go in an Authorization header, only to the origin they were configured for (a redirect or a
// chart URL on another origin gets none, unless the source asks for helm.passCredentials; a failure
// after such a redirect names both origins), and never in a URL, an argument or a file. Answers are read within a size limit and a time limit.
import { createHash } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent, ProxyAgent, request, type Dispatcher } from 'undici';
import type { RepositoryAccess } from '../api/repository.ts';
import { SourceError, formatBytes, redactURL } from './errors.ts';

export interface FetchOptions {
  /** Header values by name (an Authorization built by the caller). */
  headers?: Record<string, string>;
  maxBytes: number;
  timeoutMs: number;
  /** What the message calls it: "the index of 'https://charts.example.com'". */
  what: string;
  signal?: AbortSignal | undefined;
  /**
   * A URL a tenant chose whose answer reaches the rendered objects (a Helm value file): never
   * fetched from a link-local or cloud metadata address, on any hop, whatever DNS answers.
   */
  refuseMetadata?: boolean;
}

export interface FetchResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The URL answered, after redirects. */
  url: string;
}

// The dispatchers by their settings, most recently used last. The settings come from repository
// Secrets, project-scoped ones written by whoever Argo CD's RBAC lets create them: past the bound,
// the least recently used is closed (its requests under way finish first), not left open.
const agents = new Map<string, Dispatcher>();
export const DISPATCHER_LIMIT = 128;

/** One dispatcher per set of TLS and proxy settings (no credential is part of it). */
export function dispatcherFor(access: RepositoryAccess | undefined, url: string): Dispatcher {
  const proxy = access?.proxy && !noProxy(access.noProxy, url) ? access.proxy : undefined;
  const tls = {
    ...(access?.caCerts ? { ca: access.caCerts } : {}),
    ...(access?.tlsClientCertData && access.tlsClientCertKey
      ? { cert: access.tlsClientCertData, key: access.tlsClientCertKey }
      : {}),
    rejectUnauthorized: access?.insecure !== true,
  };
  // By digest: the certificates stay with their dispatcher, not once more in its key.
  const key = createHash('sha256').update(JSON.stringify({ proxy, tls })).digest('base64');
  let d = agents.get(key);
  if (d) {
    agents.delete(key);
  } else {
    d = proxy
      ? new ProxyAgent({ uri: proxy, requestTls: tls })
      : new Agent({ connect: tls, keepAliveTimeout: 10_000, connections: 16 });
    for (const [oldest, old] of agents) {
      if (agents.size < DISPATCHER_LIMIT) break;
      agents.delete(oldest);
      old.close().catch(() => undefined);
    }
  }
  agents.set(key, d);
  return d;
}

function noProxy(list: string | undefined, url: string): boolean {
  if (!list) return false;
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return false;
  }
  return list
    .split(',')
    .map((e) => e.trim())
    .some((e) => e === '*' || host === e || (e.startsWith('.') ? host.endsWith(e) : host.endsWith(`.${e}`)));
}

// Link-local addresses, where cloud metadata services answer (169.254.169.254 and fe80::/10), and
// the metadata addresses outside those ranges (AWS's IPv6 one, Alibaba Cloud's). IPv4-mapped IPv6
// forms match the IPv4 rules (BlockList checks them so).
const METADATA_ADDRESSES = new BlockList();
METADATA_ADDRESSES.addSubnet('169.254.0.0', 16, 'ipv4');
METADATA_ADDRESSES.addSubnet('fe80::', 10, 'ipv6');
METADATA_ADDRESSES.addAddress('fd00:ec2::254', 'ipv6');
METADATA_ADDRESSES.addAddress('100.100.100.200', 'ipv4');

/** True for an IP address where a cloud metadata service can answer. */
export function isMetadataAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 0) return false;
  return METADATA_ADDRESSES.check(bare, family === 6 ? 'ipv6' : 'ipv4');
}

function metadataRefusal(what: string, address: string, host?: string): SourceError {
  const via = host && host !== address ? ` (the address of ${host})` : '';
  return new SourceError(
    'InvalidSource',
    `${what}: ${address}${via} is a link-local or cloud metadata address, from which the renderer never fetches a file whose content reaches the rendered objects`,
  );
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** dns.lookup that answers no metadata address: the connection is refused after resolution, so DNS rebinding cannot pass. */
function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '');
    const bad = addresses.find((a) => isMetadataAddress(a.address));
    if (bad) {
      const refusal = metadataRefusal('refused', bad.address, hostname) as unknown as NodeJS.ErrnoException;
      refusal.code = 'EMETADATA';
      return callback(refusal, '');
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
    callback(null, first.address, first.family);
  });
}

let guardedAgent: Agent | undefined;

/** The dispatcher of tenant-chosen URLs: the system's trust, no proxy, no metadata address. */
function guardedDispatcher(): Agent {
  guardedAgent ??= new Agent({ connect: { lookup: guardedLookup }, keepAliveTimeout: 10_000, connections: 16 });
  return guardedAgent;
}

/** `scheme://host:port` of a URL. */
export function origin(url: string): string {
  return new URL(url).origin;
}

/**
 * One GET of `url` that follows no redirect, for where it points: the status and the Location
 * header only (the body is dropped unread). For git-redirect.ts, which asks where a repository
 * sends git.
 */
export async function redirectOf(
  url: string,
  access: RepositoryAccess | undefined,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number; location: string | undefined }> {
  const res = await request(url, {
    method: 'GET',
    headers: { 'user-agent': 'impersync', ...headers },
    dispatcher: dispatcherFor(access, url),
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
  });
  await res.body.dump();
  const location = res.headers['location'];
  return { status: res.statusCode, location: typeof location === 'string' ? location : undefined };
}

/**
 * GET `url`, following up to 5 redirects; the Authorization header is sent only while the request
 * stays on `trustedOrigin`. A request that carried it and was redirected off that origin is
 * answered as is when it succeeds (registries send blobs to a CDN), and otherwise refused naming
 * both origins: the failure is most likely the credentials left behind.
 */
export async function httpGet(
  url: string,
  access: RepositoryAccess | undefined,
  opts: FetchOptions & { trustedOrigin?: string | undefined },
): Promise<FetchResult> {
  let current = url;
  /** Where a request that carried credentials left the trusted origin, without them. */
  let leftBehind: { from: string; to: string } | undefined;
  let carried = false;
  for (let hop = 0; hop < 6; hop++) {
    const headers: Record<string, string> = { 'user-agent': 'impersync', ...opts.headers };
    if (opts.trustedOrigin !== undefined && origin(current) === opts.trustedOrigin) {
      carried ||= headers['authorization'] !== undefined;
    } else {
      if (carried) leftBehind ??= { from: opts.trustedOrigin as string, to: origin(current) };
      delete headers['authorization'];
    }
    if (opts.refuseMetadata) {
      const host = new URL(current).hostname;
      if (isMetadataAddress(host)) throw metadataRefusal(opts.what, host.replace(/^\[|\]$/g, ''));
    }
    let res;
    try {
      res = await request(current, {
        method: 'GET',
        headers,
        dispatcher: opts.refuseMetadata ? guardedDispatcher() : dispatcherFor(access, current),
        headersTimeout: opts.timeoutMs,
        bodyTimeout: opts.timeoutMs,
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
    } catch (err) {
      const refused =
        (err as { code?: string; cause?: { code?: string } }).code === 'EMETADATA'
          ? err
          : (err as { cause?: unknown }).cause;
      if ((refused as { code?: string } | undefined)?.code === 'EMETADATA')
        throw new SourceError(
          'InvalidSource',
          `${opts.what}: ${(refused as Error).message.replace(/^refused: /, '')}`,
          { cause: err },
        );
      throw new SourceError('RepositoryUnreachable', `${opts.what} not reachable: ${describe(err)}`, { cause: err });
    }
    if (res.statusCode >= 300 && res.statusCode < 400 && res.headers['location']) {
      await res.body.dump();
      current = new URL(String(res.headers['location']), current).href;
      continue;
    }
    if (leftBehind && (res.statusCode < 200 || res.statusCode >= 300)) {
      await res.body.dump();
      throw new SourceError(
        'RepositoryUnreachable',
        `${opts.what} was redirected from ${leftBehind.from} to ${leftBehind.to}, where its credentials are not sent, and answered ${res.statusCode} there: if the repository moved, set its URL to where it now lives`,
      );
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > opts.maxBytes) {
        res.body.destroy();
        throw new SourceError(
          'TooLarge',
          `${opts.what} is larger than the renderer's limit of ${formatBytes(opts.maxBytes)}`,
        );
      }
      chunks.push(chunk as Buffer);
    }
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), url: current };
  }
  throw new SourceError('RepositoryUnreachable', `${opts.what}: too many redirects`);
}

function describe(err: unknown): string {
  const e = err as { message?: string; code?: string; cause?: { message?: string; code?: string } };
  const inner = e.cause?.message ? ` (${e.cause.code ?? ''}${e.cause.code ? ': ' : ''}${e.cause.message})` : '';
  return redactURL(`${e.code ? `${e.code}: ` : ''}${e.message ?? String(err)}${inner}`);
}

/** Basic credentials as a header value, or undefined when there are none. */
export function basicAuth(access: RepositoryAccess | undefined): string | undefined {
  if (!access?.username && !access?.password) return undefined;
  return `Basic ${Buffer.from(`${access.username ?? ''}:${access.password ?? ''}`).toString('base64')}`;
}

/** A failed status as a message a user can act on. */
export function statusError(what: string, status: number): SourceError {
  const hint =
    status === 401 || status === 403
      ? ' (check the repository credentials: username and password in its repository Secret)'
      : status === 404
        ? ' (not found)'
        : '';
  return new SourceError('RepositoryUnreachable', `${what} not reachable: the server answered ${status}${hint}`);
}
