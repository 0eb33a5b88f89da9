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
// - Charts from Helm repositories and OCI registries (source.chart) and oci:// sources are
//   downloaded and unpacked by charts.ts, then rendered like a checkout. This module never talks
//   to a Kubernetes cluster, and runs only in the renderer process (ARCHITECTURE.md, the credential rule).
// - Everything in the input and the repository is treated as hostile (issue 11, section 2): only
//   network repoURLs unless opts.allowLocalRepositories; symlinks resolved physically and kept
//   inside the checkout; no value reaches a tool's argv as a flag; kustomize reads only the
//   checkout and the remote bases input.sourceRepos allows, a chart's dependencies come only from
//   repositories it allows; git, helm and kustomize run under memory and file-size limits, and a
//   commit over the checkout limits is never written. Messages
//   name paths relative to the repository root, never the renderer's folders (scrub.ts).
// - Concurrency: many renders may run at once; git work on one repository is serialised. One
//   SourceRenderer per cacheDir per process.
import path from 'node:path';
import type { ApplicationSource } from '../api/application.ts';
import { NeedsRepositories, SourceError, redactURL } from './errors.ts';
import { scrubber } from './scrub.ts';
import { GitRepoCache, type Checkout, type GitRequestHook } from './git.ts';
import { prepareDependencies, type PreparedChart } from './helm-deps.ts';
import { realpath } from 'node:fs/promises';
import { ChartSources, sourceKind } from './charts.ts';
import { buildEnv } from './build-env.ts';
import { credentialId } from './credentials.ts';
import { DEFAULT_METADATA_CACHE_BYTES, metadataCacheSizes } from './metadata-caches.ts';
import type { ParsedObject } from './parse.ts';
import { parseLocalManifests } from './local-manifests.ts';
import { withSubmodules, type SubmoduleRepository } from './submodules.ts';
import { verifySignature, type SignatureRequirement } from './signatures.ts';
import { run } from './exec.ts';
import { DEFAULT_LIMITS, overTimeLimit, renderCheckout, toolLimits } from './render.ts';
import type { RenderEnvironment, RenderLimits, RenderRequest, RenderedObjects } from './render.ts';
import { pluginsPresent } from './cmp/render.ts';
import { explicitType, type SourceType } from './spec.ts';
import type { RepositoryAccess } from '../api/repository.ts';
import type { ToolSettings } from '../api/tool-settings.ts';

export { SourceError, type SourceErrorReason } from './errors.ts';
export type { ParsedObject as RenderedObject } from './parse.ts';
export type { SourceType } from './spec.ts';
export type { RenderLimits } from './render.ts';
export { parseManifests } from './parse.ts';

