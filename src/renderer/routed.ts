// The controller's client to several renderer replicas: each render and resolve request goes to
// the replica its repository ranks first (routing.ts), so that a repository's clones, refs and
// answers stay warm on one replica instead of going cold on all of them. A replica that gives no
// answer (refused, not connected in time, closed before answering) is passed over for the next in
// that repository's ranking; an answer, an error too, is final: a render that failed on its
// content is not run again elsewhere, so a hostile repository cannot make every replica run it.
// Each replica has its own RendererClient (its own keep-alive pool); the token is the same.
import { SourceError } from '../source/errors.ts';
import type { RenderInput, RenderResult } from '../source/index.ts';
import {
  RendererClient,
  RendererUnreachable,
  type Renderer,
  type RendererClientOptions,
  type RenderOptions,
  type ResolveInput,
} from './client.ts';
import type { BudgetAnswer } from './protocol.ts';
import { ReplicaAddresses, type ReplicaAddressesOptions } from './replicas.ts';
import { rankReplicas, routingKey } from './routing.ts';

export type RendererRequestKind = 'render' | 'resolve';
/** `ok`: answered; `error`: answered with an error (final); `unreachable`: no answer, the next replica asked. */
export type RendererRequestOutcome = 'ok' | 'error' | 'unreachable';

export interface RoutedRendererOptions extends Omit<RendererClientOptions, 'url'>, ReplicaAddressesOptions {
  /** A replica that gave no answer goes last in every ranking for this long. Default 10 s. */
  downForMs?: number | undefined;
  /** Each request, by the replica (its URL) that took it or did not answer. */
  onRequest?: ((replica: string, request: RendererRequestKind, outcome: RendererRequestOutcome) => void) | undefined;
}

/**
 * After a connection closed before any answer, at most this many replicas are tried: the replica
 * may have gone away because of the request itself, which should not take every replica down.
 */
const MAX_AFTER_RESET = 2;

export class RoutedRenderer implements Renderer {
  readonly #opts: RoutedRendererOptions;
  readonly #addresses: ReplicaAddresses;
  readonly #clients = new Map<string, RendererClient>();
  readonly #downUntil = new Map<string, number>();
  readonly #now: () => number;

  constructor(opts: RoutedRendererOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#addresses = new ReplicaAddresses({
      ...opts,
      onChange: (replicas) => {
        this.#forgetAllBut(replicas);
        opts.onChange?.(replicas);
      },
    });
  }

  render(input: RenderInput, opts?: RenderOptions): Promise<RenderResult> {
    return this.#route(input.source.repoURL, 'render', (client) => client.render(input, opts));
  }

  resolveRevision(input: ResolveInput, opts?: Pick<RenderOptions, 'tenant'>): Promise<string> {
    return this.#route(input.source.repoURL, 'resolve', (client) => client.resolveRevision(input, opts));
  }

  /** The replicas `repoURL` is sent to, in order (for tests and `explain`-like tools). */
  async ranking(repoURL: string): Promise<string[]> {
    const ranked = rankReplicas(await this.#addresses.current(), routingKey(repoURL));
    const now = this.#now();
    const down = (r: string) => (this.#downUntil.get(r) ?? 0) > now;
    return [...ranked.filter((r) => !down(r)), ...ranked.filter(down)];
  }

  /**
   * Each replica's memory budget and who waits for it (GET /v1/budget), asked of every replica at
   * once; a replica that does not answer, or has no budget, is left out. Each is its own budget: a
   * request waits in the one replica it was routed to.
   */
  async budgets(): Promise<Array<{ replica: string; answer: BudgetAnswer }>> {
    const replicas = await this.#addresses.current();
    const answers = await Promise.all(
      replicas.map(async (replica) => {
        const answer = await this.#client(replica)
          .budget()
          .catch(() => undefined);
        return answer ? { replica, answer } : undefined;
      }),
    );
    return answers.filter((a) => a !== undefined);
  }

  async close(): Promise<void> {
    this.#addresses.close();
    const clients = [...this.#clients.values()];
    this.#clients.clear();
    await Promise.all(clients.map((c) => c.close()));
  }

  async #route<T>(
    repoURL: string,
    kind: RendererRequestKind,
    call: (client: RendererClient) => Promise<T>,
  ): Promise<T> {
    const order = await this.ranking(repoURL);
    let last: RendererUnreachable | undefined;
    let tried = 0;
    let reset = false;
    for (const replica of order) {
      if (reset && tried >= MAX_AFTER_RESET) break;
      tried++;
      try {
        const answer = await call(this.#client(replica));
        this.#downUntil.delete(replica);
        this.#opts.onRequest?.(replica, kind, 'ok');
        return answer;
      } catch (err) {
        if (!(err instanceof RendererUnreachable)) {
          this.#opts.onRequest?.(replica, kind, 'error');
          throw err;
        }
        this.#opts.onRequest?.(replica, kind, 'unreachable');
        this.#downUntil.set(replica, this.#now() + (this.#opts.downForMs ?? 10_000));
        this.#addresses.refresh();
        last = err;
        if (err.how === 'reset') reset = true;
      }
    }
    const of = order.length === 1 ? 'the one renderer replica' : `${tried} of ${order.length} renderer replicas`;
    throw new SourceError('RendererUnavailable', `no answer from ${of}; the last: ${last?.message ?? 'none'}`, {
      cause: last,
    });
  }

  #client(replica: string): RendererClient {
    let client = this.#clients.get(replica);
    if (!client) {
      const { targets: _t, resolve: _r, onRequest: _o, onChange: _c, onLookupError: _l, now: _n, ...rest } = this.#opts;
      client = new RendererClient({ ...rest, url: replica });
      this.#clients.set(replica, client);
    }
    return client;
  }

  /** A replica no longer listed: its pool is closed once its requests in flight are done. */
  #forgetAllBut(replicas: readonly string[]): void {
    const keep = new Set(replicas);
    for (const [replica, client] of this.#clients) {
      if (keep.has(replica)) continue;
      this.#clients.delete(replica);
      this.#downUntil.delete(replica);
      client.close().catch(() => undefined);
    }
  }
}
