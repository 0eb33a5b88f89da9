// Everything a kustomization makes kustomize read, checked before kustomize runs: kustomize follows
// local paths anywhere on the disk for resources, bases and components (only files are held to the
// load restrictor), fetches git repositories and http(s) files for them and for most file fields,
// runs exec and container functions named in generators/transformers/validators, and inflates
// Helm charts from helm repositories. Here every kustomization reachable from the app folder is
// read, local paths must stay inside the checkout (physically, paths.ts), remote ones must be
// network URLs the project's sourceRepos allow (kustomize-remote.ts), functions are refused, and
// Helm charts only pass when the operator enabled --enable-helm. Builtin plugin configs read files
// too (a ConfigMapGenerator's files, by URL as well): theirs are held to the same rules, so configs
// must be where the check sees them as kustomize will: in a file, inline, or in a folder that only
// lists them (never fetched, never patched). Field names are matched as kustomize's Go decoder
// matches them. The same check runs on every remote base kustomize clones (git-guard.ts), since
// those are read by kustomize alone.
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { SourceError, redactURL } from './errors.ts';
import {
  chartRepositoryRefusal,
  hasScheme,
  isRemoteFile,
  parseRemoteRepo,
  remoteRefusal,
  repositoryOfFile,
} from './kustomize-remote.ts';
import { physicalRelative } from './paths.ts';

export const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

export interface KustomizeCheckOptions {
  /** The physical root every local path must stay inside (the checkout, or a remote base's clone). */
  root: string;
  /** How to name a file of `root` in messages (default: its path relative to root). */
  describe?: (relative: string) => string;
  /** The AppProject's sourceRepos; absent allows no remote reference. */
  sourceRepos: readonly string[] | undefined;
  /** The operator's --enable-helm. */
  enableHelm: boolean;
}

/** Kustomizations read before giving up: a repository of more is refused rather than half checked. */
const MAX_KUSTOMIZATIONS = 10_000;
const FUNCTION_ANNOTATIONS = ['config.kubernetes.io/function', 'config.k8s.io/function'];

/** What a list entry is read as: resources, or plugin configs that kustomize loads from `loaderDir`. */
type Entries = 'resources' | { loaderDir: string };
type Value = unknown;

class Checker {
  readonly #seen = new Set<string>();
  /** A Helm chart was reached: kustomize may pull one into the tree. */
  helmCharts = false;
  readonly #o: KustomizeCheckOptions;
  constructor(o: KustomizeCheckOptions) {
    this.#o = o;
  }

  #fail(file: string, what: string): never {
    const rel = path.relative(this.#o.root, file).split(path.sep).join('/') || '.';
    throw new SourceError('InvalidSource', `${this.#o.describe ? this.#o.describe(rel) : rel}: ${what}`);
  }

  /**
   * The kustomization of `dir` and all it reaches locally. `configsFor`: it is a folder of
   * generator/transformer configs, which kustomize loads from the kustomization that lists it.
   */
  async folder(dir: string, configsFor?: string): Promise<void> {
    const key = `${dir}\0${configsFor ?? ''}`;
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    if (this.#seen.size > MAX_KUSTOMIZATIONS) this.#fail(dir, `more than ${MAX_KUSTOMIZATIONS} kustomizations`);
    const name = await firstExisting(dir, KUSTOMIZATION_FILES);
    if (!name) return; // kustomize reports a folder without a kustomization itself
    const file = path.join(dir, name);
    const real = await physicalRelative(this.#o.root, file);
    if (real === undefined) this.#fail(file, 'the kustomization file leads outside the repository');
    const k = this.#parse(file, await readFile(path.join(this.#o.root, real), 'utf8'))[0];
    if (k === null || typeof k !== 'object' || Array.isArray(k)) return;
    const kustomization = k as Record<string, Value>;
    if (configsFor === undefined) await this.#kustomization(file, dir, kustomization);
    else await this.#configFolder(file, dir, kustomization, configsFor);
  }

  /**
   * A folder of configs may only list them: kustomize builds it before reading the configs, so a
   * patch, a replacement or a component there would change them after they were checked.
   */
  async #configFolder(file: string, dir: string, k: Record<string, Value>, loaderDir: string): Promise<void> {
    const listing = new Set(['apiversion', 'kind', 'metadata', 'resources', 'bases']);
    const other = Object.keys(k).find((key) => !listing.has(foldFieldName(key)));
    if (other !== undefined) {
      this.#fail(
        file,
        `'${other}' is refused in a folder of generator, transformer or validator configs: kustomize would apply it to the configs after the renderer checked them; list only resources`,
      );
    }
    for (const key of ['resources', 'bases'])
      for (const v of fieldValues(k, key).flatMap(list)) await this.#entry(file, dir, key, String(v), { loaderDir });
  }

