// The one place that holds the controller's credential for destinations and turns the identity an
// admitted Application acts as (controller/admission.ts, spec §5) into a DestinationClient
// (ARCHITECTURE.md, the identity rule). Clients are cached per (cluster, identity); connection
// pools per cluster credential; discovery per cluster.
import { createHash } from 'node:crypto';
import type { Cluster, KubeObject } from '../api/index.ts';
import { KubeDestinationClient } from './client.ts';
import type { Credential, KubeConfigSource } from './credentials.ts';
import { credentialForCluster, loadControllerCredential } from './credentials.ts';
import { DiscoveryCache } from './discovery.ts';
import type { LiveCacheOptions } from './live-cache.ts';
import { Transport } from './transport.ts';
import type { ResponseHook } from './transport.ts';
import type { DestinationClient, Identity } from './types.ts';

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
  onChange?: (server: string, object: KubeObject, old: KubeObject | undefined) => void;
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
        live ? { ...live, onChange: onChange ? (o, old) => onChange(cluster.server, o, old) : undefined } : undefined,
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

  async close(): Promise<void> {
    const pools = [...this.#transports.values()];
    const clients = [...this.#clients.values()];
    this.#transports.clear();
    this.#clients.clear();
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(pools.map((p) => p.transport.close()));
  }
}
