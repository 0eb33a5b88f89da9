// The minimal client, the practical limit every benchmark compares with: undici with keep-alive
// (one connection per request in flight), sending only server-side applies as raw JSON, each with
// the controller's credentials impersonating the identity the caller names (as impersync acts).
import { Agent, request } from 'undici';
import type { KubeObject, TestControlPlane } from '../../test/support/index.ts';
import { mapLimit } from '../../src/sync/util.ts';

export type DirectWrite = { object: KubeObject; asUser: string };

const PLURAL: Record<string, string> = {
  ConfigMap: 'configmaps',
  Secret: 'secrets',
  Service: 'services',
  ServiceAccount: 'serviceaccounts',
  Deployment: 'deployments',
};

function applyPath(o: KubeObject, fieldManager: string): string {
  const base = o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`;
  const plural = PLURAL[o.kind];
  if (!plural) throw new Error(`no plural for kind ${o.kind}`);
  return `${base}/namespaces/${o.metadata.namespace}/${plural}/${o.metadata.name}?fieldManager=${fieldManager}&force=true`;
}

/** Applies every write with `concurrency` requests in flight; the first failure rejects. */
export async function applyDirect(
  cp: TestControlPlane,
  writes: DirectWrite[],
  concurrency: number,
  fieldManager = 'direct-bench',
): Promise<{ ms: number; from: number; to: number }> {
  const token = await cp.tokenFor('controller');
  const agent = new Agent({ connect: { ca: cp.caPem }, connections: concurrency, keepAliveTimeout: 30_000 });
  const work = writes.map(({ object, asUser }) => ({
    object,
    asUser,
    path: applyPath(object, fieldManager),
    body: JSON.stringify(object),
  }));
  try {
    const from = Date.now();
    await mapLimit(work, concurrency, async ({ object: o, asUser, path, body }) => {
      const res = await request(`${cp.server}${path}`, {
        method: 'PATCH',
        dispatcher: agent,
        headers: {
          authorization: `Bearer ${token}`,
          'impersonate-user': asUser,
          'content-type': 'application/apply-patch+yaml',
          accept: 'application/json',
        },
        body,
      });
      const text = await res.body.text();
      if (res.statusCode >= 300)
        throw new Error(
          `apply ${o.kind} ${o.metadata.namespace}/${o.metadata.name}: HTTP ${res.statusCode} ${text.slice(0, 500)}`,
        );
    });
    const to = Date.now();
    return { ms: to - from, from, to };
  } finally {
    await agent.close();
  }
}
