// Whether each kind among some objects is namespaced, from the destination's discovery read through
// the Application's own client (as its identity, like every other read): what the project's
// resource allow and deny lists need to know (spec §9). Unknown when discovery cannot say.
import type { KubeObject } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';

/** group, kind → namespaced, or undefined when the destination does not serve the kind. */
export type ResourceScopes = (group: string, kind: string) => boolean | undefined;

export async function resourceScopes(
  client: DestinationClient,
  objects: readonly KubeObject[],
): Promise<ResourceScopes> {
  const scopes = new Map<string, boolean | undefined>();
  for (const o of objects) {
    const key = `${groupOf(o.apiVersion)}/${o.kind}`;
    if (scopes.has(key)) continue;
    const info = await client.resolve(o.apiVersion, o.kind);
    scopes.set(key, info.ok ? info.value.namespaced : undefined);
  }
  return (group, kind) => scopes.get(`${group}/${kind}`);
}