  async #kustomization(file: string, dir: string, k: Record<string, Value>): Promise<void> {
    // Every field is read as kustomize reads it (fieldValues): `Resources` and `reſources` are
    // `resources` to kustomize, and would otherwise pass unchecked.
    const all = (o: Value, key: string): Value[] => fieldValues(o, key).flatMap(list);
    for (const key of ['resources', 'bases', 'components'])
      for (const v of all(k, key)) await this.#entry(file, dir, key, String(v), 'resources');
    for (const key of ['generators', 'transformers', 'validators'])
      for (const v of all(k, key)) await this.#entry(file, dir, key, String(v), { loaderDir: dir });

    const files: [string, Value][] = [];
    for (const key of ['crds', 'configurations']) for (const v of all(k, key)) files.push([key, v]);
    for (const v of all(k, 'patchesStrategicMerge'))
      if (!String(v).includes('\n')) files.push(['patchesStrategicMerge', v]);
    for (const key of ['patches', 'patchesJson6902', 'replacements'])
      for (const p of all(k, key)) for (const v of fieldValues(p, 'path')) files.push([`${key}[].path`, v]);
    for (const o of all(k, 'openapi')) for (const v of fieldValues(o, 'path')) files.push(['openapi.path', v]);
    for (const key of ['configMapGenerator', 'secretGenerator']) {
      for (const g of all(k, key)) {
        for (const f of all(g, 'files')) files.push([`${key}[].files`, String(f).replace(/^[^=]*=/, '')]);
        for (const f of all(g, 'envs')) files.push([`${key}[].envs`, f]);
        for (const f of fieldValues(g, 'env')) files.push([`${key}[].env`, f]);
      }
    }
    const charts = [...all(k, 'helmCharts'), ...all(k, 'helmChartInflationGenerator')];
    const globals = fieldValues(k, 'helmGlobals');
    if (charts.length > 0 || globals.length > 0) this.#helm(file, charts, globals, files);
    for (const [key, v] of files) if (typeof v === 'string' && v !== '') await this.#file(file, dir, key, v);
  }

  /** A resources/components/generators... entry: inline config, remote, local file or local folder. */
  async #entry(file: string, dir: string, key: string, value: string, kind: Entries): Promise<void> {
    // kustomize takes a generator/transformer entry that parses as an object for an inline config;
    // one on a single line is checked as a path or URL too, in case kustomize reads it so.
    const configs = kind === 'resources' ? undefined : kind;
    if (configs && isInline(value)) {
      await this.#configs(file, `${key} (inline)`, value, configs.loaderDir);
      if (value.includes('\n')) return;
    }
    if (configs && (isRemoteFile(value) || parseRemoteRepo(value) || hasScheme(value))) {
      this.#fail(
        file,
        `${key} '${redactURL(value)}' is refused: configs fetched from the network cannot be checked before kustomize reads them; commit them to the repository`,
      );
    }
    if (this.#remote(file, key, value)) return;
    const target = await this.#local(file, dir, key, value);
    if (target === undefined) return;
    const info = await stat(target).catch(() => undefined);
    if (info?.isDirectory()) return this.folder(target, configs?.loaderDir);
    if (info?.isFile() && configs) await this.#configs(target, key, await readFile(target, 'utf8'), configs.loaderDir);
  }

  /** A field naming one file: http(s) (checked like a remote), or a local path inside the root. */
  async #file(file: string, dir: string, key: string, value: string): Promise<void> {
    if (this.#remote(file, key, value, true)) return;
    await this.#local(file, dir, key, value);
  }

  /** True when `value` is remote (and allowed); refuses remote values that are not. */
  #remote(file: string, key: string, value: string, fileOnly = false): boolean {
    const shown = redactURL(value);
    if (isRemoteFile(value)) {
      const why = remoteRefusal(repositoryOfFile(value), this.#o.sourceRepos);
      if (why) this.#fail(file, `${key} '${shown}' is refused: ${why}`);
      return true;
    }
    const repo = fileOnly ? undefined : parseRemoteRepo(value);
    if (repo) {
      const why = remoteRefusal(repo.cloneURL, this.#o.sourceRepos);
      if (why) this.#fail(file, `${key} '${shown}' is refused: ${why}`);
      if (repo.ref?.startsWith('-')) this.#fail(file, `${key} '${shown}' is refused: its ref starts with a dash`);
      return true;
    }
    if (hasScheme(value)) this.#fail(file, `${key} '${shown}' is refused: only http(s) and git URLs are fetched`);
    return false;
  }

  /** The physical path of a local entry, refusing absolute paths and paths out of the root. */
  async #local(file: string, dir: string, key: string, value: string): Promise<string | undefined> {
    if (path.isAbsolute(value)) this.#fail(file, `${key} '${value}' is refused: absolute paths are not allowed`);
    const rel = await physicalRelative(this.#o.root, path.join(dir, value));
    if (rel === undefined) this.#fail(file, `${key} '${value}' leads outside the repository`);
    return path.join(this.#o.root, rel);
  }

  #helm(file: string, charts: Value[], globals: Value[], files: [string, Value][]): void {
    if (!this.#o.enableHelm) {
      this.#fail(
        file,
        'helmCharts are refused: kustomize inflates Helm charts only when the operator enables --enable-helm',
      );
    }
    if (charts.length > 0) this.helmCharts = true;
    for (const g of globals) {
      for (const v of fieldValues(g, 'chartHome')) files.push(['helmGlobals.chartHome', v]);
      for (const v of fieldValues(g, 'configHome')) files.push(['helmGlobals.configHome', v]);
    }
    for (const chart of charts) {
      // helmCharts[] and the older helmChartInflationGenerator[] (chartRepoUrl, values, helmHome).
      for (const repo of [...fieldValues(chart, 'repo'), ...fieldValues(chart, 'chartRepoUrl')]) {
        if (typeof repo !== 'string' || repo === '') continue;
        const why = chartRepositoryRefusal(repo, this.#o.sourceRepos);
        if (why) this.#fail(file, `helm chart repository '${redactURL(repo)}' is refused: ${why}`);
      }
      for (const key of ['valuesFile', 'values', 'chartHome', 'helmHome'])
        for (const v of fieldValues(chart, key)) files.push([`helmCharts[].${key}`, v]);
      for (const v of fieldValues(chart, 'additionalValuesFiles').flatMap(list))
        files.push(['helmCharts[].additionalValuesFiles', v]);
    }
  }

  /**
   * Generator/transformer/validator configs: no exec or container functions, no Helm unless
   * enabled, and every file a builtin plugin reads (ConfigMapGenerator's files, PatchTransformer's
   * path, HelmChartInflationGenerator's chart home, ...) held to the rules of the kustomization's
   * own fields, relative to `loaderDir`, where kustomize loads them from.
   */
  async #configs(file: string, key: string, text: string, loaderDir: string): Promise<void> {
    for (const doc of this.#parse(file, text).flatMap(listItems)) {
      if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) continue;
      const o = doc as { kind?: unknown; metadata?: { annotations?: Record<string, unknown> } };
      const fn = FUNCTION_ANNOTATIONS.find((a) => o.metadata?.annotations?.[a] !== undefined);
      if (fn) this.#fail(file, `${key}: a KRM function (${fn}) is refused: exec and container functions run programs`);
      const files: [string, Value][] = [];
      if (o.kind === 'HelmChartInflationGenerator') {
        if (!this.#o.enableHelm) {
          this.#fail(
            file,
            `${key}: HelmChartInflationGenerator is refused: the operator has not enabled --enable-helm`,
          );
        }
        // Its config is a HelmGlobals and a HelmChart in one object.
        this.#helm(file, [doc], [doc], files);
      }
      const all = (from: Value, name: string): Value[] => fieldValues(from, name).flatMap(list);
      for (const f of all(doc, 'files')) files.push([`${key}: files`, String(f).replace(/^[^=]*=/, '')]);
      for (const name of ['envs', 'env', 'path', 'targetFilePath'])
        for (const f of all(doc, name)) files.push([`${key}: ${name}`, f]);
      for (const f of all(doc, 'paths')) if (!String(f).includes('\n')) files.push([`${key}: paths`, f]);
      for (const r of all(doc, 'replacements'))
        for (const f of fieldValues(r, 'path')) files.push([`${key}: replacements[].path`, f]);
      for (const [what, v] of files) if (typeof v === 'string' && v !== '') await this.#file(file, loaderDir, what, v);
    }
  }

  /** YAML as kustomize reads it (merge keys on); what does not parse is refused rather than guessed at. */
  #parse(file: string, text: string): unknown[] {
    const docs = parseAllDocuments(text, { merge: true });
    const list = Array.isArray(docs) ? docs : [docs];
    const out: unknown[] = [];
    for (const d of list) {
      if (d.errors.length > 0) this.#fail(file, `cannot be read as YAML: ${d.errors[0]?.message.split('\n')[0]}`);
      out.push(d.toJS({ maxAliasCount: 1000 }));
    }
    return out;
  }
}

