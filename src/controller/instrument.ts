// Counts the destination requests made on an Application's behalf, by HTTP code and identity kind
// (ServiceAccount or the controller's own credential), without changing what the client does: the
// same client object is still the only way to the destination (ARCHITECTURE.md, the identity rule).
import type { DestinationClient, KubeResult } from '../kube/types.ts';

export type IdentityKind = 'serviceaccount' | 'controller';

export function instrumentClient(
  client: DestinationClient,
  count: (code: string, identity: IdentityKind) => void,
): DestinationClient {
  const kind: IdentityKind = 'impersonate' in client.identity ? 'serviceaccount' : 'controller';
  const seen = async <T>(p: Promise<KubeResult<T>>): Promise<KubeResult<T>> => {
    const r = await p;
    // A successful result does not carry its exact 2xx code; 2xx is what it was.
    count(r.ok ? '2xx' : String(r.error.code), kind);
    return r;
  };
  return {
    server: client.server,
    identity: client.identity,
    request: (req) => seen(client.request(req)),
    resolve: (apiVersion, k) => seen(client.resolve(apiVersion, k)),
    resolveGroupKind: (group, k) => seen(client.resolveGroupKind(group, k)),
    apply: (obj, opts) => seen(client.apply(obj, opts)),
    create: (obj, opts) => seen(client.create(obj, opts)),
    get: (ref) => seen(client.get(ref)),
    list: (apiVersion, k, opts) => seen(client.list(apiVersion, k, opts)),
    delete: (ref, opts) => seen(client.delete(ref, opts)),
  };
}
