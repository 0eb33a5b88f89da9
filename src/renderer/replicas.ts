// Where the renderer replicas are: the `--renderer` addresses as given (outside a cluster), and
// the addresses a headless Service's name resolves to (in the install, `dns+http://NAME:PORT`: one
// A/AAAA record per ready renderer Pod), looked up again every interval and, sooner, when a replica
// did not answer. A lookup that fails keeps the addresses known before it: a Pod restarting or a
// DNS hiccup should not leave the controller with no renderer at all.
import { lookup } from 'node:dns/promises';
import { SourceError } from '../source/errors.ts';

/** One `--renderer` entry. */
export type RendererTarget = { kind: 'url'; url: string } | { kind: 'dns'; host: string; port: number; given: string };

/** Every address `host` resolves to (A and AAAA), as text. */
export type ResolveAddresses = (host: string) => Promise<string[]>;

/** The system's resolver (getaddrinfo: /etc/hosts, the Pod's search domains), every address. */
export const systemResolve: ResolveAddresses = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * The `--renderer` values (repeatable, each a comma-separated list) as targets, or the error. An
 * entry is `http://host:port`, `https://host:port`, `unix:/path`, or `dns+http://name:port`.
 */
export function parseRendererTargets(values: readonly string[]): RendererTarget[] | string {
  const entries = values.flatMap((v) => v.split(',')).map((e) => e.trim());
  if (entries.length === 0 || entries.some((e) => e === ''))
    return `--renderer needs an address, not '${values.join(',')}'`;
  const targets: RendererTarget[] = [];
  for (const entry of entries) {
    if (/^dns\+https:\/\//i.test(entry))
      return `--renderer: dns+https is not supported (the renderer serves plain HTTP; put a TLS proxy in front and give its https:// address), not '${entry}'`;
    const dns = /^dns\+http:\/\/([^/:[\]]+|\[[^\]]+\]):(\d{1,5})\/?$/i.exec(entry);
    if (dns) {
      const port = Number(dns[2]);
      if (port < 1 || port > 65535) return `--renderer: '${entry}' has no valid port`;
      targets.push({ kind: 'dns', host: (dns[1] as string).replace(/^\[|\]$/g, ''), port, given: entry });
      continue;
    }
    if (/^dns\+/i.test(entry)) return `--renderer must be dns+http://name:port, not '${entry}'`;
    if (!/^(https?:\/\/|unix:\/)/.test(entry))
      return `--renderer must be http://host:port, https://host:port, unix:/path or dns+http://name:port, not '${entry}'`;
    targets.push({ kind: 'url', url: entry.replace(/\/+$/, '') });
  }
  return targets;
}

/** `http://address:port`, with an IPv6 address in brackets. */
export function addressURL(address: string, port: number): string {
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

export interface ReplicaAddressesOptions {
  targets: readonly RendererTarget[];
  resolve?: ResolveAddresses | undefined;
  /** How old a lookup may be before the next request looks again. Default 30 s. */
  resolveIntervalMs?: number | undefined;
  /** A lookup asked for because a replica did not answer waits this long after the last one. Default 1 s. */
  refreshMinIntervalMs?: number | undefined;
  now?: (() => number) | undefined;
  /** Called with each new set of addresses. */
  onChange?: ((replicas: readonly string[]) => void) | undefined;
  /** Called with the error of a failed lookup. */
  onLookupError?: ((given: string, err: Error) => void) | undefined;
}

interface Lookup {
  target: Extract<RendererTarget, { kind: 'dns' }>;
  urls: string[] | undefined;
  at: number;
  error: Error | undefined;
  running: Promise<void> | undefined;
}

/** The replica addresses now, each a URL a RendererClient takes. */
export class ReplicaAddresses {
  readonly #opts: ReplicaAddressesOptions;
  readonly #fixed: string[];
  readonly #lookups: Lookup[];
  readonly #resolve: ResolveAddresses;
  readonly #now: () => number;
  #last = '';
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(opts: ReplicaAddressesOptions) {
    this.#opts = opts;
    this.#resolve = opts.resolve ?? systemResolve;
    this.#now = opts.now ?? Date.now;
    this.#fixed = opts.targets.flatMap((t) => (t.kind === 'url' ? [t.url] : []));
    this.#lookups = opts.targets.flatMap((t) =>
      t.kind === 'dns' ? [{ target: t, urls: undefined, at: -Infinity, error: undefined, running: undefined }] : [],
    );
  }

  /** The addresses known now; waits for a name's first lookup, and starts one when the last is old. */
  async current(): Promise<string[]> {
    const interval = this.#opts.resolveIntervalMs ?? 30_000;
    const min = this.#opts.refreshMinIntervalMs ?? 1000;
    // Looked up every interval from the first use on, requests or not, so that the addresses are
    // fresh when a request comes after a quiet while (the timer keeps no process alive).
    if (this.#lookups.length > 0 && this.#timer === undefined && !this.#closed) {
      this.#timer = setInterval(() => {
        for (const l of this.#lookups) this.#start(l);
      }, interval);
      this.#timer.unref();
    }
    await Promise.all(
      this.#lookups.map((l) => {
        // A name never resolved is tried again soon, not only after the interval.
        if (this.#now() - l.at >= (l.urls === undefined ? min : interval)) this.#start(l);
        return l.urls === undefined ? l.running : undefined;
      }),
    );
    const urls = [...new Set([...this.#fixed, ...this.#lookups.flatMap((l) => l.urls ?? [])])].sort();
    const seen = urls.join(' ');
    if (seen !== this.#last) {
      this.#last = seen;
      this.#opts.onChange?.(urls);
    }
    if (urls.length === 0) {
      const why = this.#lookups.map((l) => `${l.target.host}: ${l.error?.message ?? 'no address'}`).join('; ');
      throw new SourceError('RendererUnavailable', `no renderer address is known (${why})`);
    }
    return urls;
  }

  /** No more lookups. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** A replica did not answer: look the names up again (at most once a second). */
  refresh(): void {
    const min = this.#opts.refreshMinIntervalMs ?? 1000;
    for (const l of this.#lookups) if (this.#now() - l.at >= min) this.#start(l);
  }

  #start(l: Lookup): void {
    if (l.running) return;
    l.running = this.#resolve(l.target.host)
      .then((addresses) => {
        if (addresses.length === 0) throw new Error('the name has no address');
        l.urls = [...new Set(addresses)].map((a) => addressURL(a, l.target.port));
        l.error = undefined;
      })
      .catch((err: unknown) => {
        // The addresses known before stay: a failed lookup is not a renderer gone.
        l.error = err instanceof Error ? err : new Error(String(err));
        this.#opts.onLookupError?.(l.target.given, l.error);
      })
      .finally(() => {
        l.at = this.#now();
        l.running = undefined;
      });
  }
}
