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
import { OciRegistries, ociReference } from './oci.ts';
import { readTgz, writeEntries, type UntarLimits } from './tar.ts';
import { isVersion, maxVersion } from './versions.ts';

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

  constructor(opts: {
    cacheDir: string;
    limits: UntarLimits & { timeoutMs: number };
    credentialId: (access: RepositoryAccess | undefined) => Promise<string>;
  }) {
    this.#root = path.join(opts.cacheDir, 'charts');
    this.#limits = opts.limits;
    this.#credentialId = opts.credentialId;
    this.helm = new HelmRepositories({
      credentialId: opts.credentialId,
      limits: { maxChartBytes: opts.limits.maxBytes, timeoutMs: opts.limits.timeoutMs },
    });
    this.oci = new OciRegistries({
      credentialId: opts.credentialId,
      limits: { maxLayerBytes: opts.limits.maxBytes, timeoutMs: opts.limits.timeoutMs },
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

  /** Downloads (or finds) and unpacks `version` of the source. */
  async unpack(
    source: ApplicationSource,
    version: string,
    access: RepositoryAccess | undefined,
    opts: { maxAgeMs?: number } = {},
  ): Promise<UnpackedSource> {
    const kind = sourceKind(source, access);
    const cred = await this.#credentialId(access);
    let archive: Buffer;
    let digest: string;
    let helmLayer = true;
    const shown = `'${redactURL(source.repoURL)}'`;
    if (kind === 'helm') {
      ({ archive, digest } = await this.helm.download(source.repoURL, source.chart as string, version, access, {
        passCredentials: source.helm?.['passCredentials'] === true,
        maxAgeMs: opts.maxAgeMs ?? 0,
      }));
    } else {
      const ref = ociReference(
        kind === 'oci-chart' ? `${source.repoURL.replace(/\/+$/, '')}/${source.chart}` : source.repoURL,
        access,
      );
      const pulled = await this.oci.pull(ref, version, access, { helm: kind === 'oci-chart' });
      archive = pulled.layer;
      digest = pulled.digest.replace(/^sha256:/, '');
      helmLayer = pulled.mediaType === 'application/vnd.cncf.helm.chart.content.v1.tar+gzip';
    }
    const key = `${kind}-${cred}-${digest.slice(0, 40)}`;
    const dir = path.join(this.#root, key);
    const entries = readTgz(archive, `the archive of ${shown} version '${version}'`, this.#limits);
    // A chart archive holds one folder, the chart; Argo CD's OCI source unpacks a chart's content at its root.
    const tops = new Set(entries.map((e) => e.path.split('/')[0]));
    const top = helmLayer && tops.size === 1 ? [...tops][0] : undefined;
    if (helmLayer && !top)
      throw new SourceError('InvalidSource', `the chart archive of ${shown} does not hold one chart folder`);
    await this.#mutex.with(key, async () => {
      if (existsSync(dir)) return;
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
    const appPath = kind === 'oci' ? source.path || '.' : chartFolder(source);
    return { dir, path: appPath, revision: version };
  }
}

/** The folder a chart is unpacked in: its name when that is a plain name (messages then name it). */
function chartFolder(source: ApplicationSource): string {
  return source.chart && /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(source.chart) ? source.chart : 'chart';
}
