// source/: an Application's desired state from Git (issue 4, "Desired state from Git").
//
// Contract:
//   const renderer = new SourceRenderer({ cacheDir, toolsDir });
//   const { revision, sourceType, objects } = await renderer.render({ source, appName, destinationNamespace, revision?, ... });
//
// The input is one source and the few facts of its Application a render needs (renderer/protocol.ts
// carries exactly this between the controller and the renderer process): never the Application,
// its project or anything of the cluster.
//
// - `revision` is the commit SHA that source.targetRevision (or input.revision, e.g. an
//   operation's sync revision) resolves to now: HEAD when empty, a branch, a tag or a SHA. Refs are
//   asked of the remote on every call; a SHA already fetched needs no network.
// - `objects` are the rendered Kubernetes objects in render order, each with where it came from
//   (`{ object, location: { file, document } }`), untouched otherwise (unknown fields kept, no
//   namespace defaulting: that is sync/'s job with the destination namespace).
// - Objects written with only metadata.generateName (hooks) come back with metadata.name === ''.
// - Every failure rejects with a SourceError whose message is fit for a ComparisonError condition
//   as is (it names the repository, revision, file and line, or the missing tool and how to get it)
//   and whose `reason` tells what kind of failure it was. Nothing is ever partially rendered.
// - Helm repository charts (source.chart) are refused with a clear error. This module never talks
//   to a Kubernetes cluster, and runs only in the renderer process (ARCHITECTURE.md, the credential rule).
// - Everything in the input and the repository is treated as hostile (issue 11, section 2): only
//   network repoURLs unless opts.allowLocalRepositories; symlinks resolved physically and kept
//   inside the checkout; no value reaches a tool's argv as a flag; kustomize reads only the
//   checkout and the remote bases input.sourceRepos allows; git, helm and kustomize run under
//   memory and file-size limits, and a commit over the checkout limits is never written. Messages
//   name paths relative to the repository root, never the renderer's folders (scrub.ts).
// - Concurrency: many renders may run at once; git work on one repository is serialised. One
//   SourceRenderer per cacheDir per process.
import path from 'node:path';
import type { ApplicationSource } from '../api/application.ts';
import { SourceError, redactURL } from './errors.ts';
import { scrubber } from './scrub.ts';
import { GitRepoCache } from './git.ts';
import type { ParsedObject } from './parse.ts';
import { DEFAULT_LIMITS, overTimeLimit, renderCheckout, toolLimits } from './render.ts';
import type { RenderEnvironment, RenderLimits, RenderRequest, RenderedObjects } from './render.ts';
import type { SourceType } from './spec.ts';

export { SourceError, type SourceErrorReason } from './errors.ts';
export type { ParsedObject as RenderedObject } from './parse.ts';
export type { SourceType } from './spec.ts';
export type { RenderLimits } from './render.ts';
export { parseManifests } from './parse.ts';

export interface SourceRendererOptions {
  /** Where clones, checked-out commits and helm's homes live. */
  cacheDir: string;
  /** Exact binaries; each wins over toolsDir and PATH (prlimit: util-linux's, which applies the tool limits). */
  toolPaths?: { helm?: string; kustomize?: string; git?: string; prlimit?: string };
  /** Folder holding helm and kustomize (what scripts/tool-binaries prints). Default: $IMPERSYNC_TOOLS_DIR. */
  toolsDir?: string;
  /** PATH searched last for helm and kustomize (default: this process's PATH). */
  searchPath?: string;
  limits?: Partial<RenderLimits>;
  git?: {
    networkTimeoutMs?: number;
    localTimeoutMs?: number;
    maxTrees?: number;
    /** Bytes of checked-out commits kept on disk (git.ts). */
    treeCacheMaxBytes?: number;
    /** Bytes of clones kept on disk (git.ts). */
    cloneCacheMaxBytes?: number;
  };
  /** Extra `kustomize build` flags, like argocd-cm's kustomize.buildOptions. */
  kustomizeBuildOptions?: string[];
  /** Environment for git, helm and kustomize (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /**
   * Allow repoURLs that are file:// URLs or local paths (the renderer CLI's
   * --allow-local-repositories; for demos and tests). Default false: only https, http, ssh, git://
   * and user@host:path are fetched, anything else is refused as InvalidSource.
   */
  allowLocalRepositories?: boolean;
  /**
   * Where the files of a checked-out commit are rendered (read, kustomize or helm run, output
   * parsed): the renderer passes its worker threads (renderer/pool.ts); default, in this thread.
   */
  runCheckout?: CheckoutRunner;
}