export interface SourceRendererOptions {
  /** Where clones, checked-out commits and helm's homes live. */
  cacheDir: string;
  /** Exact binaries; each wins over toolsDir and PATH (prlimit: util-linux's, which applies the tool limits). */
  toolPaths?: { helm?: string; kustomize?: string; git?: string; prlimit?: string; gpg?: string };
  /** Folder holding helm, kustomize and impersync-jsonnet (what scripts/tool-binaries prints). Default: $IMPERSYNC_TOOLS_DIR. */
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
    /** Each fetch and ls-remote, for the renderer's metrics (git.ts). */
    onRequest?: GitRequestHook;
  };
  /**
   * Bytes of what is remembered of repositories in memory (refs, tags, Helm indexes, folder
   * listings, refusals), all together (metadata-caches.ts). Default DEFAULT_METADATA_CACHE_BYTES.
   */
  metadataCacheBytes?: number;
  /** Extra `kustomize build` flags, like argocd-cm's kustomize.buildOptions. */
  kustomizeBuildOptions?: string[];
  /** Folder of config management plugins' cmp-server sockets (source/cmp/). Default: none, every plugin source refused. */
  pluginSocketDir?: string;
  /** Globs of files left out of the app folder streamed to a plugin (source/cmp/archive.ts). */
  pluginTarExclusions?: readonly string[];
  /** Environment for git, helm and kustomize (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /**
   * Allow repoURLs that are file:// URLs or local paths (the renderer CLI's
   * --allow-local-repositories; for demos and tests). Default false: only https, http, ssh, git://
   * and user@host:path are fetched, anything else is refused as InvalidSource.
   */
  allowLocalRepositories?: boolean;
  /**
   * Check out a commit's submodules (submodules.ts), as Argo CD's repo-server does unless
   * ARGOCD_GIT_MODULES_ENABLED is false. Default true.
   */
  submodules?: boolean;
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
  /**
   * Argo CD's instance name: the name, or `<namespace>_<name>` for an Application outside the
   * controller's namespace. ARGOCD_APP_NAME and the `.argocd-source-<name>.yaml` read are of it
   * (the release name is appName). Absent: appName.
   */
  instanceName?: string | undefined;
  /** The AppProject's name: ARGOCD_APP_PROJECT_NAME of the build environment (build-env.ts). */
  project?: string | undefined;
  /** A revision to render instead of source.targetRevision (e.g. operation.sync.revision). */
  revision?: string | undefined;
  /** The destination's Kubernetes version and API versions, for `helm template` (as Argo CD passes them). */
  kubeVersion?: string | undefined;
  apiVersions?: readonly string[] | undefined;
  /**
   * The AppProject's spec.sourceRepos globs (Argo CD's semantics): the repositories kustomize remote
   * bases and resources, and a chart's dependencies, may come from. Absent: none is allowed.
   */
  sourceRepos?: readonly string[] | undefined;
  /** Credentials and TLS/SSH settings for source.repoURL (none: anonymous). */
  repository?: RepositoryAccess | undefined;
  /**
   * Multi-source Applications: the `ref` sources by `$name`, for `$name/...` helm value files: each
   * repository, its revision (the ref source's targetRevision or the operation's) and credentials.
   */
  refSources?: Readonly<Record<string, RefSource>> | undefined;
  /**
   * Every `$name` of the Application's ref sources, sent or not: a `$name/...` value file that a
   * source parameter file adds, of a ref not sent, is refused rather than read from this source.
   */
  refNames?: readonly string[] | undefined;
  /**
   * Credentials for the repositories of a Helm chart's dependencies, as the controller resolved them
   * for the needs the renderer named (NeedsRepositories). Undefined: not resolved yet, so a chart with
   * dependencies to fetch is answered with its needs first; an entry without `repository`: anonymous.
   */
  dependencyRepositories?: readonly DependencyRepository[] | undefined;
  /** Refs and Helm indexes fetched less than this long ago are used again (0: ask now). */
  revisionMaxAgeMs?: number | undefined;
  /** argocd-cm's tool switches and kustomize versions (api/tool-settings.ts): the only kustomize paths a render runs. */
  tools?: ToolSettings | undefined;
  /**
   * operation.sync.manifests (local-manifests.ts): parsed and answered instead of the source's
   * objects; the source's revision is still resolved, for the history.
   */
  localManifests?: readonly string[] | undefined;
  /**
   * Credentials for the repositories of the commit's submodules, as the controller resolved them for
   * the URLs the renderer named (NeedsRepositories with `submodule`). Undefined: not asked yet.
   */
  submoduleRepositories?: readonly SubmoduleRepository[] | undefined;
  /** The project requires a signed revision (signatures.ts): verified before anything is rendered. */
  signature?: SignatureRequirement | undefined;
  /**
   * annotation manifest-generate-paths (generate-paths.ts): the paths, relative to the repository
   * root, and the revision last compared. The renderer's server answers the previous commit's
   * objects for a new commit that changes none of the paths, as Argo CD's repo-server does.
   */
  generatePaths?: { paths: readonly string[]; syncedRevision: string } | undefined;
}

export interface RefSource {
  repoURL: string;
  targetRevision?: string | undefined;
  repository?: RepositoryAccess | undefined;
}

export interface DependencyRepository {
  /** The dependency's repository as Chart.yaml names it: a URL, or the name of `@name` / `alias:name`. */
  url?: string | undefined;
  name?: string | undefined;
  repository?: RepositoryAccess | undefined;
}

/** How long a render may take: until `deadline` (epoch ms), the limit being `timeLimit` (for its message). */
export interface RenderTimeOptions {
  deadline?: number | undefined;
  timeLimit?: { ms: number; setBy?: string | undefined } | undefined;
}

/** When a render must be done by: its deadline, else its time limit from now. */
function renderDeadline(time: RenderTimeOptions, defaultMs: number): number {
  return time.deadline ?? Date.now() + (time.timeLimit?.ms ?? defaultMs);
}

export interface RenderResult {
  /** Commit SHA rendered. */
  revision: string;
  sourceType: SourceType;
  objects: ParsedObject[];
  /** Repositories a chart's dependencies came from. */
  dependencies?: string[] | undefined;
}

export class SourceRenderer {
  readonly #git: GitRepoCache;
  readonly #charts: ChartSources;
  readonly #opts: SourceRendererOptions;
  readonly #limits: RenderLimits;
  readonly #runCheckout: CheckoutRunner;

