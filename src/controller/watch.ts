// The controller's watches of its own cluster: the list+watch loop of kube/watch.ts over the
// controller's KubeApi connection.
import type { KubeApi } from './kubeapi.ts';
import { Watch as BaseWatch } from '../kube/watch.ts';
import type { WatchOptions, WatchTransport } from '../kube/watch.ts';

export type { WatchedObject, WatchEvent, WatchEventType, WatchOptions } from '../kube/watch.ts';
export { objectStoreKey } from '../kube/watch.ts';

export function kubeApiWatchTransport(api: KubeApi): WatchTransport {
  return {
    get: (path, signal) => api.request('GET', path, { signal, timeoutMs: 60_000 }),
    stream: async (path, signal) => {
      const res = await api.stream(path, signal);
      return { status: res.statusCode ?? 0, chunks: res, discard: () => void res.resume() };
    },
  };
}

export class Watch extends BaseWatch {
  constructor(api: KubeApi, opts: WatchOptions) {
    super(kubeApiWatchTransport(api), opts);
  }
}
