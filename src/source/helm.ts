// The "Helm" source type: `helm template` on a chart folder from Git, with Argo CD's meaning of
// spec.source.helm (value files relative to the app path, then values/valuesObject, then parameters).
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ApplicationSource } from '../api/application.ts';
import { SourceError, redactURL } from './errors.ts';
import { scrubber, type PathRename } from './scrub.ts';
import type { ToolLimits } from './limits.ts';
import { isInside, physicalRelative } from './paths.ts';
import { refuseUnsupported } from './spec.ts';
import { findSchemaReference, schemaRefusal } from './helm-schema.ts';
import { run, tail } from './exec.ts';
import { envsubst, type BuildEnv } from './build-env.ts';
import { howToGet } from './tools.ts';

type HelmSpec = NonNullable<ApplicationSource['helm']>;

export interface HelmTemplateInput {
  binary: string;
  /** The physical root of the checkout (realpath). */
  repoRoot: string;
  chartDir: string;
  /** Where relative value files are read from, when the chart runs from a copy (its dependencies fetched): the app folder. */
  valuesDir?: string | undefined;
  /** Multi-source: `$name` → the physical root of that ref source's checkout. */
  refRoots?: Readonly<Record<string, string>> | undefined;
  /** Every ref source's `$name`, those without a root included. */
  refNames?: readonly string[] | undefined;
  /** The app path as written in the Application, for messages. */
  shownPath: string;
  releaseName: string;
  namespace: string | undefined;
  helm: HelmSpec | undefined;
  /** Substituted into parameter values and value file paths, as Argo CD does (build-env.ts). */
  buildEnv?: BuildEnv | undefined;
  kubeVersion?: string | undefined;
  apiVersions?: readonly string[] | undefined;
  /** A private folder for the values file, removed by the caller. */
  workDir: string;
  /** Where helm keeps its cache, config and data (never the user's own). */
  helmHome: string;
  /** Folders to name differently in messages (scrub.ts): the checkout root, the work folders. */
  renames: readonly PathRename[];
  /** Memory and file-size limits of the tool's processes. */
  limits: ToolLimits;
  timeoutMs: number;
  /** Stops the tool (the render's time limit). */
  signal?: AbortSignal | undefined;
  maxOutputBytes: number;
  env: NodeJS.ProcessEnv;
  /** argocd-cm helm.valuesFileSchemes: the URL schemes a value file may use (undefined: https and http). */
  valuesFileSchemes?: readonly string[] | undefined;
  /** The most a value file fetched by URL may hold. */
  maxValueFileBytes: number;
}

/** Argo CD's default for argocd-cm helm.valuesFileSchemes (util/settings GetHelmSettings). */
export const DEFAULT_VALUES_FILE_SCHEMES: readonly string[] = ['https', 'http'];
/** What the renderer fetches a value file URL over; another scheme an admin allows is refused. */
const FETCHED_SCHEMES = new Set(['https', 'http']);

/** Fields of spec.source.helm that are honoured; anything else set is an error, not a silent no-op. */
const SUPPORTED = new Set([
  'releaseName',
  'valueFiles',
  'values',
  'valuesObject',
  'parameters',
  'ignoreMissingValueFiles',
  'skipCrds',
  'skipTests',
  'skipSchemaValidation',
  'namespace',
  'kubeVersion',
  'apiVersions',
  'passCredentials',
  'version',
  'fileParameters',
]);

