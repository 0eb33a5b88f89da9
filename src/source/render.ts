// Rendering a checked-out commit into objects, by what spec.source names or the app folder holds
// (Argo CD's discovery): an explicit helm/kustomize/directory block wins; otherwise a kustomization
// file means Kustomize, a Chart.yaml means Helm (Kustomize first when both are there, as Argo CD's
// walk ends up), and anything else is a Directory of YAML/JSON files.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, realpath, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ApplicationSource } from '../api/application.ts';
import { measureJSON } from './answer-size.ts';
import { readDirectory } from './directory.ts';
import { JsonnetEvaluator } from './jsonnet.ts';
import { SourceError } from './errors.ts';
import { helmTemplate } from './helm.ts';
import { KUSTOMIZATION_FILES, kustomizeBuild } from './kustomize.ts';
import { parseManifests, type ParsedObject } from './parse.ts';
import { physicalRelative } from './paths.ts';
import { scrubber, type PathRename } from './scrub.ts';
import { mergeSourceParameters } from './source-parameters.ts';
import { DEFAULT_TOOL_LIMITS, formatBytes, type ToolLimits } from './limits.ts';
import { DEFAULT_CHECKOUT_LIMITS } from './materialise.ts';
import { DEFAULT_DOCUMENT_LIMITS, type DocumentLimits } from './expand.ts';
import type { BuildEnv } from './build-env.ts';
import { explicitType, refuseUnsupported, type SourceType } from './spec.ts';
import { findTool, type ToolLocations } from './tools.ts';
import { chooseKustomize, enabledType, jsonnetDisabled } from './tool-choice.ts';
import type { ToolSettings } from '../api/tool-settings.ts';
import { discoverPlugin, pluginInput, renderPlugin } from './cmp/render.ts';

export interface RenderLimits {
  /** Largest manifest file read from a Directory source. Default 32 MiB. */
  maxFileBytes: number;
  /** Largest sum of the files of a Directory source. Default 256 MiB. */
  maxTotalBytes: number;
  /** Largest output read from kustomize or helm. Default 256 MiB. */
  maxToolOutputBytes: number;
  /**
   * Largest rendered answer: the objects as JSON, as they are sent (a YAML alias counts every time
   * it is used). Default 64 MiB, what the controller reads (renderer/protocol.ts).
   */
  maxRenderedBytes: number;
  /** Time limit for one kustomize or helm run. Default 120 s. */
  toolTimeoutMs: number;
  /** Time limit for a whole render: fetch, checkout, tools and parsing. Default 180 s. */
  renderTimeoutMs: number;
  /** A commit whose files add up to more is refused before it is written. Default 1 GiB. */
  checkoutMaxBytes: number;
  /** A commit with more files is refused before it is written. Default 100,000. */
  checkoutMaxFiles: number;
  /**
   * Address-space limit of every git, helm and kustomize process (RLIMIT_AS). Default 2 GiB. Go
   * needs more than 512 MiB to start helm or kustomize, and the Node git-guard.ts kustomize runs for
   * remote bases about 1.3 GiB: below ~1.5 GiB remote bases fail as over the memory limit.
   */
  toolMemoryBytes: number;
  /** Largest single file a git, helm or kustomize process may write (RLIMIT_FSIZE). Default 256 MiB. */
  writeMaxBytes: number;
  /** Largest YAML or JSON document, aliases counted at every use (expand.ts). Default 16 MiB. */
  maxDocumentBytes: number;
  /** Most nodes one document may expand to, aliases counted at every use. Default 1,000,000. */
  maxDocumentNodes: number;
}

export const DEFAULT_LIMITS: RenderLimits = {
  maxFileBytes: 32 * 1024 * 1024,
  maxTotalBytes: 256 * 1024 * 1024,
  maxToolOutputBytes: 256 * 1024 * 1024,
  maxRenderedBytes: 64 * 1024 * 1024,
  toolTimeoutMs: 120_000,
  renderTimeoutMs: 180_000,
  checkoutMaxBytes: DEFAULT_CHECKOUT_LIMITS.checkoutMaxBytes,
  checkoutMaxFiles: DEFAULT_CHECKOUT_LIMITS.checkoutMaxFiles,
  toolMemoryBytes: DEFAULT_TOOL_LIMITS.memoryBytes,
  writeMaxBytes: DEFAULT_TOOL_LIMITS.writeBytes,
  ...DEFAULT_DOCUMENT_LIMITS,
};

