// The one place that holds the controller's credential for destinations and turns the identity an
// admitted Application acts as (controller/admission.ts, spec §5) into a DestinationClient
// (ARCHITECTURE.md, the identity rule). Clients are cached per (cluster, identity); connection
// pools per cluster credential; discovery per cluster. A client made for an Application is a view
// of its identity's client that names the Application in every request (kube/attribution.ts): it
// shares that client's watches, discovery and remembered dry-runs, so it costs no request more.
import { createHash } from 'node:crypto';
import type { Cluster, KubeObject } from '../api/index.ts';
import { ExtrasGrant } from './attribution.ts';
import { KubeDestinationClient } from './client.ts';
import type { Credential, KubeConfigSource } from './credentials.ts';
import { credentialForCluster, loadControllerCredential } from './credentials.ts';
import { DiscoveryCache } from './discovery.ts';
import type { LiveCacheOptions } from './live-cache.ts';
import { TenantShare } from './tenant-share.ts';
import { Transport, isHttpResponse } from './transport.ts';
import type { ResponseHook } from './transport.ts';
import type { DestinationClient, Identity, KubeError, MadeFor } from './types.ts';
import { DryRunMemo, DryRunMemoStore } from './dry-run-memo.ts';

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
      cred.exec?.config,
      cluster.secret,
    ]),
  );
  return h.digest('hex').slice(0, 16);
}

/** Live-object caches for the clients this factory builds (the controller turns them on; the CLI does not). */
export interface LiveObjectsOptions extends Omit<LiveCacheOptions, 'onChange' | 'onEvent'> {
  /** Someone else changed an object a client's cache holds: `server` is the destination. */
  onChange?: (server: string, object: KubeObject, old: KubeObject | undefined) => void;
  /** A watch event after the initial list, on `server`'s watches. */
  onEvent?: (server: string, apiVersion: string, kind: string) => void;
}

/** One destination cluster the factory talks to, for Argo CD's cluster metrics (argocd_cluster_*). */
export interface DestinationInfo {
  server: string;
  /** The Kubernetes version it answered (`gitVersion` of /version), '' before it did. */
  k8sVersion: string;
  /** Its last /version request was answered with 200. */
  connected: boolean;
  objects: number;
  resources: number;
  oldestWatch: number | undefined;
}

const VERSION_MAX_AGE_MS = 30_000;

export interface FactoryOptions {
  liveObjects?: LiveObjectsOptions;
  onResponse?: ResponseHook | undefined;
  /**
   * The credential for `server` may not impersonate impersync's user extras: told once per
   * credential, at the first refusal. Requests go on without them (unless they are required).
   */
  onExtrasRefused?: ((server: string, error: KubeError) => void) | undefined;
  /** How long one run of a cluster's credential plugin may take (default 30 s, kube/exec-credential.ts). */
  execTimeoutMs?: number | undefined;
  /**
   * Each destination's API server shared between tenants by the time their requests take
   * (tenant-share.ts): the milliseconds of requests one tenant may have in flight while another is
   * about (0 or absent: no limit), and what is told of a request that waited for its share.
   */
  tenantShare?: { inFlightMs: number; onWait?: (tenant: string, ms: number) => void } | undefined;
  /** Bytes of dry-run answers its clients remember, all together (default DRY_RUN_MEMO_BYTES, kube/dry-run-memo.ts). */
  dryRunMemoBytes?: number | undefined;
}

/** One destination's connection pool, what its API server said of the extras, and its share between tenants. */
interface TransportEntry {
  fp: string;
  transport: Transport;
  grant: ExtrasGrant;
  share: TenantShare | undefined;
}

export class DestinationClientFactory {
  readonly #controller: Credential;
  readonly #live: LiveObjectsOptions | undefined;
  readonly #onResponse: ResponseHook | undefined;
  readonly #onExtrasRefused: FactoryOptions['onExtrasRefused'];
  readonly #execTimeoutMs: number | undefined;
  readonly #tenantShare: FactoryOptions['tenantShare'];
  // destination server -> its pool and what the API server said of its extras; replaced (and the
  // old pool closed) when the credential changes.
  readonly #transports = new Map<string, TransportEntry>();
  readonly #discovery = new Map<string, DiscoveryCache>();
  readonly #clients = new Map<string, KubeDestinationClient>();
  readonly #versions = new Map<string, { at: number; version: string; connected: boolean }>();
  /** Every client's dry-run answers, bounded by their bytes together. */
  readonly #dryRuns: DryRunMemoStore;

  constructor(controller: Credential, opts: FactoryOptions = {}) {
    this.#dryRuns = new DryRunMemoStore(opts.dryRunMemoBytes);
    this.#controller = controller;
    this.#live = opts.liveObjects;
    this.#onResponse = opts.onResponse;
    this.#onExtrasRefused = opts.onExtrasRefused;
    this.#execTimeoutMs = opts.execTimeoutMs;
    this.#tenantShare = opts.tenantShare;
  }