  constructor(opts: SourceRendererOptions) {
    this.#opts = opts;
    this.#limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.#runCheckout = opts.runCheckout ?? inThisThread;
    const cacheDir = path.resolve(opts.cacheDir);
    const kept = metadataCacheSizes(opts.metadataCacheBytes ?? DEFAULT_METADATA_CACHE_BYTES);
    this.#charts = new ChartSources({
      cacheDir,
      limits: { maxBytes: 64 * 1024 * 1024, maxFiles: 10_000, timeoutMs: opts.git?.networkTimeoutMs ?? 120_000 },
      indexCacheBytes: kept.helmIndexBytes,
      tagCacheBytes: kept.tagsBytes,
      credentialId: (access) => credentialId(cacheDir, access),
    });
    this.#git = new GitRepoCache({
      cacheDir: path.join(opts.cacheDir, 'git'),
      gitBinary: opts.toolPaths?.git,
      networkTimeoutMs: opts.git?.networkTimeoutMs,
      localTimeoutMs: opts.git?.localTimeoutMs,
      maxTrees: opts.git?.maxTrees,
      treeCacheMaxBytes: opts.git?.treeCacheMaxBytes,
      cloneCacheMaxBytes: opts.git?.cloneCacheMaxBytes,
      listingCacheBytes: kept.listingBytes,
      refsCacheBytes: kept.refsBytes,
      refusedCacheBytes: kept.refusedBytes,
      onRequest: opts.git?.onRequest,
      env: opts.env,
      allowLocalRepositories: opts.allowLocalRepositories,
      toolLimits: toolLimits(this.#limits, opts.toolPaths?.prlimit),
      checkoutLimits: this.#limits,
    });
  }

  /** The commit SHA (Git), chart version (Helm) or tag (OCI) the source (or input.revision) names now, without rendering. */
  async resolveRevision(
    input: Pick<RenderInput, 'source' | 'revision' | 'repository' | 'revisionMaxAgeMs'>,
  ): Promise<string> {
    if (sourceKind(input.source, input.repository) !== 'git') {
      return this.#charts.resolve(input.source, input.revision, input.repository, input.revisionMaxAgeMs ?? 0);
    }
    const source = input.source;
    return this.#git.resolveRevision(source.repoURL, input.revision ?? source.targetRevision, repoOptions(input));
  }

  /**
   * The files a Git source's repository changed from commit `from` to `to` (manifest-generate-paths);
   * undefined for another kind of source, or when a commit cannot be had.
   */
  async changedFiles(
    input: Pick<RenderInput, 'source' | 'repository'>,
    from: string,
    to: string,
  ): Promise<string[] | undefined> {
    if (sourceKind(input.source, input.repository) !== 'git') return undefined;
    return this.#git.changedFiles(input.source.repoURL, from, to, input.repository);
  }

  /**
   * What a Git source's folder holds at commit `revision`, as a key that the same files give at any
   * commit (GitRepoCache.folderContent); undefined when the render may depend on more than them (a
   * ref source, local manifests, a signature to verify at each commit, submodules, symlinks, Jsonnet,
   * an installed plugin's discovery of a source naming no type) or when anything fails (the render
   * then says why). The commit is checked out first, as its render would be: the checks of the
   * whole commit (its size, its symlinks) hold for an answer reused under it too.
   */
  async folderKey(input: RenderInput, revision: string, deadline?: number): Promise<string | undefined> {
    if (input.localManifests !== undefined || input.refSources || input.signature) return undefined;
    if (sourceKind(input.source, input.repository) !== 'git') return undefined;
    // Plugins discover what they render from the whole repository streamed to them: a file outside
    // the folder may make one match. While any plugin is installed, only an Application that names
    // its type settles that.
    try {
      if (explicitType(input.source) === undefined && (await pluginsPresent(this.#opts.pluginSocketDir)))
        return undefined;
      const checkout = await this.#git.checkout(input.source.repoURL, revision, {
        access: input.repository,
        deadline: deadline ?? Date.now() + this.#limits.renderTimeoutMs,
      });
      try {
        return await this.#git.folderContent(input.source.repoURL, revision, input.source.path ?? '', input.repository);
      } finally {
        checkout.release();
      }
    } catch {
      return undefined;
    }
  }

  /** `git ls-remote` runs so far (tests and bench/repos). */
  get lsRemoteCount(): number {
    return this.#git.lsRemoteCount;
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
      if (err instanceof NeedsRepositories) throw err;
      const scrub = scrubber([{ from: path.resolve(this.#opts.cacheDir), to: '<cache>' }]);
      if (err instanceof SourceError) throw new SourceError(err.reason, scrub(err.message), { cause: err });
      const source = input.source;
      const where = `'${source.path || '.'}' of '${redactURL(source.repoURL)}'`;
      throw new SourceError('Unexpected', scrub(`rendering ${where} failed: ${(err as Error).message}`), {
        cause: err,
      });
    }
  }

  /** index.yaml downloads and OCI tag listings so far (tests and bench/repos). */
  get indexFetches(): number {
    return this.#charts.helm.indexFetches + this.#charts.oci.tagFetches;
  }

  async #render(input: RenderInput, time: RenderTimeOptions): Promise<RenderResult> {
    if (input.localManifests !== undefined) {
      const { localManifests, ...rest } = input;
      return {
        revision: await this.resolveRevision(rest),
        sourceType: 'Directory',
        objects: parseLocalManifests(localManifests, this.#limits),
      };
    }
    if (sourceKind(input.source, input.repository) !== 'git') return this.#renderChart(input, time);
    const source = input.source;
    const revision = await this.#git.resolveRevision(
      source.repoURL,
      input.revision ?? source.targetRevision,
      repoOptions(input),
    );
    const checkout = await this.#git.checkout(source.repoURL, revision, {
      access: input.repository,
      deadline: renderDeadline(time, this.#limits.renderTimeoutMs),
    });
    let tree: { dir: string; dispose(): Promise<void> } | undefined;
    try {
      if (input.signature) await this.#verify(input, input.signature, revision);
      if (this.#opts.submodules !== false)
        tree = await withSubmodules({
          git: this.#git,
          repoURL: source.repoURL,
          sha: revision,
          access: input.repository,
          dir: checkout.dir,
          workRoot: path.join(this.#opts.cacheDir, 'git', 'work'),
          sourceRepos: input.sourceRepos,
          given: input.submoduleRepositories,
          limits: this.#limits,
          deadline: renderDeadline(time, this.#limits.renderTimeoutMs),
        });
      return { revision, ...(await this.#renderDir(tree?.dir ?? checkout.dir, source, input, time, revision)) };
    } finally {
      await tree?.dispose();
      checkout.release();
    }
  }

  /** The project's signature requirement for this revision (signatures.ts); the commit is in the clone. */
  async #verify(input: RenderInput, req: SignatureRequirement, sha: string): Promise<void> {
    const source = input.source;
    const cacheDir = path.resolve(this.#opts.cacheDir);
    const gpg = this.#opts.toolPaths?.gpg ?? 'gpg';
    // The server hands on the commit it resolved; a tag to verify is then the one the source names.
    const revision = input.revision && !/^[0-9a-f]{40}$/.test(input.revision) ? input.revision : source.targetRevision;
    const tag = revision?.replace(/^refs\/tags\//, '');
    if (tag && tag !== 'HEAD' && !/^[0-9a-f]{40}$/.test(tag) && !tag.startsWith('-'))
      await this.#git.fetchTag(source.repoURL, input.repository, tag);
    await verifySignature(
      {
        git: (args, env) => this.#git.inClone(source.repoURL, input.repository, args, env),
        gpg: (args, env, stdin) =>
          run(gpg, args, {
            env: { ...(this.#opts.env ?? process.env), ...env },
            stdin,
            timeoutMs: 60_000,
            label: `gpg ${args.find((a) => a.startsWith('--') && !['--batch', '--no-tty'].includes(a)) ?? ''}`.trim(),
            howToGet: 'install gpg (for example `apt-get install gpg`) for commit signature verification',
            scrub: scrubber([{ from: cacheDir, to: '<cache>' }]),
            limits: toolLimits(this.#limits, this.#opts.toolPaths?.prlimit),
          }),
      },
      req,
      revision,
      sha,
      path.join(cacheDir, 'gpg'),
    );
  }

  /** A chart from a Helm repository or an OCI registry, or an oci:// artifact: unpacked (charts.ts), then rendered. */
  async #renderChart(input: RenderInput, time: RenderTimeOptions): Promise<RenderResult> {
    const maxAgeMs = input.revisionMaxAgeMs ?? 0;
    const unpacked = await this.#charts.get(input.source, input.revision, input.repository, maxAgeMs);
    const source = { ...input.source, path: unpacked.path };
    return {
      revision: unpacked.revision,
      ...(await this.#renderDir(unpacked.dir, source, input, time, unpacked.revision, input.source.repoURL)),
    };
  }

  /**
   * Renders `source.path` of a folder (a checkout, an unpacked chart) in a worker, within the
   * deadline. `revision` is the commit or chart version: ARGOCD_APP_REVISION of the build environment;
   * `archive` the repository an unpacked chart was downloaded from.
   */
  async #renderDir(
    dir: string,
    source: ApplicationSource,
    input: RenderInput,
    time: RenderTimeOptions,
    revision: string,
    archive?: string,
  ): Promise<Pick<RenderResult, 'sourceType' | 'objects' | 'dependencies'>> {
    const { deadline, timeLimit } = time;
    const limitMs = timeLimit?.ms ?? this.#limits.renderTimeoutMs;
    const workRoot = path.join(this.#opts.cacheDir, 'git', 'work');
    const maxAgeMs = input.revisionMaxAgeMs ?? 0;
    // Multi-source: the ref sources this source's value files name, each checked out with its own credentials.
    const refs: Checkout[] = [];
    let prepared: PreparedChart | undefined;
    try {
      const refRoots: Record<string, string> = {};
      for (const [name, ref] of Object.entries(input.refSources ?? {})) {
        const rev = await this.#git.resolveRevision(ref.repoURL, ref.targetRevision, {
          access: ref.repository,
          maxAgeMs,
        });
        const checkout = await this.#git.checkout(ref.repoURL, rev, {
          access: ref.repository,
          deadline: renderDeadline(time, limitMs),
        });
        refs.push(checkout);
        refRoots[name] = await realpath(checkout.dir);
      }
      prepared = await prepareDependencies({
        root: await realpath(dir),
        source,
        workRoot,
        entries: input.dependencyRepositories,
        charts: this.#charts,
        maxAgeMs,
        sourceRepos: input.sourceRepos,
        archive,
        parameters: {
          appName: input.instanceName ?? input.appName,
          maxFileBytes: this.#limits.maxFileBytes,
          documents: {
            maxDocumentBytes: this.#limits.maxDocumentBytes,
            maxDocumentNodes: this.#limits.maxDocumentNodes,
          },
        },
      });
      const remainingMs = deadline === undefined ? limitMs : deadline - Date.now();
      if (remainingMs <= 0) throw overTimeLimit(source, limitMs, timeLimit?.setBy);
      const { sourceType, objects } = await this.#runCheckout(
        {
          checkoutDir: dir,
          source,
          ...(hasCredential(input.repository) ? { sourceHasCredential: true } : {}),
          appName: input.appName,
          destinationNamespace: input.destinationNamespace,
          ...(input.instanceName ? { instanceName: input.instanceName } : {}),
          // Of the source as written: an unpacked chart's folder is not its path.
          buildEnv: buildEnv({
            appName: input.instanceName ?? input.appName,
            destinationNamespace: input.destinationNamespace,
            project: input.project,
            revision,
            repoURL: input.source.repoURL,
            path: input.source.path,
            targetRevision: input.source.targetRevision,
          }),
          kubeVersion: input.kubeVersion,
          apiVersions: input.apiVersions,
          sourceRepos: input.sourceRepos,
          ...(Object.keys(refRoots).length > 0 ? { refRoots } : {}),
          ...(input.refNames?.length ? { refNames: input.refNames } : {}),
          ...(prepared ? { chartDir: prepared.chartDir } : {}),
          ...(input.tools ? { tools: input.tools } : {}),
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
          // Beside the checkouts, so a kustomize source's private copy of one can be hard-linked to it.
          workRoot,
          helmHome: path.join(this.#opts.cacheDir, 'helm'),
          kustomizeBuildOptions: this.#opts.kustomizeBuildOptions,
          pluginSocketDir: this.#opts.pluginSocketDir,
          ...(this.#opts.pluginTarExclusions?.length
            ? { pluginTarExclusions: [...this.#opts.pluginTarExclusions] }
            : {}),
          env: { ...(this.#opts.env ?? process.env) },
        },
        remainingMs,
      );
      return { sourceType, objects, ...(prepared ? { dependencies: prepared.dependencies } : {}) };
    } finally {
      for (const r of refs) r.release();
      await prepared?.dispose();
    }
  }
}

function repoOptions(input: Pick<RenderInput, 'repository' | 'revisionMaxAgeMs'>) {
  return { access: input.repository, maxAgeMs: input.revisionMaxAgeMs };
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

/** Whether a repository's access carries a credential (Argo CD's GetGitCreds would give the plugin one). */
function hasCredential(access: RepositoryAccess | undefined): boolean {
  return !!(
    access?.username ||
    access?.password ||
    access?.bearerToken ||
    access?.sshPrivateKey ||
    access?.tlsClientCertKey
  );
}
