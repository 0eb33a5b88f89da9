// Sources that are not Git: a chart from a Helm repository (spec.source.chart), a chart from an OCI
// registry (chart with an enableOCI repository or a repoURL without a scheme, Argo CD's
// IsHelmOciRepo), and an oci:// artifact (Argo CD 3's OCI source: its layer unpacked, `path` in it).
// Each is resolved to a version (or tag), downloaded with the repository's credentials, checked
// against its digest and unpacked once (tar.ts) into a folder keyed by the credential and the
// digest, so that an archive fetched with one credential is never read for a request with another.
// The unpacked folder is then rendered like a checkout (render.ts), read-only and shared.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { ApplicationSource } from '../api/application.ts';
import type { RepositoryAccess } from '../api/repository.ts';
import { SourceError, redactURL } from './errors.ts';
import { HelmRepositories } from './helm-repo.ts';
import { KeyedMutex } from './lock.ts';
import { HELM_CHART_LAYER, OciRegistries, ociReference } from './oci.ts';
import { readTgz, writeEntries, type UntarLimits } from './tar.ts';
import { isVersion, maxVersion } from './versions.ts';

/** Versions remembered as unpacked (charts.ts' #seen), oldest forgotten first. */
const MAX_SEEN = 4096;

export type SourceKind = 'git' | 'helm' | 'oci-chart' | 'oci';

