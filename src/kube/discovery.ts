// Discovery, cached per cluster (not per identity: what kinds a server serves does not depend on
// who asks). A kind that is not found refreshes its group-version once, so a CRD created a moment
// ago is seen; the read itself goes through the asking client, hence as its identity
// (system:discovery is granted to every authenticated user).
import { fail, ok } from './errors.ts';
import { OpenApiCache } from './openapi.ts';
import type { KubeResult, ResourceInfo } from './types.ts';

export type DiscoveryFetch = (path: string) => Promise<KubeResult<unknown>>;

interface ApiResourceList {
  resources?: Array<{ name: string; kind: string; namespaced: boolean; verbs?: string[] }>;
}
interface ApiGroupList {
  groups?: Array<{ name: string; preferredVersion?: { version: string }; versions?: Array<{ version: string }> }>;
}

// A group-version fetched less than this long ago is not fetched again on a miss: several
// objects of an unknown kind in one sync cost one request, not one each.
const MISS_REFRESH_MS = 1_000;

function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

function gvPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

export class DiscoveryCache {
  /** The cluster's OpenAPI v3 documents, beside its discovery (kube/openapi.ts). */
  readonly openapi = new OpenApiCache();
  readonly #lists = new Map<string, { kinds: Map<string, ResourceInfo>; at: number }>();
  readonly #inflight = new Map<string, Promise<KubeResult<Map<string, ResourceInfo>>>>();
  #preferred: { versions: Map<string, string>; at: number } | undefined;

  async #fetchGroupVersion(fetch: DiscoveryFetch, apiVersion: string): Promise<KubeResult<Map<string, ResourceInfo>>> {
    const running = this.#inflight.get(apiVersion);
    if (running) return running;
    const p = (async (): Promise<KubeResult<Map<string, ResourceInfo>>> => {
      const res = await fetch(gvPath(apiVersion));
      if (!res.ok) return res;
      const { group, version } = splitApiVersion(apiVersion);
      const kinds = new Map<string, ResourceInfo>();
      for (const r of (res.value as ApiResourceList).resources ?? []) {
        if (r.name.includes('/')) continue; // subresources (status, scale) are not kinds of their own
        kinds.set(r.kind, {
          apiVersion,
          group,
          version,
          kind: r.kind,
          resource: r.name,
          namespaced: r.namespaced,
          verbs: r.verbs ?? [],
        });
      }
      this.#lists.set(apiVersion, { kinds, at: Date.now() });
      return ok(kinds);
    })();
    this.#inflight.set(apiVersion, p);
    try {
      return await p;
    } finally {
      this.#inflight.delete(apiVersion);
    }
  }

  /** The resource for `apiVersion` + `kind`; a miss refreshes that group-version once. */
  async resolve(fetch: DiscoveryFetch, apiVersion: string, kind: string): Promise<KubeResult<ResourceInfo>> {
    const noMatch = () =>
      fail<ResourceInfo>({
        code: 404,
        reason: 'NotFound',
        message: `no matches for kind "${kind}" in version "${apiVersion}"`,
      });
    const cached = this.#lists.get(apiVersion);
    const hit = cached?.kinds.get(kind);
    if (hit) return ok(hit);
    if (cached && Date.now() - cached.at < MISS_REFRESH_MS) return noMatch();
    const fresh = await this.#fetchGroupVersion(fetch, apiVersion);
    if (!fresh.ok) return fresh.error.code === 404 ? noMatch() : fresh;
    const found = fresh.value.get(kind);
    return found ? ok(found) : noMatch();
  }

  /** The server's preferred version of `group` (core is ""), then the kind in it. */
  async resolveGroupKind(fetch: DiscoveryFetch, group: string, kind: string): Promise<KubeResult<ResourceInfo>> {
    if (group === '') return this.resolve(fetch, 'v1', kind);
    let version = this.#preferred?.versions.get(group);
    if (version === undefined && (!this.#preferred || Date.now() - this.#preferred.at >= MISS_REFRESH_MS)) {
      const res = await fetch('/apis');
      if (!res.ok) return res;
      const versions = new Map<string, string>();
      for (const g of (res.value as ApiGroupList).groups ?? []) {
        const v = g.preferredVersion?.version ?? g.versions?.[0]?.version;
        if (v) versions.set(g.name, v);
      }
      this.#preferred = { versions, at: Date.now() };
      version = versions.get(group);
    }
    if (version === undefined)
      return fail({ code: 404, reason: 'NotFound', message: `the server has no API group "${group}" (kind ${kind})` });
    return this.resolve(fetch, `${group}/${version}`, kind);
  }

  /** Forget everything, for instance after a CRD was deleted. */
  invalidate(): void {
    this.#lists.clear();
    this.#preferred = undefined;
  }
}
