// Pulling Helm charts (and Argo CD's oci:// artifacts) from an OCI registry, over the distribution
// API in this process: tags listed for a version constraint (helm's `_` for `+`), the manifest for
// a tag, its chart layer downloaded and checked against its sha256 digest. The repository's
// username and password are sent as Basic credentials to the registry, or exchanged at the token
// endpoint its challenge names (Docker's token protocol) for a pull token. Implemented here rather
// than through `helm pull` so that credentials never touch a file or an argument, the TLS settings
// are the same code as for Helm repositories (http.ts), and the resolved tag and digest (needed for
// status and the caches) come from the same requests.
import { createHash } from 'node:crypto';
import type { RepositoryAccess } from '../api/repository.ts';
import { ByteLru } from './byte-lru.ts';
import { SourceError, formatBytes, redactURL, unparsable } from './errors.ts';
import { basicAuth, httpGet, origin, statusError, type FetchResult } from './http.ts';

export const HELM_CHART_LAYER = 'application/vnd.cncf.helm.chart.content.v1.tar+gzip';
const MANIFEST_TYPES = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

export interface OciLimits {
  maxLayerBytes: number;
  timeoutMs: number;
  /** Bytes of one repository's tag listing, all its pages together. Default 16 MiB. */
  maxTagListBytes?: number;
  /** Bytes of tags remembered for all repositories together. Default 64 MiB. */
  tagCacheBytes?: number;
}

const DEFAULT_MAX_TAG_LIST_BYTES = 16 * 1024 * 1024;
export const DEFAULT_TAG_CACHE_BYTES = 64 * 1024 * 1024;
/** What a remembered tag costs besides its characters (the string, the array slot). */
const TAG_OVERHEAD_BYTES = 32;

export interface OciReference {
  /** `https://host:port` */
  registry: string;
  /** The repository path in the registry (`charts/guestbook`). */
  name: string;
  shown: string;
}