/** Renders one checkout within `timeoutMs`; the inputs are plain data (they cross to a worker thread). */
export type CheckoutRunner = (
  request: RenderRequest,
  environment: Omit<RenderEnvironment, 'signal'>,
  timeoutMs: number,
) => Promise<RenderedObjects>;

/** One source to render, and what of its Application a render needs. */
export interface RenderInput {
  source: ApplicationSource;
  /** The Application's name: Helm's release name unless source.helm.releaseName says otherwise. */
  appName: string;
  /** spec.destination.namespace: Helm's namespace unless source.helm.namespace says otherwise. */
  destinationNamespace?: string | undefined;
  /** A revision to render instead of source.targetRevision (e.g. operation.sync.revision). */
  revision?: string | undefined;
  /** The destination's Kubernetes version and API versions, for `helm template` (as Argo CD passes them). */
  kubeVersion?: string | undefined;
  apiVersions?: readonly string[] | undefined;
  /**
   * The AppProject's spec.sourceRepos globs (Argo CD's semantics): the repositories kustomize remote
   * bases and resources may come from. Absent: no remote kustomize reference is allowed.
   */
  sourceRepos?: readonly string[] | undefined;
}

/** How long a render may take: until `deadline` (epoch ms), the limit being `timeLimit` (for its message). */
export interface RenderTimeOptions {
  deadline?: number | undefined;
  timeLimit?: { ms: number; setBy?: string | undefined } | undefined;
}

export interface RenderResult {
  /** Commit SHA rendered. */
  revision: string;
  sourceType: SourceType;
  objects: ParsedObject[];
}

export class SourceRenderer {
  readonly #git: GitRepoCache;
  readonly #opts: SourceRendererOptions;
  readonly #limits: RenderLimits;
  readonly #runCheckout: CheckoutRunner;

