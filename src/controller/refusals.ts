// Which requests of one comparison or sync the API server refused with a 403: the same destination
// client, watched, so that the controller asks which rights are missing (rights.ts) only after a
// refusal, and knows which of the comparison's messages those refusals became. It changes nothing
// a request does, nor whom it acts as.
import type { DestinationClient, KubeResult } from '../kube/types.ts';

export interface WatchedClient {
  /** `client`, recording each 403 it gets back. */
  client: DestinationClient;
  /** The API server's messages of the 403s seen so far, in order, once each. */
  readonly refusals: readonly string[];
}

export function watchRefusals(client: DestinationClient): WatchedClient {
  const refusals: string[] = [];
  const note = async <T>(p: Promise<KubeResult<T>>): Promise<KubeResult<T>> => {
    const res = await p;
    if (!res.ok && res.error.code === 403 && !refusals.includes(res.error.message)) refusals.push(res.error.message);
    return res;
  };
  const wrap = (c: DestinationClient): DestinationClient => ({
    server: c.server,
    identity: c.identity,
    request: (req) => note(c.request(req)),
    resolve: (apiVersion, kind) => note(c.resolve(apiVersion, kind)),
    resolveGroupKind: (group, kind) => note(c.resolveGroupKind(group, kind)),
    apply: (obj, opts) => note(c.apply(obj, opts)),
    create: (obj, opts) => note(c.create(obj, opts)),
    get: (ref) => note(c.get(ref)),
    list: (apiVersion, kind, opts) => note(c.list(apiVersion, kind, opts)),
    delete: (ref, opts) => note(c.delete(ref, opts)),
    openApiV3: (apiVersion) => note(c.openApiV3(apiVersion)),
    uncached: () => wrap(c.uncached()),
  });
  return { client: wrap(client), refusals };
}

/** The messages among `messages` that carry none of the refusals (the others are what the refusals became). */
export function withoutRefusals(messages: readonly string[], refusals: readonly string[]): string[] {
  return messages.filter((m) => !refusals.some((r) => m.includes(r)));
}
