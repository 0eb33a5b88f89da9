// The one place that holds the controller's credential and turns an identity decision into a
// DestinationClient (ARCHITECTURE.md, the identity rule; spec §5). Clients are cached per
// (cluster, identity); connection pools per cluster credential; discovery per cluster.
import { createHash } from 'node:crypto';
import type { Cluster, KubeObject } from '../api/index.ts';
import { IN_CLUSTER } from '../api/index.ts';
import { KubeDestinationClient } from './client.ts';
import type { Credential, KubeConfigSource } from './credentials.ts';
import { credentialForCluster, loadControllerCredential } from './credentials.ts';
import { DiscoveryCache } from './discovery.ts';
import type { LiveCacheOptions } from './live-cache.ts';
import { Transport } from './transport.ts';
import type { ResponseHook } from './transport.ts';
import type { ClientRefusal, DestinationClient, Identity } from './types.ts';

/**
 * What the identity decision (src/impersonation/) says, as far as building a client needs it:
 * `impersonate` names the ServiceAccount user; `disabled` and `fallback` use the controller's own
 * credential; `deny` and `error` build nothing and carry the spec §5 message.
 */
export interface IdentityDecisionLike {
  decision: 'disabled' | 'impersonate' | 'fallback' | 'deny' | 'error';
  serviceAccount?: string | null | undefined;
  message?: string | undefined;
}

/** The identity a decision asks for, or the refusal that stands in for a client. */
export function identityFor(decision: IdentityDecisionLike): Identity | ClientRefusal {
  switch (decision.decision) {
    case 'impersonate':
      if (!decision.serviceAccount) {
        return {
          refused: true,
          decision: 'error',
          message: 'failed to derive service account to impersonate: the decision named no ServiceAccount',
        };
      }
      return { impersonate: decision.serviceAccount };
    case 'disabled':
    case 'fallback':
      return { controller: true };
    case 'deny':
    case 'error':
      return {
        refused: true,
        decision: decision.decision,
        message: decision.message ?? `identity decision: ${decision.decision}`,
      };
  }
}

function fingerprint(cred: Credential, cluster: Cluster): string {
  const h = createHash('sha256');
  h.update(
    JSON.stringify([
      cred.server,
      cred.bearerToken,
      cred.basic,
      cred.ca,
      cred.cert,
      cred.key,
      cred.insecure,
      cred.serverName,
      cluster.secret,
    ]),
  );
  return h.digest('hex').slice(0, 16);
}

/** Live-object caches for the clients this factory builds (the controller turns them on; the CLI does not). */
export interface LiveObjectsOptions extends Omit<LiveCacheOptions, 'onChange'> {
  /** Someone else changed an object a client's cache holds: `server` is the destination. */
  onChange?: (server: string, object: KubeObject) => void;
}

export class DestinationClientFactory {
  readonly #controller: Credential;
  readonly #live: LiveObjectsOptions | undefined;
  readonly #onResponse: ResponseHook | undefined;
  // destination server -> its pool; replaced (and the old one closed) when the credential changes.
  readonly #transports = new Map<string, { fp: string; transport: Transport }>();
  readonly #discovery = new Map<string, DiscoveryCache>();
  readonly #clients = new Map<string, KubeDestinationClient>();

  constructor(
    controller: Credential,
    opts: { liveObjects?: LiveObjectsOptions; onResponse?: ResponseHook | undefined } = {},
  ) {
    this.#controller = controller;
    this.#live = opts.liveObjects;
    this.#onResponse = opts.onResponse;
  }

  static async fromKubeConfig(source: KubeConfigSource = {}): Promise<DestinationClientFactory> {
    return new DestinationClientFactory(await loadControllerCredential(source));
  }

  #transportFor(cluster: Cluster): Transport {
    const cred = credentialForCluster(cluster, this.#controller);
    const fp = fingerprint(cred, cluster);
    const existing = this.#transports.get(cluster.server);
    if (existing && existing.fp === fp) return existing.transport;
    if (existing) {
      // The Secret changed (rotated token, new CA): clients built on the old pool go with it.
      void existing.transport.close();
      for (const [key, client] of [...this.#clients]) {
        if (!key.startsWith(`${cluster.server}\n`)) continue;
        this.#clients.delete(key);
        void client.close();
      }
    }
    const transport = new Transport(cred, { onResponse: this.#onResponse });
    this.#transports.set(cluster.server, { fp, transport });
    return transport;
  }

  /** A client for `cluster` acting as `identity`, built once and reused. */
  forIdentity(cluster: Cluster, identity: Identity): DestinationClient {
    const transport = this.#transportFor(cluster);
    const who = 'impersonate' in identity ? `as:${identity.impersonate}` : 'controller';
    const key = `${cluster.server}\n${who}`;
    let client = this.#clients.get(key);
    if (!client) {
      let discovery = this.#discovery.get(cluster.server);
      if (!discovery) {
        discovery = new DiscoveryCache();
        this.#discovery.set(cluster.server, discovery);
      }
      const live = this.#live;
      const onChange = live?.onChange;
      client = new KubeDestinationClient(
        cluster.server,
        identity,
        transport,
        discovery,
        live ? { ...live, onChange: onChange ? (o) => onChange(cluster.server, o) : undefined } : undefined,
      );
      this.#clients.set(key, client);
    }
    return client;
  }

  /** Watches the clients' live-object caches hold open. */
  liveWatchCount(): number {
    let n = 0;
    for (const c of this.#clients.values()) n += c.liveWatchCount;
    return n;
  }

  /** spec §5: impersonate, fall back to the controller, or refuse with the decision's message. */
  forDecision(decision: IdentityDecisionLike, cluster: Cluster): DestinationClient | ClientRefusal {
    const identity = identityFor(decision);
    if ('refused' in identity) return identity;
    return this.forIdentity(cluster, identity);
  }

  /** The controller's own client on its own cluster: for reading Applications, projects, settings. */
  controllerClient(): DestinationClient {
    return this.forIdentity(IN_CLUSTER, { controller: true });
  }

  async close(): Promise<void> {
    const pools = [...this.#transports.values()];
    const clients = [...this.#clients.values()];
    this.#transports.clear();
    this.#clients.clear();
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(pools.map((p) => p.transport.close()));
  }
}