/** Checks the kustomization of `appDir` (inside `o.root`) and all it reaches; throws an InvalidSource SourceError. */
/** What the check saw that changes how kustomize must run. */
export interface KustomizationReach {
  /** Helm charts are reached: kustomize may pull one into the tree it builds. */
  helmCharts: boolean;
}

export async function checkKustomization(appDir: string, o: KustomizeCheckOptions): Promise<KustomizationReach> {
  const checker = new Checker(o);
  await checker.folder(appDir);
  return { helmCharts: checker.helmCharts };
}

/** Checks every kustomization under `o.root` (a remote base's clone, whose entry point kustomize alone knows). */
export async function checkAllKustomizations(o: KustomizeCheckOptions): Promise<void> {
  const checker = new Checker(o);
  const dirs = new Set([o.root]);
  for (const e of await readdir(o.root, { recursive: true, withFileTypes: true })) {
    if (e.isFile() && KUSTOMIZATION_FILES.includes(e.name) && !e.parentPath.split(path.sep).includes('.git'))
      dirs.add(e.parentPath);
  }
  for (const dir of [...dirs].sort()) await checker.folder(dir);
}

/** True when `value` is YAML holding an object (an inline config or patch), not a path. */
function isInline(value: string): boolean {
  try {
    return parseAllDocuments(value, { merge: true }).some((d) => {
      const v: unknown = d.errors.length === 0 ? d.toJS({ maxAliasCount: 1000 }) : undefined;
      return v !== null && typeof v === 'object';
    });
  } catch {
    return false;
  }
}