/** Runs `helm template` and returns its output (YAML with `# Source:` comments). */
export async function helmTemplate(input: HelmTemplateInput): Promise<string> {
  const spec = input.helm ?? {};
  refuseUnsupported('helm', spec, SUPPORTED);
  // Argo CD v3.6.1 runs Helm 4 for all three (util/helm/cmd.go NewCmd); "v3" names Helm 3 charts.
  const version = str(spec.version);
  if (version && !['v3', 'v4'].includes(version))
    throw new SourceError(
      'InvalidSource',
      `error initializing helm app object: failed to create new helm command: helm version '${version}' is not supported`,
    );
  checkReleaseName(input.releaseName);
  const namespace = str(spec.namespace) ?? input.namespace;
  // Every value from the Application or the repository goes in as `--flag=value`, and the two
  // positional arguments come after `--`: nothing a tenant writes can be read as a flag of its own
  // (`--post-renderer` would run a program of their choosing).
  const args = ['template'];
  if (namespace) args.push(`--namespace=${namespace}`);
  if (spec.skipCrds !== true) args.push('--include-crds');
  if (spec.skipTests === true) args.push('--skip-tests');
  if (spec.skipSchemaValidation === true) args.push('--skip-schema-validation');
  const kubeVersion = genericKubeVersion(str(spec.kubeVersion) ?? input.kubeVersion);
  if (kubeVersion) args.push(`--kube-version=${kubeVersion}`);
  const apiVersions =
    Array.isArray(spec.apiVersions) && spec.apiVersions.length > 0
      ? spec.apiVersions.map(String)
      : (input.apiVersions ?? []);
  for (const v of apiVersions) args.push(`--api-versions=${v}`);

  const renames = [...input.renames];
  let remote = 0;
  const local = () => path.join(input.workDir, `remote-values-${remote++}.yaml`);
  for (const file of spec.valueFiles ?? []) {
    const resolved = await resolveValueFile(input, file, local, renames, (f) => `helm value file '${f}'`);
    if (resolved.exists) args.push(`--values=${resolved.path}`);
    else if (spec.ignoreMissingValueFiles !== true) {
      throw new SourceError(
        'InvalidSource',
        `helm value file '${file}' of '${input.shownPath}' does not exist (set spec.source.helm.ignoreMissingValueFiles to skip it)`,
      );
    }
  }
  // valuesObject wins over values when both are set, as in Argo CD.
  const inline =
    spec.valuesObject && Object.keys(spec.valuesObject).length > 0 ? JSON.stringify(spec.valuesObject) : spec.values;
  if (inline && inline.trim() !== '') {
    const valuesFile = path.join(input.workDir, 'values.yaml');
    await writeFile(valuesFile, inline);
    args.push(`--values=${valuesFile}`);
  }
  for (const p of spec.parameters ?? []) {
    const value = envsubst(p.value ?? '', input.buildEnv);
    args.push(`${p.forceString ? '--set-string' : '--set'}=${p.name}=${escapeSetValue(value)}`);
  }
  // Argo CD resolves a file parameter's path as a value file's (ResolveValueFilePathOrUrl, or a
  // `$ref/...` of a ref source) and hands it to `--set-file`; one that does not exist is helm's error.
  // Argo CD keeps them in a map: the last of a name wins.
  const fileParameters = new Map<string, string>();
  for (const [i, fp] of fileParametersOf(spec).entries()) {
    const what = (f: string) => `helm file parameter '${fp.name}' (spec.source.helm.fileParameters[${i}]) file '${f}'`;
    const resolved = await resolveValueFile(input, fp.path, local, renames, what);
    fileParameters.delete(fp.name);
    fileParameters.set(fp.name, resolved.path);
  }
  for (const [name, file] of fileParameters) args.push(`--set-file=${name}=${escapeSetValue(file)}`);
  args.push('--', input.releaseName, input.chartDir);
  if (spec.skipSchemaValidation !== true) {
    const bad = await findSchemaReference(input.chartDir);
    if (bad) {
      throw new SourceError(
        'InvalidSource',
        `helm chart '${input.shownPath}': ${schemaRefusal(bad)} (or set spec.source.helm.skipSchemaValidation)`,
      );
    }
  }

  const env: NodeJS.ProcessEnv = {
    ...input.env,
    HELM_CACHE_HOME: path.join(input.helmHome, 'cache'),
    HELM_CONFIG_HOME: path.join(input.helmHome, 'config'),
    HELM_DATA_HOME: path.join(input.helmHome, 'data'),
  };
  delete env.HELM_NAMESPACE;
  delete env.HELM_KUBECONTEXT;
  const r = await run(input.binary, args, {
    cwd: input.chartDir,
    env,
    timeoutMs: input.timeoutMs,
    signal: input.signal,
    maxStdoutBytes: input.maxOutputBytes,
    label: `helm template of '${input.shownPath}'`,
    howToGet: howToGet('helm'),
    limits: input.limits,
    scrub: scrubber([...renames, { from: path.join(input.workDir, 'values.yaml'), to: 'spec.source.helm.values' }]),
  });
  if (r.code !== 0) {
    throw new SourceError(
      'ToolFailed',
      `helm template of '${input.shownPath}' failed: ${tail(r.stderr) || `exit code ${r.code}`}`,
    );
  }
  return r.stdout.toString('utf8');
}