/** Which kind of repository a source reads, as Argo CD decides it (IsOCI before IsHelm). */
export function sourceKind(source: ApplicationSource, access: RepositoryAccess | undefined): SourceKind {
  if (/^oci:\/\//i.test(source.repoURL)) return 'oci';
  if (!source.chart) return 'git';
  const noScheme = !/^[a-z][a-z0-9+.-]*:\/\//i.test(source.repoURL.trim());
  return access?.enableOCI || access?.type === 'oci' || noScheme ? 'oci-chart' : 'helm';
}

export interface UnpackedSource {
  /** The unpacked folder, the "checkout" to render. */
  dir: string;
  /** Path of the chart or the app inside it. */
  path: string;
  /** The version or tag rendered (status.sync.revision). */
  revision: string;
}

export class ChartSources {
  readonly helm: HelmRepositories;
  readonly oci: OciRegistries;
  readonly #root: string;
  readonly #limits: UntarLimits;
  readonly #credentialId: (access: RepositoryAccess | undefined) => Promise<string>;
  readonly #mutex = new KeyedMutex();
  /** Versions unpacked, by repository, credential, version and the digest their index or manifest gave. */
  readonly #seen = new Map<string, string>();

  constructor(opts: {
    cacheDir: string;
    limits: UntarLimits & { timeoutMs: number };
    /** Bytes of parsed Helm indexes and of OCI tag listings kept (default: theirs). */
    indexCacheBytes?: number;
    tagCacheBytes?: number;
    credentialId: (access: RepositoryAccess | undefined) => Promise<string>;
  }) {
    this.#root = path.join(opts.cacheDir, 'charts');
    this.#limits = opts.limits;
    this.#credentialId = opts.credentialId;
    this.helm = new HelmRepositories({
      credentialId: opts.credentialId,
      limits: {
        maxChartBytes: opts.limits.maxBytes,
        timeoutMs: opts.limits.timeoutMs,
        ...(opts.indexCacheBytes !== undefined ? { indexCacheBytes: opts.indexCacheBytes } : {}),
      },
    });
    this.oci = new OciRegistries({
      credentialId: opts.credentialId,
      limits: {
        maxLayerBytes: opts.limits.maxBytes,
        timeoutMs: opts.limits.timeoutMs,
        ...(opts.tagCacheBytes !== undefined ? { tagCacheBytes: opts.tagCacheBytes } : {}),
      },
    });
  }

  /** The version (Helm) or tag (OCI) `targetRevision` names now. */
  async resolve(
    source: ApplicationSource,
    revision: string | undefined,
    access: RepositoryAccess | undefined,
    maxAgeMs = 0,
  ): Promise<string> {
    const kind = sourceKind(source, access);
    const wanted = (revision ?? source.targetRevision ?? '').trim();
    if (kind === 'helm') return this.helm.resolve(source.repoURL, source.chart as string, wanted, access, maxAgeMs);
    const ref = ociReference(
      kind === 'oci-chart' ? `${source.repoURL.replace(/\/+$/, '')}/${source.chart}` : source.repoURL,
      access,
    );
    if (wanted !== '' && (isVersion(wanted) || !/[<>=~^*|, xX]/.test(wanted))) return wanted;
    const tags = await this.oci.tags(ref, access, maxAgeMs);
    try {
      return maxVersion(wanted || '*', tags);
    } catch (err) {
      throw new SourceError('RevisionNotFound', `'${ref.shown}': ${(err as Error).message}`);
    }
  }

  /**
   * `targetRevision` (or `revision`) resolved and unpacked: the index or tag list read once, within
   * `maxAgeMs` (0: read now), and the archive downloaded only when this version's digest has not
   * been unpacked for this credential yet.
   */
  async get(
    source: ApplicationSource,
    revision: string | undefined,
    access: RepositoryAccess | undefined,
    maxAgeMs = 0,
  ): Promise<UnpackedSource> {
    const version = await this.resolve(source, revision, access, maxAgeMs);
    // The index the version was just resolved from is the one to find its archive in.
    return this.unpack(source, version, access, { maxAgeMs: Number.POSITIVE_INFINITY });
  }

  /** Finds, or downloads and unpacks, `version` of the source. */
  async unpack(
    source: ApplicationSource,
    version: string,
    access: RepositoryAccess | undefined,
    opts: { maxAgeMs?: number } = {},
  ): Promise<UnpackedSource> {
    const kind = sourceKind(source, access);
    const cred = await this.#credentialId(access);
    const shown = `'${redactURL(source.repoURL)}'`;
    const appPath = kind === 'oci' ? source.path || '.' : chartFolder(source);
    // What the archive is known by before it is downloaded, and how to download it.
    let known: string | undefined;
    let download: () => Promise<{ archive: Buffer; digest: string; helmLayer: boolean }>;
    if (kind === 'helm') {
      const chart = source.chart as string;
      const entry = await this.helm.entry(source.repoURL, chart, version, access, opts.maxAgeMs ?? 0);
      if (entry.digest && /^[0-9a-f]{64}$/i.test(entry.digest)) known = entry.digest.toLowerCase();
      download = async () => ({
        ...(await this.helm.download(source.repoURL, chart, version, entry, access, {
          passCredentials: source.helm?.['passCredentials'] === true,
        })),
        helmLayer: true,
      });
    } else {
      const ref = ociReference(
        kind === 'oci-chart' ? `${source.repoURL.replace(/\/+$/, '')}/${source.chart}` : source.repoURL,
        access,
      );
      const manifest = await this.oci.manifest(ref, version, access, { helm: kind === 'oci-chart' });
      known = manifest.digest.replace(/^sha256:/, '');
      download = async () => ({
        archive: await this.oci.layer(ref, manifest, access),
        digest: known as string,
        helmLayer: manifest.mediaType === HELM_CHART_LAYER,
      });
    }
    // Found only by what this very repository said of this version before, when its archive was
    // downloaded and checked: a digest another index claims names nothing unpacked for it.
    const seenAs =
      known === undefined ? undefined : [kind, cred, source.repoURL, source.chart ?? '', version, known].join('\n');
    const seen = seenAs === undefined ? undefined : this.#seen.get(seenAs);
    if (seen !== undefined && existsSync(seen)) return { dir: seen, path: appPath, revision: version };
    const { archive, digest, helmLayer } = await download();
    // A chart is written under a folder of its name: the same archive under two names is two folders.
    const named = kind === 'oci' ? '' : `-${chartFolder(source)}`;
    const dir = path.join(this.#root, `${kind}-${cred}-${digest.slice(0, 40)}${named}`);
    await this.#mutex.with(dir, async () => {
      if (existsSync(dir)) return;
      const entries = readTgz(archive, `the archive of ${shown} version '${version}'`, this.#limits);
      // A chart archive holds one folder, the chart; Argo CD's OCI source unpacks a chart's content at its root.
      const tops = new Set(entries.map((e) => e.path.split('/')[0]));
      const top = helmLayer && tops.size === 1 ? [...tops][0] : undefined;
      if (helmLayer && !top)
        throw new SourceError('InvalidSource', `the chart archive of ${shown} does not hold one chart folder`);
      await mkdir(this.#root, { recursive: true });
      const tmp = `${dir}.tmp-${randomBytes(4).toString('hex')}`;
      try {
        await mkdir(tmp);
        if (kind === 'oci') await writeEntries(tmp, entries, top ? 1 : 0);
        else await writeEntries(path.join(tmp, chartFolder(source)), entries, 1);
        await rename(tmp, dir);
      } finally {
        await rm(tmp, { recursive: true, force: true });
      }
    });
    if (seenAs !== undefined) {
      if (this.#seen.size >= MAX_SEEN) this.#seen.delete(this.#seen.keys().next().value as string);
      this.#seen.set(seenAs, dir);
    }
    return { dir, path: appPath, revision: version };
  }
}

/** The folder a chart is unpacked in: its name when that is a plain name (messages then name it). */
function chartFolder(source: ApplicationSource): string {
  return source.chart && /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(source.chart) ? source.chart : 'chart';
}