  static async fromKubeConfig(
    source: KubeConfigSource = {},
    opts: FactoryOptions = {},
  ): Promise<DestinationClientFactory> {
    return new DestinationClientFactory(await loadControllerCredential(source), opts);
  }

  #transportFor(cluster: Cluster): TransportEntry {
    const cred = credentialForCluster(cluster, this.#controller, { execTimeoutMs: this.#execTimeoutMs });
    const fp = fingerprint(cred, cluster);
    const existing = this.#transports.get(cluster.server);
    if (existing && existing.fp === fp) return existing;
    if (existing) {
      // The Secret changed (rotated token, new CA): clients built on the old pool go with it.
      void existing.transport.close();
      for (const [key, client] of [...this.#clients]) {
        if (!key.startsWith(`${cluster.server}\n`)) continue;
        this.#clients.delete(key);
        void client.close();
      }
    }
    // Requests are told by the cluster's name in Argo CD (its Secret's server), not the URL dialled.
    const hook = this.#onResponse;
    const transport = new Transport(cred, {
      onResponse: hook ? (code, identity, req) => hook(code, identity, { ...req, server: cluster.server }) : undefined,
    });
    const onRefused = this.#onExtrasRefused;
    const grant = new ExtrasGrant({ onRefused: onRefused ? (err) => onRefused(cluster.server, err) : undefined });
    // The API server's share between tenants is per destination: each cluster's own CPU. A new
    // credential for the same cluster keeps the accounts (the same API server).
    const shareOpts = this.#tenantShare;
    const share =
      existing?.share ??
      (shareOpts && shareOpts.inFlightMs > 0
        ? new TenantShare({ inFlightMs: shareOpts.inFlightMs, onWait: shareOpts.onWait })
        : undefined);
    const entry = { fp, transport, grant, share };
    this.#transports.set(cluster.server, entry);
    return entry;
  }

  /**
   * A client for `cluster` acting as `identity`, built once and reused; with `madeFor`, the view of
   * it that names that Application, project and revision in every request (a ServiceAccount's
   * requests only: the controller's own credential impersonates no one and carries no extras).
   */
  forIdentity(cluster: Cluster, identity: Identity, madeFor?: MadeFor): DestinationClient {
    const { fp, transport, grant, share } = this.#transportFor(cluster);
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
      const onEvent = live?.onEvent;
      client = new KubeDestinationClient(
        cluster.server,
        identity,
        transport,
        discovery,
        live
          ? {
              ...live,
              onChange: onChange ? (o, old) => onChange(cluster.server, o, old) : undefined,
              onEvent: onEvent ? (apiVersion, kind) => onEvent(cluster.server, apiVersion, kind) : undefined,
            }
          : undefined,
        grant,
        share,
        // A new credential for the cluster starts from no answers.
        new DryRunMemo(this.#dryRuns, JSON.stringify([fp, cluster.server, who])),
      );
      this.#clients.set(key, client);
    }
    return madeFor ? client.attributed(madeFor, madeFor.requireExtras === true) : client;
  }

  /** Watches the clients' live-object caches hold open. */
  liveWatchCount(): number {
    let n = 0;
    for (const c of this.#clients.values()) n += c.liveWatchCount;
    return n;
  }

  /**
   * The clusters this factory has connections to, with their version (asked as the controller at
   * most every 30 s, within 10 s, as Argo CD's cluster metrics refresh) and what their watches hold.
   */
  async destinations(): Promise<DestinationInfo[]> {
    const now = Date.now();
    await Promise.all(
      [...this.#transports].map(async ([server, { transport }]) => {
        const known = this.#versions.get(server);
        if (known && now - known.at < VERSION_MAX_AGE_MS) return;
        const res = await transport.send({ method: 'GET', path: '/version', headers: {}, timeoutMs: 10_000 });
        let version = known?.version ?? '';
        const connected = isHttpResponse(res) && res.status === 200;
        if (connected) {
          try {
            const v = (JSON.parse(res.body) as { gitVersion?: unknown }).gitVersion;
            if (typeof v === 'string') version = v;
          } catch {
            // An answer that is not JSON leaves the version as it was.
          }
        }
        this.#versions.set(server, { at: now, version, connected });
      }),
    );
    const out: DestinationInfo[] = [];
    for (const server of this.#transports.keys()) {
      const v = this.#versions.get(server);
      const info: DestinationInfo = {
        server,
        k8sVersion: v?.version ?? '',
        connected: v?.connected ?? false,
        objects: 0,
        resources: 0,
        oldestWatch: undefined,
      };
      const resources = new Set<string>();
      for (const [key, client] of this.#clients) {
        if (!key.startsWith(`${server}\n`)) continue;
        const st = client.liveStats();
        if (!st) continue;
        info.objects += st.objects;
        for (const r of st.resources) resources.add(r);
        if (st.oldestStart !== undefined && (info.oldestWatch === undefined || st.oldestStart < info.oldestWatch))
          info.oldestWatch = st.oldestStart;
      }
      info.resources = resources.size;
      out.push(info);
    }
    return out;
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
