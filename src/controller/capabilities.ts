// What Helm's .Capabilities say about the destination, as Argo CD passes them to the repo-server:
// the server's version ("v" + the generic version of /version's gitVersion, gitops-engine's
// GetServerVersion) and every group/version and group/version/Kind it serves (APIResourcesToStrings
// with kinds, sorted). Read as the Application's identity (discovery is open to every
// authenticated user) and kept per cluster for ten minutes, so the answer serves every Application
// of that destination: like the live-object watches, the read is made for none of them and names
// none (docs/impersonation.md §11), under a user agent of its own.
import type { DestinationClient, RawRequest } from '../kube/types.ts';

/** The user agent of the shared read of a destination's versions. */
export const DESTINATION_VERSIONS_USER_AGENT = 'impersync (destination versions)';

const get = (path: string): RawRequest => ({ method: 'GET', path, userAgent: DESTINATION_VERSIONS_USER_AGENT });

export interface DestinationVersions {
  kubeVersion?: string | undefined;
  apiVersions?: string[] | undefined;
}

const TTL_MS = 10 * 60_000;

interface GroupList {
  groups?: Array<{ versions?: Array<{ groupVersion: string }> }>;
}
interface ResourceList {
  resources?: Array<{ name: string; kind: string }>;
}

export class DestinationCapabilities {
  readonly #known = new Map<string, { at: number; value: Promise<DestinationVersions> }>();

  /** The destination's versions, or nothing when they cannot be read (helm then uses its defaults). */
  for(client: DestinationClient): Promise<DestinationVersions> {
    const hit = this.#known.get(client.server);
    if (hit && Date.now() - hit.at < TTL_MS) return hit.value;
    const value = discover(client).catch((): DestinationVersions => ({}));
    this.#known.set(client.server, { at: Date.now(), value });
    // A failed read is not kept: the next render asks again.
    void value.then((v) => {
      if (v.kubeVersion === undefined) this.#known.delete(client.server);
    });
    return value;
  }
}

async function discover(client: DestinationClient): Promise<DestinationVersions> {
  const version = await client.request<{ gitVersion?: string }>(get('/version'));
  const kubeVersion = version.ok ? genericVersion(version.value.gitVersion ?? '') : undefined;
  const groupVersions = ['v1'];
  const groups = await client.request<GroupList>(get('/apis'));
  if (groups.ok)
    for (const g of groups.value.groups ?? []) for (const v of g.versions ?? []) groupVersions.push(v.groupVersion);
  const lists = await Promise.all(
    groupVersions.map(async (gv) => {
      const r = await client.request<ResourceList>(get(gv === 'v1' ? '/api/v1' : `/apis/${gv}`));
      return { gv, resources: r.ok ? (r.value.resources ?? []) : [] };
    }),
  );
  const all = new Set<string>();
  for (const { gv, resources } of lists) {
    all.add(gv);
    for (const r of resources) if (!r.name.includes('/')) all.add(`${gv}/${r.kind}`);
  }
  return { ...(kubeVersion ? { kubeVersion } : {}), apiVersions: [...all].sort() };
}

/** k8s.io/apimachinery's ParseGeneric then "v" + String(): "v1.34.3-gke.100" → "v1.34.3". */
export function genericVersion(gitVersion: string): string | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(gitVersion.trim());
  if (!m) return undefined;
  return `v${m[1]}.${m[2]}${m[3] !== undefined ? `.${m[3]}` : ''}`;
}