/** spec.source.helm.fileParameters as Argo CD's HelmFileParameter decodes them: a name and a path, each a string. */
function fileParametersOf(spec: HelmSpec): Array<{ name: string; path: string }> {
  const list = (spec as { fileParameters?: unknown }).fileParameters;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list))
    throw new SourceError('InvalidSource', 'spec.source.helm.fileParameters: expected a list of {name, path}');
  return list.map((fp: unknown, i) => {
    const o = (fp ?? {}) as { name?: unknown; path?: unknown };
    for (const key of ['name', 'path'] as const)
      if (o[key] !== undefined && o[key] !== null && typeof o[key] !== 'string')
        throw new SourceError('InvalidSource', `spec.source.helm.fileParameters[${i}].${key}: expected a string`);
    const name = typeof o.name === 'string' ? o.name : '';
    // helm splits --set-file at commas and reads each value as a file: a comma in the name would
    // name a file of the renderer's past every check of the path (Argo CD passes the name as is).
    if (name.includes(','))
      throw new SourceError(
        'InvalidSource',
        `spec.source.helm.fileParameters[${i}].name '${name}': a comma would make helm read a second file; it is refused`,
      );
    return { name, path: typeof o.path === 'string' ? o.path : '' };
  });
}

/**
 * A value file (or file parameter) path: relative to the chart folder, or to the repository root
 * when absolute; it must stay inside the repository, lexically and physically (no symlink out).
 * `what` names it in messages. A URL is fetched (fetchValueFile); `exists` is false when there is
 * no such local file.
 */
async function resolveValueFile(
  input: HelmTemplateInput,
  written: string,
  remotePath: () => string,
  renames: PathRename[],
  describe: (file: string) => string,
): Promise<{ path: string; exists: boolean }> {
  const what = describe(written);
  const ref = written.startsWith('$') ? written.split('/')[0] : undefined;
  const refRoot = ref && input.refRoots && Object.hasOwn(input.refRoots, ref) ? input.refRoots[ref] : undefined;
  if (ref && !refRoot && input.refNames?.includes(ref)) {
    // Only a ref spec.source.helm.valueFiles or fileParameters name is checked out: one a source
    // parameter file adds has no checkout here (Argo CD: "failed to find repo"), and must not be
    // read from this source.
    throw new SourceError(
      'InvalidSource',
      `${what} of '${input.shownPath}': the ref source ${ref} is not checked out for this source, because its spec.source.helm.valueFiles and fileParameters do not name it`,
    );
  }
  // Build variables are substituted after a `$ref` is taken off, as Argo CD does; a `$name` that is
  // no ref source is a variable like any other (an unknown one is "").
  const file = ref && refRoot ? written : envsubst(written, input.buildEnv);
  if (ref && refRoot) {
    // Multi-source `$ref/path`: inside the ref source's own checkout, physically (Argo CD's getResolvedRefValueFile).
    const rest = envsubst(written.slice(ref.length + 1), input.buildEnv);
    const abs = path.join(refRoot, rest);
    const physical = isInside(refRoot, abs) ? await physicalRelative(refRoot, abs) : undefined;
    if (physical === undefined) {
      throw new SourceError('InvalidSource', `${what} of '${input.shownPath}' is outside the repository of ${ref}`);
    }
    const real = path.join(refRoot, physical);
    return { path: real, exists: existsSync(real) };
  }
  // A scheme as Go's url.Parse reads one (Argo CD's ResolveValueFilePathOrUrl): letters, digits,
  // `+`, `-`, `.` before the first `:`, which comes before any `/`.
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(file)?.[1];
  if (scheme !== undefined)
    return { path: await fetchValueFile(input, file, scheme, remotePath(), renames, describe), exists: true };
  const base = input.valuesDir ?? input.chartDir;
  const abs = path.isAbsolute(file) ? path.join(input.repoRoot, file) : path.resolve(base, file);
  if (!isInside(input.repoRoot, abs)) {
    throw new SourceError('InvalidSource', `${what} of '${input.shownPath}' is outside the repository`);
  }
  const physical = await physicalRelative(input.repoRoot, abs);
  if (physical === undefined) {
    throw new SourceError(
      'InvalidSource',
      `${what} of '${input.shownPath}' leads outside the repository through a symlink`,
    );
  }
  const real = path.join(input.repoRoot, physical);
  return { path: real, exists: existsSync(real) };
}