/** The operating system's limits on each tool process, from the render limits. */
export function toolLimits(limits: RenderLimits, prlimit?: string): ToolLimits {
  return { memoryBytes: limits.toolMemoryBytes, writeBytes: limits.writeMaxBytes, prlimit };
}

export interface RenderEnvironment {
  tools: ToolLocations;
  limits: RenderLimits;
  /** Private folders (a kustomize source's copy of the checkout, values files) are made here (same tree as the checkouts). */
  workRoot: string;
  /** helm's cache/config/data homes. */
  helmHome: string;
  kustomizeBuildOptions?: readonly string[] | undefined;
  env: NodeJS.ProcessEnv;
  /** Stops the tools of this render (its time limit ran out). */
  signal?: AbortSignal | undefined;
  /** The folder of config management plugins' cmp-server sockets (source/cmp/); absent: none. */
  pluginSocketDir?: string | undefined;
  /** Argo CD's --plugin-tar-exclude: globs of files not streamed to a plugin (source/cmp/archive.ts). */
  pluginTarExclusions?: readonly string[] | undefined;
  /** Where a time limit lower than the renderer's is set (limits.renderTimeoutMs is then that one). */
  timeLimitSetBy?: string | undefined;
}

export interface RenderRequest {
  /** Root of the checked-out commit. */
  /**
   * The source's repository has a credential (a plugin asking for it with provideGitCreds is then
   * refused: the credential itself never reaches the worker).
   */
  sourceHasCredential?: boolean | undefined;
  checkoutDir: string;
  source: ApplicationSource;
  /** The Application's name: Helm's release name unless spec.source.helm.releaseName says otherwise. */
  appName: string;
  destinationNamespace?: string | undefined;
  /** The name `.argocd-source-<name>.yaml` is read by (index.ts RenderInput.instanceName); absent: appName. */
  instanceName?: string | undefined;
  /** Argo CD's ARGOCD_APP_* variables, for `$VAR` in helm and kustomize fields (build-env.ts). */
  buildEnv?: BuildEnv | undefined;
  /** Passed to `helm template --kube-version` / `--api-versions` (Argo CD sends the destination's). */
  kubeVersion?: string | undefined;
  apiVersions?: readonly string[] | undefined;
  /** The AppProject's spec.sourceRepos: where kustomize remote bases may come from (absent: nowhere). */
  sourceRepos?: readonly string[] | undefined;
  /** Multi-source: `$name` → the root of that ref source's checkout (for `$name/...` value files). */
  refRoots?: Readonly<Record<string, string>> | undefined;
  /** Every ref source's `$name` (index.ts RenderInput.refNames). */
  refNames?: readonly string[] | undefined;
  /** A copy of the chart with its dependencies fetched (helm-deps.ts), templated instead of the app folder. */
  chartDir?: string | undefined;
  /** argocd-cm's tool settings, from the controller (tool-choice.ts). */
  tools?: ToolSettings | undefined;
}

export interface RenderedObjects {
  sourceType: SourceType;
  objects: ParsedObject[];
}

const DIRECTORY_FIELDS = new Set(['recurse', 'include', 'exclude', 'jsonnet']);
const JSONNET_FIELDS = new Set(['extVars', 'tlas', 'libs']);

/** The error of a render that ran past its time limit (`limitMs`). */
/**
 * The Timeout error of a render: past the renderer's time limit, or past its Application's when
 * `setBy` names where that lower one is set (an argocd-cm key).
 */
export function overTimeLimit(source: Pick<ApplicationSource, 'path'>, limitMs: number, setBy?: string): SourceError {
  const whose = setBy ? "this Application's time limit" : "the renderer's time limit";
  return new SourceError(
    'Timeout',
    `the render of '${source.path || '.'}' took longer than ${whose} of ${limitMs / 1000}s${setBy ? ` (${setBy})` : ''}`,
  );
}

export async function renderCheckout(req: RenderRequest, env: RenderEnvironment): Promise<RenderedObjects> {
  // Paths in any message leave as the tenant knows them: relative to the repository root, with
  // the renderer's own folders as placeholders (scrub.ts). Tool stderr is scrubbed where it is
  // read (exec.ts); this catches messages made from Node's errors (ENOENT '/cache/...').
  const renames: PathRename[] = [
    ...(req.chartDir ? [{ from: req.chartDir, to: req.source.path || '.' }] : []),
    ...Object.entries(req.refRoots ?? {}).map(([ref, dir]) => ({ from: dir, to: ref })),
    { from: req.checkoutDir, to: '' },
    { from: env.workRoot, to: '<work>' },
    { from: env.helmHome, to: '<helm home>' },
  ];
  try {
    const rendered = await renderIn(req, env, renames);
    checkRenderedSize(rendered.objects, env.limits.maxRenderedBytes, req.source.path || '.');
    return rendered;
  } catch (err) {
    const scrub = scrubber(renames);
    if (err instanceof SourceError) throw new SourceError(err.reason, scrub(err.message), { cause: err });
    throw new SourceError(
      'Unexpected',
      scrub(`rendering '${req.source.path || '.'}' failed: ${(err as Error).message}`),
      {
        cause: err,
      },
    );
  }
}

