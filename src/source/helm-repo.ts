// Helm chart repositories over HTTP(S) (spec.source.chart with a Helm repository repoURL, and
// Git charts' dependencies): index.yaml fetched with the repository's credentials, one fetch per
// repository and credential however many Applications ask within the allowed age (refresh
// coalescing), the version resolved as Argo CD resolves targetRevision (versions.ts), the chart
// downloaded from the URL the index names (credentials only to the repository's own origin,
// unless helm.passCredentials), its sha256 digest checked against the index.
import { createHash } from 'node:crypto';
import type { RepositoryAccess } from '../api/repository.ts';
import { ByteLru } from './byte-lru.ts';
import { SourceError, redactURL } from './errors.ts';
import { IndexParser, type IndexParseLimits } from './helm-index.ts';
import { basicAuth, httpGet, origin, statusError } from './http.ts';
import { maxVersion } from './versions.ts';

export interface HelmRepoLimits {
  /** Largest index.yaml read. Default 64 MiB. */
  maxIndexBytes: number;
  /** Largest chart archive read. Default 64 MiB. */
  maxChartBytes: number;
  timeoutMs: number;
  /** How index.yaml is parsed: off the event loop, within these (helm-index.ts). */
  indexParse?: Partial<IndexParseLimits>;
  /** Bytes of parsed indexes remembered for all repositories together. Default 128 MiB. */
  indexCacheBytes?: number;
}

export const DEFAULT_INDEX_CACHE_BYTES = 128 * 1024 * 1024;

export const DEFAULT_HELM_REPO_LIMITS: HelmRepoLimits = {
  maxIndexBytes: 64 * 1024 * 1024,
  maxChartBytes: 64 * 1024 * 1024,
  timeoutMs: 60_000,
};

export interface ChartVersion {
  version: string;
  urls: string[];
  digest?: string | undefined;
}

type Index = Map<string, ChartVersion[]>;

export class HelmRepositories {
  readonly #limits: HelmRepoLimits;
  readonly #credentialId: (access: RepositoryAccess | undefined) => Promise<string>;
  /** By repository and credential, at most indexCacheBytes in all. */
  readonly #indexes: ByteLru<{ at: number; index: Index }>;
  readonly #inFlight = new Map<string, Promise<Index>>();
  readonly #parser: IndexParser;
  /** index.yaml downloads so far (tests and bench/repos). */
  indexFetches = 0;

  constructor(opts: {
    limits?: Partial<HelmRepoLimits>;
    credentialId: (access: RepositoryAccess | undefined) => Promise<string>;
  }) {
    this.#limits = { ...DEFAULT_HELM_REPO_LIMITS, ...opts.limits };
    this.#parser = new IndexParser(this.#limits.indexParse);
    this.#indexes = new ByteLru(this.#limits.indexCacheBytes ?? DEFAULT_INDEX_CACHE_BYTES);
    this.#credentialId = opts.credentialId;
  }

  /** The chart's versions in the repository's index (fetched at most once per `maxAgeMs` per credential). */
  async versions(
    repoURL: string,
    chart: string,
    access: RepositoryAccess | undefined,
    maxAgeMs = 0,
  ): Promise<ChartVersion[]> {
    const index = await this.#index(repoURL, access, maxAgeMs);
    const entries = index.get(chart);
    if (!entries) throw new SourceError('RevisionNotFound', `chart '${chart}' not found in index`);
    return entries;
  }

  /** targetRevision resolved against the index: an exact version as written, or the highest satisfying a constraint. */
  async resolve(
    repoURL: string,
    chart: string,
    targetRevision: string | undefined,
    access: RepositoryAccess | undefined,
    maxAgeMs = 0,
  ): Promise<string> {
    const versions = await this.versions(repoURL, chart, access, maxAgeMs);
    try {
      return maxVersion(
        targetRevision?.trim() || '*',
        versions.map((v) => v.version),
      );
    } catch (err) {
      throw new SourceError(
        'RevisionNotFound',
        `chart '${chart}' of '${redactURL(repoURL)}': ${(err as Error).message}`,
      );
    }
  }

