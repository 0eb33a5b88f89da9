// A Git chart's dependencies (Chart.yaml `dependencies`), fetched before templating as Argo CD's
// `helm dependency build` does: only when charts/ lacks one, at Chart.lock's versions when there is
// a lock, each from its repository (https, oci://, `@name` / `alias:name` for a repository Secret
// by name) with the credentials the controller resolved for it (NeedsRepositories: the renderer
// names the repositories, the controller decides what credentials, if any, each gets), `file://`
// ones from inside the repository only. Every repository is held to the project's sourceRepos
// before the first request (the controller refuses first; this is the renderer's own check). The
// checkout is shared and read-only, so the chart is copied to a private work folder first and its
// charts/ filled there.
import { cp, mkdir, mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { ApplicationSource } from '../api/application.ts';
import type { RepositoryAccess } from '../api/repository.ts';
import type { ChartSources } from './charts.ts';
import { NeedsRepositories, SourceError, redactURL, unparsable, type RepositoryNeed } from './errors.ts';
import { KUSTOMIZATION_FILES } from './kustomize.ts';
import { isInside, physicalRelative } from './paths.ts';
import { sourceRepoRefusal } from './permitted.ts';
import { mergeSourceParameters, type SourceParameterInput } from './source-parameters.ts';
import { explicitType } from './spec.ts';

interface Dependency {
  name: string;
  version: string;
  repository: string;
}

export interface DependencyRepositoryEntry {
  url?: string | undefined;
  name?: string | undefined;
  repository?: RepositoryAccess | undefined;
}

export interface PreparedChart {
  /** The copy of the chart, its charts/ complete. */
  chartDir: string;
  /** Repositories the dependencies came from. */
  dependencies: string[];
  dispose(): Promise<void>;
}

const MAX_CHART_YAML = 1024 * 1024;

/** Argo CD's getHelmDependencyRepos: what a dependency's `repository` names. */
function need(repository: string): RepositoryNeed | 'file' | undefined {
  if (repository.startsWith('@')) return { name: repository.slice(1) };
  if (repository.startsWith('alias:')) return { name: repository.slice('alias:'.length) };
  if (/^file:\/\//.test(repository)) return 'file';
  if (/^(https?|oci):\/\//.test(repository)) return { url: repository };
  return undefined;
}

/** `archive`: the chart was downloaded from there, so a parse error is not quoted (it could be any server's answer). */
async function readYaml(file: string, shown: string, archive: string | undefined): Promise<unknown> {
  const info = await stat(file).catch(() => undefined);
  if (!info) return undefined;
  if (info.size > MAX_CHART_YAML) throw new SourceError('TooLarge', `${shown} is larger than 1 MiB`);
  const text = await readFile(file, 'utf8');
  try {
    return parse(text, { maxAliasCount: 100 });
  } catch (err) {
    if (archive !== undefined)
      throw unparsable(`${shown} of the chart downloaded from '${redactURL(archive)}'`, 'YAML', info.size);
    throw new SourceError('InvalidSource', `${shown} does not parse: ${(err as Error).message}`);
  }
}

function dependenciesOf(doc: unknown): Dependency[] {
  const list = (doc as { dependencies?: unknown } | null)?.dependencies;
  if (!Array.isArray(list)) return [];
  return list.flatMap((d: { name?: unknown; version?: unknown; repository?: unknown }) =>
    typeof d?.name === 'string' && /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(d.name)
      ? [
          {
            name: d.name,
            version: typeof d.version === 'string' ? d.version : '',
            repository: typeof d.repository === 'string' ? d.repository : '',
          },
        ]
      : [],
  );
}

const strip = (u: string) => u.replace(/^oci:\/\//, '').replace(/\/+$/, '');

async function vendored(chartsDir: string, name: string): Promise<boolean> {
  if (existsSync(path.join(chartsDir, name, 'Chart.yaml'))) return true;
  const files = await readdir(chartsDir).catch(() => [] as string[]);
  return files.some((f) => f.startsWith(`${name}-`) && f.endsWith('.tgz'));
}

export async function prepareDependencies(opts: {
  /** Physical root of the checkout. */
  root: string;
  source: ApplicationSource;
  workRoot: string;
  entries: readonly DependencyRepositoryEntry[] | undefined;
  charts: ChartSources;
  maxAgeMs: number;
  /** The AppProject's sourceRepos: the only repositories dependencies may come from (absent: none). */
  sourceRepos: readonly string[] | undefined;
  /** The URL the chart was downloaded from, when it is not a checkout. */
  archive?: string | undefined;
  /**
   * How the app folder's source parameter files are read (source-parameters.ts): the type they
   * give the source decides whether there is a chart to prepare, as it decides the render.
   */
  parameters: Pick<SourceParameterInput, 'appName' | 'maxFileBytes' | 'documents'>;
}): Promise<PreparedChart | undefined> {
  const shownPath = opts.source.path || '.';
  const rel = await physicalRelative(opts.root, path.join(opts.root, shownPath));
  if (rel === undefined) return undefined; // the render refuses it, naming the path
  const appDir = path.join(opts.root, rel);
  let type;
  try {
    // After the parameter files are merged: a `helm` block one of them sets makes the folder a
    // Helm source (Argo CD merges them before it runs `helm dependency build`). A file the render
    // refuses is refused there, with its message.
    const source = await mergeSourceParameters({ ...opts.parameters, root: opts.root, appDir, source: opts.source });
    type = explicitType(source);
  } catch {
    return undefined;
  }
  const hasChart = existsSync(path.join(appDir, 'Chart.yaml'));
  if (!hasChart || type === 'Kustomize' || type === 'Directory' || type === 'Plugin') return undefined;
  if (!type && KUSTOMIZATION_FILES.some((f) => existsSync(path.join(appDir, f)))) return undefined;
  const deps = dependenciesOf(await readYaml(path.join(appDir, 'Chart.yaml'), `${shownPath}/Chart.yaml`, opts.archive));
  const lock = new Map(
    dependenciesOf(await readYaml(path.join(appDir, 'Chart.lock'), `${shownPath}/Chart.lock`, opts.archive)).map(
      (d) => [d.name, d.version],
    ),
  );
  const missing: Dependency[] = [];
  for (const d of deps)
    if (d.repository !== '' && !(await vendored(path.join(appDir, 'charts'), d.name))) missing.push(d);
  if (missing.length === 0) return undefined;
  const needs = missing
    .map((d) => need(d.repository))
    .filter((n): n is RepositoryNeed => n !== undefined && n !== 'file');
  if (opts.entries === undefined && needs.length > 0) {
    const seen = new Set<string>();
    throw new NeedsRepositories(needs.filter((n) => !seen.has(JSON.stringify(n)) && seen.add(JSON.stringify(n))));
  }
  // Every repository judged, and every @name resolved, before the first request is made.
  const fetches: Array<{ d: Dependency; url: string; entry: DependencyRepositoryEntry | undefined }> = [];
  const refusals: string[] = [];
  for (const d of missing) {
    const kind = need(d.repository);
    const where = `dependency '${d.name}' of '${shownPath}'`;
    if (kind === undefined) {
      throw new SourceError(
        'InvalidSource',
        `${where}: repository '${redactURL(d.repository)}' is not https://, oci://, file://, @name or alias:name`,
      );
    }
    if (kind === 'file') continue;
    const entry = opts.entries?.find((e) =>
      kind.url !== undefined ? e.url !== undefined && strip(e.url) === strip(kind.url) : e.name === kind.name,
    );
    const url = kind.url ?? entry?.url;
    if (!url) throw new SourceError('InvalidSource', `${where}: no repository definition for @${kind.name}`);
    const why = sourceRepoRefusal(url, opts.sourceRepos);
    if (why) refusals.push(`${where}: ${why}`);
    fetches.push({ d, url, entry });
  }
  if (refusals.length > 0)
    throw new SourceError(
      'InvalidSource',
      `${refusals.join('; ')}: add the repository to the AppProject's sourceRepos, or vendor the chart in charts/`,
    );
  await mkdir(opts.workRoot, { recursive: true });
  const work = await mkdtemp(path.join(opts.workRoot, 'deps-'));
  const dispose = () => rm(work, { recursive: true, force: true });
  try {
    const chartDir = path.join(work, 'chart');
    await cp(appDir, chartDir, { recursive: true, dereference: true });
    const chartsDir = path.join(chartDir, 'charts');
    await mkdir(chartsDir, { recursive: true });
    for (const d of missing) {
      if (need(d.repository) !== 'file') continue;
      const target = path.resolve(appDir, d.repository.slice('file://'.length));
      const inside = isInside(opts.root, target) ? await physicalRelative(opts.root, target) : undefined;
      if (inside === undefined)
        throw new SourceError(
          'InvalidSource',
          `dependency '${d.name}' of '${shownPath}': '${d.repository}' is outside the repository`,
        );
      await cp(path.join(opts.root, inside), path.join(chartsDir, d.name), { recursive: true, dereference: true });
    }
    const used: string[] = [];
    for (const { d, url, entry } of fetches) {
      const oci = /^oci:\/\//.test(url) || entry?.repository?.enableOCI === true;
      const access = entry?.repository
        ? { ...entry.repository, ...(oci ? { enableOCI: true } : {}) }
        : oci
          ? { url, enableOCI: true }
          : undefined;
      const source: ApplicationSource = { repoURL: oci ? strip(url) : url, chart: d.name };
      const unpacked = await opts.charts.get(source, lock.get(d.name) ?? d.version, access, opts.maxAgeMs);
      await cp(path.join(unpacked.dir, unpacked.path), path.join(chartsDir, d.name), { recursive: true });
      used.push(url);
    }
    return { chartDir, dependencies: used, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}