async function renderIn(req: RenderRequest, env: RenderEnvironment, renames: PathRename[]): Promise<RenderedObjects> {
  const shownPath = req.source.path && req.source.path !== '' ? req.source.path : '.';
  // Everything below works on the physical root, so what is checked is what the tools are given.
  const root = await realpath(req.checkoutDir);
  const rel = path.relative(root, path.join(root, shownPath));
  if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) {
    throw new SourceError('InvalidSource', `app path '${shownPath}' is outside the repository`);
  }
  const physical = await physicalRelative(root, path.join(root, shownPath));
  if (physical === undefined) {
    throw new SourceError('InvalidSource', `app path '${shownPath}' leads outside the repository through a symlink`);
  }
  const appDir = path.join(root, physical);
  const info = await stat(appDir).catch(() => undefined);
  if (!info) throw new SourceError('InvalidSource', `app path '${shownPath}' does not exist`);
  if (!info.isDirectory()) throw new SourceError('InvalidSource', `app path '${shownPath}' is not a directory`);

  // From here on the source is spec.source with the app folder's source parameter files applied
  // (source-parameters.ts): its type and every block the tools are given come from it, so what the
  // files set meets the same checks as what the Application sets.
  const source = await mergeSourceParameters({
    root,
    appDir,
    source: req.source,
    appName: req.instanceName ?? req.appName,
    maxFileBytes: env.limits.maxFileBytes,
    documents: documentLimits(env.limits),
  });
  const plugin = pluginInput(req, env, { root, appDir, source, shownPath }, documentLimits(env.limits));
  const sourceType = enabledType(
    explicitType(source) ?? ((await discoverPlugin(plugin)) ? 'Plugin' : discoverType(appDir, req.tools)),
    req.tools,
  );
  if (sourceType === 'Plugin') return { sourceType, objects: await renderPlugin(plugin) };
  if (sourceType === 'Directory') {
    refuseUnsupported('directory', source.directory, DIRECTORY_FIELDS);
    refuseUnsupported('directory.jsonnet', source.directory?.jsonnet, JSONNET_FIELDS);
    let evaluator: JsonnetEvaluator | undefined;
    const objects = await readDirectory(root, appDir, {
      recurse: source.directory?.recurse === true,
      include: source.directory?.include,
      exclude: source.directory?.exclude,
      maxFileBytes: env.limits.maxFileBytes,
      maxTotalBytes: env.limits.maxTotalBytes,
      documents: documentLimits(env.limits),
      skipJsonnet: jsonnetDisabled(req.tools),
      // The binary is looked for at the first .jsonnet file: a directory without one needs none.
      jsonnet: (file, shown) =>
        (evaluator ??= new JsonnetEvaluator({
          binary: findTool('impersync-jsonnet', env.tools),
          repoRoot: root,
          appDir,
          jsonnet: source.directory?.jsonnet,
          buildEnv: req.buildEnv,
          renames,
          limits: toolLimits(env.limits, env.tools.paths?.prlimit),
          timeoutMs: env.limits.toolTimeoutMs,
          maxOutputBytes: env.limits.maxToolOutputBytes,
          maxTotalOutputBytes: env.limits.maxRenderedBytes,
          documents: documentLimits(env.limits),
          env: env.env,
          signal: env.signal,
        })).evaluate(file, shown),
    });
    return { sourceType, objects };
  }

  // Resolve the binary before making folders, so a missing tool fails fast and leaves nothing behind.
  const kustomize = sourceType === 'Kustomize' ? chooseKustomize(source, req.tools) : undefined;
  const binary = kustomize?.binary ?? findTool(sourceType === 'Helm' ? 'helm' : 'kustomize', env.tools);
  await mkdir(env.workRoot, { recursive: true });
  // Physical, like the root, so that relative paths between the two are what the tools see.
  const made = path.join(env.workRoot, `render-${randomBytes(6).toString('hex')}`);
  await mkdir(made);
  const workDir = await realpath(made);
  renames.push({ from: root, to: '' }, { from: workDir, to: '<work>' });
  try {
    const tool = {
      binary,
      shownPath,
      workDir,
      renames,
      timeoutMs: env.limits.toolTimeoutMs,
      maxOutputBytes: env.limits.maxToolOutputBytes,
      limits: toolLimits(env.limits, env.tools.paths?.prlimit),
      env: env.env,
      signal: env.signal,
    };
    if (sourceType === 'Kustomize') {
      const out = await kustomizeBuild({
        ...tool,
        repoRoot: root,
        appDir,
        kustomize: source.kustomize,
        buildEnv: req.buildEnv,
        buildOptions: kustomize?.buildOptions ?? env.kustomizeBuildOptions,
        sourceRepos: req.sourceRepos,
        gitBinary: env.tools.paths?.git ?? 'git',
        helmBinary: optionalTool('helm', env.tools),
        // Argo CD passes them only to a kustomize of 5.3.0 or newer: the renderer's own is.
        ...(kustomize?.binary
          ? {}
          : { helmCapabilities: { kubeVersion: req.kubeVersion, apiVersions: req.apiVersions } }),
        checkoutLimits: env.limits,
        maxFileBytes: env.limits.maxFileBytes,
        documents: documentLimits(env.limits),
      });
      return {
        sourceType,
        objects: parseManifests(out, `${shownPath} (kustomize build output)`, { limits: documentLimits(env.limits) }),
      };
    }
    const out = await helmTemplate({
      ...tool,
      repoRoot: root,
      chartDir: req.chartDir ?? appDir,
      valuesDir: appDir,
      refRoots: req.refRoots,
      refNames: req.refNames,
      releaseName: source.helm?.releaseName || req.appName,
      namespace: req.destinationNamespace,
      helm: source.helm,
      buildEnv: req.buildEnv,
      kubeVersion: req.kubeVersion,
      apiVersions: req.apiVersions,
      helmHome: env.helmHome,
      valuesFileSchemes: req.tools?.valuesFileSchemes,
      maxValueFileBytes: env.limits.maxFileBytes,
    });
    return {
      sourceType,
      objects: parseManifests(out, `${shownPath} (helm template output)`, {
        sourceComments: true,
        limits: documentLimits(env.limits),
      }),
    };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

function documentLimits(limits: RenderLimits): DocumentLimits {
  return { maxDocumentBytes: limits.maxDocumentBytes, maxDocumentNodes: limits.maxDocumentNodes };
}

/** Deeper than this, an object is refused: no Kubernetes object is, and code that walks objects recursively would fail on it. */
const MAX_OBJECT_DEPTH = 512;

/**
 * The objects as the answer carries them (answer-size.ts), measured here, inside the render's
 * heap limit: over the limit is TooLarge, and an object nested deeper than MAX_OBJECT_DEPTH is
 * refused (it could not even be passed out of the render's thread).
 */
function checkRenderedSize(objects: readonly ParsedObject[], max: number, shown: string): void {
  let bytes = 0;
  for (const o of objects) {
    const m = measureJSON(o, max - bytes, MAX_OBJECT_DEPTH + 2); // the entry holds the object two levels down
    if (!m.ok && m.why === 'depth') {
      throw new SourceError(
        'InvalidManifest',
        `${o.location.file}: document ${o.location.document} is nested more than ${MAX_OBJECT_DEPTH} levels deep`,
      );
    }
    if (!m.ok) {
      throw new SourceError(
        'TooLarge',
        `the rendered objects of '${shown}' are more than the renderer's limit of ${formatBytes(max)} (a YAML alias counts each time it is used)`,
      );
    }
    bytes += m.bytes + 1;
  }
}

/** The tool's binary, or undefined when there is none (kustomize needs helm only for helmCharts). */
function optionalTool(tool: 'helm', where: ToolLocations): string | undefined {
  try {
    return findTool(tool, where);
  } catch {
    return undefined;
  }
}

/** Argo CD's discovery: a type argocd-cm turned off is not looked for (a kustomization beside a Chart.yaml is then Helm). */
function discoverType(appDir: string, tools: ToolSettings | undefined): SourceType {
  const on = (type: SourceType): boolean => enabledType(type, tools) === type;
  if (on('Kustomize') && KUSTOMIZATION_FILES.some((f) => existsSync(path.join(appDir, f)))) return 'Kustomize';
  if (on('Helm') && existsSync(path.join(appDir, 'Chart.yaml'))) return 'Helm';
  return 'Directory';
}