  constructor(opts: SourceRendererOptions) {
    this.#opts = opts;
    this.#limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.#runCheckout = opts.runCheckout ?? inThisThread;
    this.#git = new GitRepoCache({
      cacheDir: path.join(opts.cacheDir, 'git'),
      gitBinary: opts.toolPaths?.git,
      networkTimeoutMs: opts.git?.networkTimeoutMs,
      localTimeoutMs: opts.git?.localTimeoutMs,
      maxTrees: opts.git?.maxTrees,
      treeCacheMaxBytes: opts.git?.treeCacheMaxBytes,
      cloneCacheMaxBytes: opts.git?.cloneCacheMaxBytes,
      env: opts.env,
      allowLocalRepositories: opts.allowLocalRepositories,
      toolLimits: toolLimits(this.#limits, opts.toolPaths?.prlimit),
      checkoutLimits: this.#limits,
    });
  }

  /** The commit SHA the source (or input.revision) names now, without rendering. */
  async resolveRevision(input: Pick<RenderInput, 'source' | 'revision'>): Promise<string> {
    const source = gitSource(input.source);
    return this.#git.resolveRevision(source.repoURL, input.revision ?? source.targetRevision);
  }

  /**
   * Renders the source at its revision. `deadline` (epoch ms) bounds the whole render; what is left
   * of it once the commit is checked out is the time the tools and the parsing get.
   */
  async render(input: RenderInput, opts: RenderTimeOptions = {}): Promise<RenderResult> {
    try {
      return await this.#render(input, opts);
    } catch (err) {
      // The last line of scrub.ts: whatever leaves here names no folder of the renderer's cache.
      const scrub = scrubber([{ from: path.resolve(this.#opts.cacheDir), to: '<cache>' }]);
      if (err instanceof SourceError) throw new SourceError(err.reason, scrub(err.message), { cause: err });
      const source = input.source;
      const where = `'${source.path || '.'}' of '${redactURL(source.repoURL)}'`;
      throw new SourceError('Unexpected', scrub(`rendering ${where} failed: ${(err as Error).message}`), {
        cause: err,
      });
    }
  }

  async #render(input: RenderInput, time: RenderTimeOptions): Promise<RenderResult> {
    const { deadline, timeLimit } = time;
    const limitMs = timeLimit?.ms ?? this.#limits.renderTimeoutMs;
    const source = gitSource(input.source);
    const revision = await this.#git.resolveRevision(source.repoURL, input.revision ?? source.targetRevision);
    const checkout = await this.#git.checkout(source.repoURL, revision);
    try {
      const remainingMs = deadline === undefined ? limitMs : deadline - Date.now();
      if (remainingMs <= 0) throw overTimeLimit(source, limitMs, timeLimit?.setBy);
      const { sourceType, objects } = await this.#runCheckout(
        {
          checkoutDir: checkout.dir,
          source,
          appName: input.appName,
          destinationNamespace: input.destinationNamespace,
          kubeVersion: input.kubeVersion,
          apiVersions: input.apiVersions,
          sourceRepos: input.sourceRepos,
        },
        {
          tools: {
            paths: {
              helm: this.#opts.toolPaths?.helm,
              kustomize: this.#opts.toolPaths?.kustomize,
              git: this.#opts.toolPaths?.git,
              prlimit: this.#opts.toolPaths?.prlimit,
            },
            dir: this.#opts.toolsDir ?? process.env.IMPERSYNC_TOOLS_DIR,
            // Resolved here: a worker thread has no environment of its own.
            searchPath: this.#opts.searchPath ?? process.env.PATH,
          },
          limits: { ...this.#limits, renderTimeoutMs: limitMs },
          ...(timeLimit?.setBy ? { timeLimitSetBy: timeLimit.setBy } : {}),
          // Beside the checkouts, so a kustomize overlay can point at the app folder by a relative path.
          workRoot: path.join(this.#opts.cacheDir, 'git', 'work'),
          helmHome: path.join(this.#opts.cacheDir, 'helm'),
          kustomizeBuildOptions: this.#opts.kustomizeBuildOptions,
          env: { ...(this.#opts.env ?? process.env) },
        },
        remainingMs,
      );
      return { revision, sourceType, objects };
    } finally {
      checkout.release();
    }
  }
}

/** A source this renderer can render: from Git (Helm repository charts are not supported yet). */
function gitSource(source: ApplicationSource): ApplicationSource {
  if (source.chart) {
    // Checked before any git work: the repoURL of a chart source is a Helm repository, not Git.
    throw new SourceError(
      'InvalidSource',
      `spec.source.chart '${source.chart}': charts from Helm repositories are not supported; point spec.source.path at a chart in Git`,
    );
  }
  return source;
}

/** The default CheckoutRunner: in the calling thread, its tools stopped when the time is up. */
function inThisThread(
  request: RenderRequest,
  environment: Omit<RenderEnvironment, 'signal'>,
  timeoutMs: number,
): Promise<RenderedObjects> {
  const stop = new AbortController();
  const timer = setTimeout(
    () => stop.abort(overTimeLimit(request.source, environment.limits.renderTimeoutMs, environment.timeLimitSetBy)),
    timeoutMs,
  );
  return renderCheckout(request, { ...environment, signal: stop.signal }).finally(() => clearTimeout(timer));
}
