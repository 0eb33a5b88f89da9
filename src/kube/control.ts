// The controller's connection to its own cluster, the control cluster: Applications, AppProjects,
// argocd-cm, cluster Secrets, Events, Leases and the renderer's token. The same transport as every
// destination (transport.ts: keep-alive pool, timeouts, GOAWAY retries, errors as values, the
// metrics hook) with the controller's own credential and no impersonation. Never handed to sync/
// or source/: destination work goes through the DestinationClient built for the Application's
// identity (ARCHITECTURE.md, the identity rule).
import type { KubeConfigLike } from './kubeconfig.ts';
import type { Credential } from './credentials.ts';
import { credentialFromKubeConfig } from './credentials.ts';
import { sendJson, watchTransportOver } from './request.ts';
import { Transport } from './transport.ts';
import type { ResponseHook } from './transport.ts';
import type { KubeResult, RawRequest } from './types.ts';
import type { WatchTransport } from './watch.ts';

/** How long a control-cluster request may go unanswered unless it says otherwise. */
const REQUEST_TIMEOUT_MS = 30_000;

export class ControlClient {
  readonly server: string;
  readonly #transport: Transport;

  constructor(credential: Credential, opts: { onResponse?: ResponseHook | undefined } = {}) {
    this.server = credential.server;
    this.#transport = new Transport(credential, { onResponse: opts.onResponse });
  }

  /** One request as the controller; a non-2xx answer or no answer is a KubeError value. */
  request<T = unknown>(req: RawRequest): Promise<KubeResult<T>> {
    return sendJson<T>(this.#transport, {}, { timeoutMs: REQUEST_TIMEOUT_MS, ...req });
  }

  /** Lists and watches of the control cluster (controller/cache.ts). */
  watchTransport(): WatchTransport {
    return watchTransportOver(this.#transport, {});
  }

  async close(): Promise<void> {
    await this.#transport.close();
  }
}

/** The control cluster of a KubeConfig's current context, as its credential. */
export async function connectControlCluster(
  kc: KubeConfigLike,
  opts: { onResponse?: ResponseHook | undefined } = {},
): Promise<ControlClient> {
  return new ControlClient(await credentialFromKubeConfig(kc), opts);
}