/** `oci://host/path`, `host/path` → where it lives. */
export function ociReference(url: string, access: RepositoryAccess | undefined): OciReference {
  const bare = url.replace(/^oci:\/\//i, '').replace(/\/+$/, '');
  const slash = bare.indexOf('/');
  if (slash <= 0 || /[\s@]/.test(bare) || bare.startsWith('-')) {
    throw new SourceError('InvalidSource', `OCI reference '${redactURL(url)}' is not host/repository`);
  }
  const host = bare.slice(0, slash);
  const name = bare.slice(slash + 1);
  if (!/^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$/.test(name)) {
    throw new SourceError('InvalidSource', `OCI repository name '${name}' of '${redactURL(url)}' is not valid`);
  }
  const scheme = access?.insecureOCIForceHttp ? 'http' : 'https';
  return { registry: `${scheme}://${host}`, name, shown: `oci://${bare}` };
}

export interface OciManifest {
  /** The manifest's own digest (`sha256:...`): what an unpacked copy is known by. */
  digest: string;
  /** `'<registry>/<name>:<tag>'`, for messages. */
  shown: string;
  layerDigest: string;
  mediaType: string;
}

export class OciRegistries {
  readonly #limits: OciLimits;
  readonly #credentialId: (access: RepositoryAccess | undefined) => Promise<string>;
  /** By registry, repository and credential, at most tagCacheBytes in all. */
  readonly #tags: ByteLru<{ at: number; tags: string[] }>;
  /** Tag listings fetched (tests and bench/repos). */
  tagFetches = 0;

  constructor(opts: { limits: OciLimits; credentialId: (access: RepositoryAccess | undefined) => Promise<string> }) {
    this.#limits = opts.limits;
    this.#credentialId = opts.credentialId;
    this.#tags = new ByteLru(opts.limits.tagCacheBytes ?? DEFAULT_TAG_CACHE_BYTES);
  }

  /** The repository's tags, `_` read as `+` (helm's encoding of build metadata), at most once per `maxAgeMs`. */
  async tags(ref: OciReference, access: RepositoryAccess | undefined, maxAgeMs = 0): Promise<string[]> {
    const key = `${ref.registry}/${ref.name}\n${await this.#credentialId(access)}`;
    const known = this.#tags.get(key);
    if (known && maxAgeMs > 0 && Date.now() - known.at < maxAgeMs) return known.tags;
    this.tagFetches++;
    const what = `the tags of '${ref.shown}'`;
    const budget = this.#limits.maxTagListBytes ?? DEFAULT_MAX_TAG_LIST_BYTES;
    const tags: string[] = [];
    let read = 0;
    let path: string | undefined = `/v2/${ref.name}/tags/list?n=1000`;
    for (let page = 0; path && page < 50; page++) {
      // One budget for all the pages: a registry cannot make the listing large page by page.
      const res = await this.#get(ref, access, path, 'application/json', what, budget - read).catch((err: unknown) => {
        if (!(err instanceof SourceError) || err.reason !== 'TooLarge') throw err;
        throw new SourceError('TooLarge', `${what} are more than the renderer's limit of ${formatBytes(budget)}`);
      });
      read += res.body.length;
      let body: { tags?: unknown };
      try {
        body = JSON.parse(res.body.toString('utf8')) as { tags?: unknown };
      } catch {
        throw unparsable(`${what}: the registry's answer`, 'JSON', res.body.length);
      }
      // One by one: a page of a few hundred thousand tags is more arguments than a call may take.
      if (Array.isArray(body?.tags)) for (const t of body.tags) if (typeof t === 'string') tags.push(t);
      const link = /<([^>]+)>;\s*rel="next"/.exec(String(res.headers['link'] ?? ''));
      path = link
        ? new URL(link[1] as string, ref.registry).pathname + new URL(link[1] as string, ref.registry).search
        : undefined;
    }
    const decoded = tags.map((t) => t.replaceAll('_', '+'));
    const bytes = decoded.reduce((n, t) => n + t.length * 2 + TAG_OVERHEAD_BYTES, 0);
    this.#tags.set(key, { at: Date.now(), tags: decoded }, bytes);
    return decoded;
  }

  /** The manifest digest of `tag` and its content layer (the Helm chart layer when `helm`). */
  async manifest(
    ref: OciReference,
    tag: string,
    access: RepositoryAccess | undefined,
    opts: { helm: boolean },
  ): Promise<OciManifest> {
    const shown = `'${ref.shown}:${tag}'`;
    const res = await this.#get(
      ref,
      access,
      `/v2/${ref.name}/manifests/${encodeURIComponent(tag.replaceAll('+', '_'))}`,
      MANIFEST_TYPES,
      shown,
    );
    const digest = `sha256:${createHash('sha256').update(res.body).digest('hex')}`;
    let manifest: { layers?: Array<{ mediaType?: string; digest?: string; size?: number }> };
    try {
      manifest = JSON.parse(res.body.toString('utf8')) as typeof manifest;
    } catch {
      throw unparsable(`the manifest of ${shown}`, 'JSON', res.body.length);
    }
    const layers = manifest.layers ?? [];
    const layer = opts.helm
      ? layers.find((l) => l.mediaType === HELM_CHART_LAYER)
      : (layers.find((l) => l.mediaType === HELM_CHART_LAYER) ??
        layers.find((l) => /tar(\+|\.)gzip$/.test(l.mediaType ?? '')));
    if (!layer?.digest || !/^sha256:[0-9a-f]{64}$/.test(layer.digest)) {
      throw new SourceError('InvalidSource', `${shown} has no ${opts.helm ? 'Helm chart' : 'tar+gzip'} layer`);
    }
    if ((layer.size ?? 0) > this.#limits.maxLayerBytes) {
      throw new SourceError('TooLarge', `the layer of ${shown} is larger than the renderer's limit`);
    }
    return { digest, shown, layerDigest: layer.digest, mediaType: layer.mediaType ?? '' };
  }

  /** The content layer `manifest` names, checked against its digest. */
  async layer(ref: OciReference, manifest: OciManifest, access: RepositoryAccess | undefined): Promise<Buffer> {
    const what = `the layer of ${manifest.shown}`;
    const blob = await this.#get(ref, access, `/v2/${ref.name}/blobs/${manifest.layerDigest}`, '*/*', what);
    const got = `sha256:${createHash('sha256').update(blob.body).digest('hex')}`;
    if (got !== manifest.layerDigest) {
      throw new SourceError('InvalidSource', `${what} has digest ${got}, not the manifest's ${manifest.layerDigest}`);
    }
    return blob.body;
  }

  /** A GET on the registry, answering its auth challenge once (Basic, or a Bearer token from its realm). */
  async #get(
    ref: OciReference,
    access: RepositoryAccess | undefined,
    path: string,
    accept: string,
    what: string,
    maxBytes: number = this.#limits.maxLayerBytes,
  ): Promise<FetchResult> {
    const url = `${ref.registry}${path}`;
    const get = (authorization?: string) =>
      httpGet(url, access, {
        headers: { accept, ...(authorization ? { authorization } : {}) },
        trustedOrigin: origin(url),
        maxBytes,
        timeoutMs: this.#limits.timeoutMs,
        what,
      });
    let res = await get();
    if (res.status === 401) {
      const challenge = String(res.headers['www-authenticate'] ?? '');
      if (/^bearer/i.test(challenge)) {
        res = await get(`Bearer ${await this.#token(ref, access, challenge, what)}`);
      } else {
        const basic = basicAuth(access);
        if (basic) res = await get(basic);
      }
    }
    if (res.status !== 200) throw statusError(what, res.status);
    return res;
  }

  async #token(
    ref: OciReference,
    access: RepositoryAccess | undefined,
    challenge: string,
    what: string,
  ): Promise<string> {
    const params: Record<string, string> = {};
    for (const m of challenge.matchAll(/(\w+)="([^"]*)"/g)) params[m[1] as string] = m[2] as string;
    if (!params['realm'])
      throw new SourceError('RepositoryUnreachable', `${what}: the registry's challenge names no token realm`);
    const realm = new URL(params['realm']);
    if (params['service']) realm.searchParams.set('service', params['service']);
    realm.searchParams.set('scope', params['scope'] ?? `repository:${ref.name}:pull`);
    const basic = basicAuth(access);
    const res = await httpGet(realm.href, access, {
      headers: basic ? { authorization: basic } : {},
      trustedOrigin: origin(realm.href),
      maxBytes: 1024 * 1024,
      timeoutMs: this.#limits.timeoutMs,
      what: `the token for ${what}`,
    });
    if (res.status !== 200) throw statusError(`the token for ${what}`, res.status);
    let body: { token?: unknown; access_token?: unknown } | null;
    try {
      body = JSON.parse(res.body.toString('utf8')) as typeof body;
    } catch {
      const endpoint = redactURL(`${realm.origin}${realm.pathname}`);
      throw unparsable(
        `${what}: the answer of the token endpoint '${endpoint}'`,
        'JSON',
        res.body.length,
        'RepositoryUnreachable',
      );
    }
    const token = [body?.token, body?.access_token].find((t): t is string => typeof t === 'string' && t !== '');
    if (!token) throw new SourceError('RepositoryUnreachable', `${what}: the registry's token endpoint gave no token`);
    return token;
  }
}