/**
 * A value file given by URL, fetched by the renderer (never by helm) when argocd-cm
 * helm.valuesFileSchemes allows its scheme, with no credential: Argo CD hands the URL to helm,
 * whose getter sends none. Within the file size limit and the render's time; redirects followed
 * (none to another scheme than http and https). Written to `local` for `--values`.
 */
async function fetchValueFile(
  input: HelmTemplateInput,
  url: string,
  scheme: string,
  local: string,
  renames: PathRename[],
  describe: (file: string) => string,
): Promise<string> {
  const allowed = input.valuesFileSchemes ?? DEFAULT_VALUES_FILE_SCHEMES;
  if (!allowed.some((s) => s.toLowerCase() === scheme.toLowerCase()))
    throw new SourceError(
      'InvalidSource',
      `error resolving value file path: the URL scheme '${scheme}' is not allowed`,
    );
  const shown = redactURL(url);
  const named = `${describe(shown)} of '${input.shownPath}'`;
  if (!FETCHED_SCHEMES.has(scheme.toLowerCase()))
    throw new SourceError(
      'InvalidSource',
      `${named}: the URL scheme '${scheme}' is allowed by argocd-cm helm.valuesFileSchemes, but the renderer fetches value files over https and http only`,
    );
  // undici is loaded for the first value file by URL: render threads rarely need it.
  const { httpGet } = await import('./http.ts');
  const res = await httpGet(url, undefined, {
    maxBytes: input.maxValueFileBytes,
    timeoutMs: input.timeoutMs,
    what: named,
    signal: input.signal,
    refuseMetadata: true,
  });
  if (res.status < 200 || res.status >= 300)
    throw new SourceError('RepositoryUnreachable', `${named} could not be fetched: the server answered ${res.status}`);
  await writeFile(local, res.body);
  renames.push({ from: local, to: shown });
  return local;
}

/** Helm's rule for release names (chartutil.ValidateReleaseName): a DNS-1123 subdomain of at most 53 characters. */
const RELEASE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const RELEASE_NAME_MAX = 53;

/** True when helm accepts `name` as a release name (so it can never be read as a flag). */
export function isReleaseName(name: string): boolean {
  return name.length <= RELEASE_NAME_MAX && RELEASE_NAME.test(name);
}

/** Refuses what helm would refuse, before it runs, in helm's own words. */
export function checkReleaseName(name: string): void {
  if (isReleaseName(name)) return;
  throw new SourceError(
    'InvalidSource',
    `release name ${JSON.stringify(name)}: invalid release name, must match regex ${RELEASE_NAME.source} and the length must not be longer than ${RELEASE_NAME_MAX} (spec.source.helm.releaseName, or the Application's name when that is empty)`,
  );
}

/**
 * `--set` splits on commas: a comma in a value is escaped unless it is already escaped or the value
 * is a `{a,b}` list, which is what Argo CD does with parameters.
 */
export function escapeSetValue(value: string): string {
  if (value.startsWith('{') && value.endsWith('}')) return value;
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === ',' && (i === 0 || value[i - 1] !== '\\')) out += '\\,';
    else out += c;
  }
  return out;
}

/**
 * Argo CD's parseKubeVersion (k8s.io/apimachinery ParseGeneric, then String()): "v1.30.2-gke.1" is
 * "1.30.2". It matters under Helm 4, which keeps a suffix in .Capabilities.KubeVersion.Version
 * where Helm 3 dropped it, so a raw spec.source.helm.kubeVersion would render unlike Argo CD.
 */
export function genericKubeVersion(version: string | undefined): string | undefined {
  if (version === undefined || version === '') return undefined;
  const m = /^\s*v?(\d+(?:\.\d+)*)/.exec(version);
  if (!m?.[1] || !m[1].includes('.'))
    throw new SourceError(
      'InvalidSource',
      `could not parse kubernetes version ${version}: ${m ? `illegal version string "${version}"` : `could not parse "${version}" as version`}`,
    );
  return m[1].split('.').map(Number).join('.');
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}