  /** The index's entry for `version` of the chart: where its archive is, and its digest. */
  async entry(
    repoURL: string,
    chart: string,
    version: string,
    access: RepositoryAccess | undefined,
    maxAgeMs = 0,
  ): Promise<ChartVersion> {
    const versions = await this.versions(repoURL, chart, access, maxAgeMs);
    const entry = versions.find((v) => v.version === version);
    if (!entry || entry.urls.length === 0)
      throw new SourceError('RevisionNotFound', `${shownChart(repoURL, chart, version)} not found in index`);
    return entry;
  }

  /** The chart archive of the index's `entry` for `version`, checked against its digest. */
  async download(
    repoURL: string,
    chart: string,
    version: string,
    entry: ChartVersion,
    access: RepositoryAccess | undefined,
    opts: { passCredentials?: boolean } = {},
  ): Promise<{ archive: Buffer; digest: string }> {
    const shown = shownChart(repoURL, chart, version);
    const base = new URL(repoURL.endsWith('/') ? repoURL : `${repoURL}/`);
    const url = new URL(entry.urls[0] as string, base).href;
    const auth = basicAuth(access);
    const res = await httpGet(url, access, {
      headers: auth ? { authorization: auth } : {},
      // helm's rule: credentials go to the chart URL only on the repository's host, or with passCredentials.
      trustedOrigin: opts.passCredentials ? origin(url) : origin(base.href),
      maxBytes: this.#limits.maxChartBytes,
      timeoutMs: this.#limits.timeoutMs,
      what: shown,
    });
    if (res.status !== 200) throw statusError(shown, res.status);
    const digest = createHash('sha256').update(res.body).digest('hex');
    if (entry.digest && entry.digest.toLowerCase() !== digest) {
      throw new SourceError(
        'InvalidSource',
        `${shown}: the archive's sha256 digest ${digest} is not the index's ${entry.digest}`,
      );
    }
    return { archive: res.body, digest };
  }

  async #index(repoURL: string, access: RepositoryAccess | undefined, maxAgeMs: number): Promise<Index> {
    const key = `${repoURL.replace(/\/+$/, '')}\n${await this.#credentialId(access)}`;
    const known = this.#indexes.get(key);
    if (known && maxAgeMs > 0 && Date.now() - known.at < maxAgeMs) return known.index;
    const running = this.#inFlight.get(key);
    if (running) return running;
    const p = this.#fetchIndex(repoURL, access)
      .then(({ index, bytes }) => {
        this.#indexes.set(key, { at: Date.now(), index }, bytes);
        return index;
      })
      .finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, p);
    return p;
  }

  async #fetchIndex(repoURL: string, access: RepositoryAccess | undefined): Promise<{ index: Index; bytes: number }> {
    let url: string;
    try {
      url = new URL('index.yaml', repoURL.endsWith('/') ? repoURL : `${repoURL}/`).href;
    } catch {
      throw new SourceError('InvalidSource', `repository '${redactURL(repoURL)}' is not a URL`);
    }
    if (!/^https?:$/.test(new URL(url).protocol)) {
      throw new SourceError('InvalidSource', `Helm repository '${redactURL(repoURL)}' must be an http or https URL`);
    }
    const what = `Helm repository '${redactURL(repoURL)}'`;
    const auth = basicAuth(access);
    this.indexFetches++;
    const res = await httpGet(url, access, {
      headers: auth ? { authorization: auth } : {},
      trustedOrigin: origin(url),
      maxBytes: this.#limits.maxIndexBytes,
      timeoutMs: this.#limits.timeoutMs,
      what,
    });
    if (res.status !== 200) throw statusError(what, res.status);
    return this.#parser.parse(res.body, what);
  }
}

function shownChart(repoURL: string, chart: string, version: string): string {
  return `chart '${chart}' version '${version}' of '${redactURL(repoURL)}'`;
}