async function firstExisting(dir: string, names: readonly string[]): Promise<string | undefined> {
  for (const n of names) {
    const info = await stat(path.join(dir, n)).catch(() => undefined);
    if (info?.isFile()) return n;
  }
  return undefined;
}

/** The objects of a document, a `...List` (which kustomize unwraps, nested ones too) item by item. */
function listItems(doc: Value): Value[] {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return [doc];
  const { kind, items } = doc as { kind?: unknown; items?: unknown };
  if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(items)) return items.flatMap(listItems);
  return [doc];
}

function list(v: Value): Value[] {
  return Array.isArray(v) ? v : v === undefined || v === null ? [] : [v];
}

/**
 * Go's encoding/json, which kustomize decodes kustomizations and plugin configs with, matches a
 * key to a field exactly or case-insensitively with Unicode's simple case folding: `ſ` (U+017F) is
 * `s`, and the Kelvin sign (U+212A) is `k`, which toLowerCase already makes of it.
 */
export function foldFieldName(name: string): string {
  return name.replaceAll('\u017f', 's').toLowerCase();
}

/** The values of every key of `o` that kustomize reads as field `name` (it keeps the last; all are checked here). */
export function fieldValues(o: Value, name: string): Value[] {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return [];
  const want = foldFieldName(name);
  return Object.entries(o as Record<string, Value>)
    .filter(([key]) => foldFieldName(key) === want)
    .map(([, v]) => v);
}
