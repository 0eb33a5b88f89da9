// The destination's OpenAPI v3 documents, one per group-version, cached per cluster like
// discovery (what a server serves does not depend on who asks; the read goes through the asking
// client, and /openapi/* is granted to every authenticated user by system:discovery). The index
// (/openapi/v3) names each group-version's document by a URL carrying a hash of its content, so a
// CRD's schema update is a new URL: the index is read again when older than a few seconds, and a
// document only when its URL changes. Bounded: a few dozen documents per cluster, least recently
// used dropped first.
import { fail, ok } from './errors.ts';
import type { KubeResult, OpenApiDocument, RawRequest } from './types.ts';

export type OpenApiFetch = (req: RawRequest) => Promise<KubeResult<unknown>>;

const INDEX_MAX_AGE_MS = 5_000;
const MAX_DOCUMENTS = 64;

function gvKey(apiVersion: string): string {
  return apiVersion.includes('/') ? `apis/${apiVersion}` : `api/${apiVersion}`;
}

export class OpenApiCache {
  #index: { urls: Map<string, string>; at: number } | undefined;
  #indexing: Promise<KubeResult<Map<string, string>>> | undefined;
  readonly #documents = new Map<string, OpenApiDocument>();
  readonly #fetching = new Map<string, Promise<KubeResult<OpenApiDocument>>>();

  async #readIndex(fetch: OpenApiFetch): Promise<KubeResult<Map<string, string>>> {
    if (this.#indexing) return this.#indexing;
    this.#indexing = (async () => {
      const res = await fetch({ method: 'GET', path: '/openapi/v3' });
      if (!res.ok) return res;
      const paths = (res.value as { paths?: Record<string, { serverRelativeURL?: unknown }> } | null)?.paths ?? {};
      const urls = new Map<string, string>();
      for (const [k, v] of Object.entries(paths))
        if (typeof v?.serverRelativeURL === 'string') urls.set(k, v.serverRelativeURL);
      this.#index = { urls, at: Date.now() };
      return ok(urls);
    })();
    try {
      return await this.#indexing;
    } finally {
      this.#indexing = undefined;
    }
  }

  /** The document of `apiVersion`'s group-version; a 404 when the server publishes none. */
  async document(fetch: OpenApiFetch, apiVersion: string): Promise<KubeResult<OpenApiDocument>> {
    const key = gvKey(apiVersion);
    let urls = this.#index && Date.now() - this.#index.at < INDEX_MAX_AGE_MS ? this.#index.urls : undefined;
    if (!urls) {
      const idx = await this.#readIndex(fetch);
      if (!idx.ok) return idx;
      urls = idx.value;
    }
    const url = urls.get(key);
    if (url === undefined)
      return fail({ code: 404, reason: 'NotFound', message: `the server publishes no OpenAPI v3 document for ${key}` });
    const cached = this.#documents.get(url);
    if (cached) {
      this.#documents.delete(url);
      this.#documents.set(url, cached);
      return ok(cached);
    }
    const running = this.#fetching.get(url);
    if (running) return running;
    const p = (async (): Promise<KubeResult<OpenApiDocument>> => {
      const q = url.indexOf('?');
      const query = q < 0 ? {} : Object.fromEntries(new URLSearchParams(url.slice(q + 1)));
      const res = await fetch({ method: 'GET', path: q < 0 ? url : url.slice(0, q), query });
      if (!res.ok) return res;
      const doc: OpenApiDocument = Object.freeze({ url, document: res.value });
      for (const [u] of this.#documents) {
        if (this.#documents.size < MAX_DOCUMENTS) break;
        this.#documents.delete(u);
      }
      // The same group-version under an older hash is stale now.
      for (const [u] of this.#documents) if (u.split('?')[0] === url.split('?')[0]) this.#documents.delete(u);
      this.#documents.set(url, doc);
      return ok(doc);
    })();
    this.#fetching.set(url, p);
    try {
      return await p;
    } finally {
      this.#fetching.delete(url);
    }
  }
}
