// The desired objects of one Application, from the renderer: its one source or each of its
// spec.sources (Argo CD's multi-source Applications), each rendered in a request of its own that
// carries that source's repository credentials (repository/access.ts) and, for `$ref/...` value
// files, the `ref` sources it names with theirs. `ref`-only sources are not rendered; their
// revision is resolved for status.sync.revisions, as Argo CD does. A chart whose dependencies live
// in repositories the request did not cover is answered with their names (NeedsRepositories); their
// credentials are resolved here, against the project, those the project does not permit refused,
// and the render asked again once.
import { appInstanceName } from '../sync/tracking.ts';
import type { AppProject, Application, ApplicationLimits, ApplicationSource, SyncOperation } from '../api/index.ts';
import { applicationKey } from '../api/application.ts';
import type { ToolSettings } from '../api/tool-settings.ts';
import type { Renderer } from '../renderer/client.ts';
import { fetchDecision } from '../project/fetch-repos.ts';
import { accessFor, dependencyAccess, RepositoryRefused, templateNotUsedNote } from '../repository/access.ts';
import type { RepositoryState } from '../repository/access.ts';
import {
  NeedsRepositories,
  SourceError,
  SourceIntegrityFailed,
  redactURL,
  type RepositoryNeed,
} from '../source/errors.ts';
import { refreshPaths } from '../source/generate-paths.ts';
import type { DependencyRepository, RenderInput, RenderedObject, RefSource } from '../source/index.ts';
import type { RepositoryAccess } from '../api/repository.ts';
import { hasSignatureCriteria, isGitSource, signaturePolicy } from '../project/signatures.ts';

/** The annotation naming the paths whose changes regenerate the manifests (Argo CD's AnnotationKeyManifestGeneratePaths). */
export const MANIFEST_GENERATE_PATHS = 'argocd.argoproj.io/manifest-generate-paths';

export interface RenderedApplication {
  objects: RenderedObject[];
  /** spec.sources is used (Argo CD's HasMultipleSources): status gets revisions and sourceTypes. */
  multiSource: boolean;
  sources: ApplicationSource[];
  /** One per source, in order. */
  revisions: string[];
  /** One per source; '' for a `ref`-only source. */
  sourceTypes: string[];
  /** Repositories of chart dependencies, for requeueing on their Secrets' changes. */
  dependencies: string[];
}

export interface RenderApplicationOptions {
  project: AppProject;
  /** The controller's namespace: an Application elsewhere is `<namespace>_<name>` to its render, as in Argo CD. */
  controllerNamespace: string;
  repositories: RepositoryState;
  /** An operation's sync: its revision(s) and, for a rollback, its source(s). */
  operation?: SyncOperation | undefined;
  kubeVersion?: string | undefined;
  apiVersions?: readonly string[] | undefined;
  /** Refs and Helm indexes this old may be reused (the refresh interval; 0 for an explicit refresh or a sync). */
  revisionMaxAgeMs?: number | undefined;
  noCache?: boolean | undefined;
  /** The Application's render limits (argocd-cm), sent with each of its render requests. */
  limits?: ApplicationLimits | undefined;
  /** argocd-cm's tool switches and kustomize versions, sent with each render request. */
  tools?: ToolSettings | undefined;
  /**
   * operation.sync.manifests (`argocd app sync --local`): the objects instead of the sources', as
   * Argo CD's CompareAppState takes them (an empty list is none). The renderer parses them; the
   * sources' revisions are still resolved, for status and history.
   */
  localManifests?: readonly string[] | undefined;
}

const REF_KEY = /^[a-zA-Z0-9_-]+$/;
/** Answers with needs one render may get: each level of nested submodules, then a chart's dependencies. */
const MAX_NEEDS_ROUNDS = 10;

/**
 * A submodule's repository gets the credentials a source with its URL would get (never its
 * superproject's), once the project permits it; the renderer judges it again (source/submodules.ts).
 */
function submoduleAccess(
  url: string,
  sourceRepos: readonly string[],
  project: string,
  access: (url: string) => RepositoryAccess,
): { url: string; repository: RepositoryAccess } {
  const decision = fetchDecision(sourceRepos, url);
  if (!decision.permitted)
    throw new SourceError(
      'InvalidSource',
      `submodule repository '${redactURL(url)}' is not permitted in project '${project}' (${decision.because}): add it to its sourceRepos, or turn submodules off (ARGOCD_GIT_MODULES_ENABLED=false)`,
    );
  return { url, repository: access(url) };
}

/** The sources an operation or the spec names, and whether they are spec.sources. */
export function applicationSources(
  app: Application,
  op?: SyncOperation,
): { sources: ApplicationSource[]; multiSource: boolean } {
  if (op?.sources && op.sources.length > 0) return { sources: op.sources, multiSource: true };
  if (op?.source) return { sources: [op.source], multiSource: false };
  if (app.spec.sources && app.spec.sources.length > 0) return { sources: app.spec.sources, multiSource: true };
  if (app.spec.source) return { sources: [app.spec.source], multiSource: false };
  throw new SourceError('InvalidSource', 'spec.source is missing');
}

function isRefOnly(s: ApplicationSource): boolean {
  return !!s.ref && !s.path && !s.chart && !s.repoURL.startsWith('oci://');
}

export async function renderApplication(
  renderer: Renderer,
  app: Application,
  opts: RenderApplicationOptions,
): Promise<RenderedApplication> {
  const { sources, multiSource } = applicationSources(app, opts.operation);
  const project = opts.project.metadata.name;
  // The AppProject is the tenant the renderer shares its slots by (renderer/slots.ts).
  // The Application is named in the renderer's memory budget (renderer/memory.ts).
  const application = applicationKey(app);
  const renderOptions = {
    noCache: opts.noCache === true,
    tenant: project,
    application,
    ...(opts.limits ? { limits: opts.limits } : {}),
  };
  const sourceRepos = opts.project.spec.sourceRepos ?? [];
  const given = opts.operation?.revisions ?? (opts.operation?.revision ? [opts.operation.revision] : []);
  const revisionOf = (i: number): string | undefined => (given[i] ? given[i] : sources[i]?.targetRevision);
  const access = (url: string) => {
    try {
      return accessFor(opts.repositories, url, project);
    } catch (err) {
      if (err instanceof RepositoryRefused) throw new SourceError('InvalidSource', err.message);
      throw err;
    }
  };
  // Argo CD's GetRefSources checks.
  const refs = new Map<string, RefSource>();
  sources.forEach((s, i) => {
    if (!s.ref) return;
    if (!REF_KEY.test(s.ref))
      throw new SourceError(
        'InvalidSource',
        `sources.ref ${s.ref} cannot contain any special characters except '_' and '-'`,
      );
    if (refs.has(`$${s.ref}`))
      throw new SourceError('InvalidSource', 'invalid sources: multiple sources had the same `ref` key');
    refs.set(`$${s.ref}`, { repoURL: s.repoURL, targetRevision: revisionOf(i), repository: undefined });
  });
  const out: RenderedApplication = {
    objects: [],
    multiSource,
    sources,
    revisions: [],
    sourceTypes: [],
    dependencies: [],
  };
  const local = opts.localManifests && opts.localManifests.length > 0 ? opts.localManifests : undefined;
  // Argo CD's CompareAppState: no local manifests where a revision would have to be verified.
  // ARGOCD_GPG_ENABLED=false does not lift it: Argo CD's lookupGit skips verification for the first
  // lookup only (v3.6.1), so its HasCriteria holds from then on.
  if (local && hasSignatureCriteria(opts.project, sources))
    throw new SourceError('InvalidSource', 'Cannot use local manifests when source integrity is enforced');
  // With local manifests, one request carries them: that of the first source that is not ref-only.
  const carrier = local
    ? Math.max(
        0,
        sources.findIndex((s) => !multiSource || !isRefOnly(s)),
      )
    : -1;
  // Argo CD renders every source and names each failed integrity check in a condition of its own.
  const integrity: string[] = [];
  for (const [i, source] of sources.entries()) {
    const label = multiSource ? `source ${i + 1} of ${sources.length}: ` : '';
    try {
      if (multiSource && (!source.repoURL || (!source.path && !source.chart && !source.ref))) {
        throw new SourceError(
          'InvalidSource',
          'spec.source.repoURL and either source.path, source.chart, or source.ref are required',
        );
      }
      const input: RenderInput = {
        source,
        appName: app.metadata.name,
        instanceName: appInstanceName(app, opts.controllerNamespace),
        destinationNamespace: app.spec.destination?.namespace,
        project,
        revision: given[i] ? given[i] : undefined,
        ...(opts.kubeVersion ? { kubeVersion: opts.kubeVersion } : {}),
        ...(opts.apiVersions ? { apiVersions: opts.apiVersions } : {}),
        sourceRepos,
        repository: access(source.repoURL),
        ...(opts.revisionMaxAgeMs ? { revisionMaxAgeMs: opts.revisionMaxAgeMs } : {}),
        ...(opts.tools ? { tools: opts.tools } : {}),
      };
      // manifest-generate-paths, as Argo CD's evaluateRevisionChanges: with a revision compared before.
      const synced = multiSource ? app.status?.sync?.revisions?.[i] : app.status?.sync?.revision;
      const generatePaths = refreshPaths(app.metadata.annotations?.[MANIFEST_GENERATE_PATHS], source.path);
      if (synced && generatePaths.length > 0) input.generatePaths = { paths: generatePaths, syncedRevision: synced };
      // Argo CD verifies Git sources only (its repo-server's git path). ARGOCD_GPG_ENABLED=false:
      // nothing verified; several matching policies stay an error.
      const policy = isGitSource(source)
        ? signaturePolicy(opts.project, source.repoURL, opts.repositories.gpgEnabled !== false)
        : { kind: 'none' as const };
      if (policy.kind === 'error')
        throw new SourceError('InvalidSource', policy.message.replace(source.repoURL, redactURL(source.repoURL)));
      if (policy.kind === 'verify' || policy.kind === 'legacy') {
        const publicKeys = Object.values(opts.repositories.gpgKeys ?? {});
        const mode = policy.kind === 'legacy' ? 'legacy' : policy.mode;
        input.signature = { mode, keys: policy.keys, publicKeys };
      }
      if (local && i === carrier) {
        const rendered = await renderer.render({ ...input, localManifests: local }, renderOptions);
        out.objects.push(...rendered.objects);
        out.revisions.push(rendered.revision);
        out.sourceTypes.push(rendered.sourceType);
        continue;
      }
      if ((multiSource && isRefOnly(source)) || local) {
        out.revisions.push(await renderer.resolveRevision(input, { tenant: project, application }));
        out.sourceTypes.push('');
        continue;
      }
      // Only the ref sources this source's value files and file parameters name travel with it (Argo
      // CD's refCandidates), each with its own credentials.
      const named = new Set(
        refCandidates(source)
          .filter((f) => f.startsWith('$'))
          .map((f) => f.split('/')[0]),
      );
      const refSources: Record<string, RefSource> = {};
      for (const [key, ref] of refs) if (named.has(key)) refSources[key] = { ...ref, repository: access(ref.repoURL) };
      if (Object.keys(refSources).length > 0) input.refSources = refSources;
      if (refs.size > 0) input.refNames = [...refs.keys()];
      let rendered;
      // Submodules within submodules are named a level at a time, then the chart's dependencies.
      for (let round = 0; ; round++) {
        try {
          rendered = await renderer.render(input, renderOptions);
          break;
        } catch (err) {
          if (!(err instanceof NeedsRepositories) || round >= MAX_NEEDS_ROUNDS) throw err;
          const submodules = err.needs.filter((n) => n.submodule === true && n.url !== undefined);
          if (submodules.length > 0) {
            input.submoduleRepositories = [
              ...(input.submoduleRepositories ?? []),
              ...submodules.map((n) => submoduleAccess(n.url as string, sourceRepos, project, access)),
            ];
          }
          const needs = err.needs.filter((n) => n.submodule !== true);
          if (needs.length === 0) continue;
          input.dependencyRepositories = needs.map((need) => {
            const repository = dependencyAccess(opts.repositories, need, project, sourceRepos);
            return {
              ...need,
              ...(repository && repository.url !== need.url ? { url: repository.url } : {}),
              ...(repository ? { repository } : {}),
            };
          });
          refuseDependencies(needs, input.dependencyRepositories, opts.repositories, project, sourceRepos);
        }
      }
      out.objects.push(...rendered.objects);
      out.revisions.push(rendered.revision);
      out.sourceTypes.push(rendered.sourceType);
      out.dependencies.push(...(rendered.dependencies ?? []));
    } catch (caught) {
      if (caught instanceof SourceError && caught.reason === 'IntegrityFailed') {
        integrity.push(multiSource ? withSourceName(caught.message, source, label) : caught.message);
        continue;
      }
      let err = caught;
      const note =
        err instanceof SourceError && err.reason === 'RepositoryUnreachable'
          ? templateNotUsedNote(opts.repositories.configs, source.repoURL, project)
          : undefined;
      if (note && err instanceof SourceError)
        err = new SourceError(err.reason, `${err.message} (${note})`, { cause: err });
      if (err instanceof SourceError && label !== '') {
        throw new SourceError(err.reason, `failed to generate manifest for ${label.slice(0, -2)}: ${err.message}`, {
          cause: err,
        });
      }
      throw err;
    }
  }
  if (integrity.length > 0) throw new SourceIntegrityFailed(integrity);
  return out;
}

/**
 * SourceIntegrityCheckResult.InjectSourceName, as Argo CD's GetRepoObjs calls it for several
 * sources: "GIT/GPG: source <name>: <problem>", or "source <i> of <n>" for a source with no name.
 */
function withSourceName(message: string, source: ApplicationSource, label: string): string {
  const id = source.name ? `source ${source.name}` : label.slice(0, -2);
  // One line per problem, each "GIT/GPG: <problem>"; Argo CD's legacy messages name no source.
  return message
    .split('\n')
    .map((line) => (line.startsWith('GIT/GPG: ') ? `GIT/GPG: ${id}: ${line.slice('GIT/GPG: '.length)}` : line))
    .join('\n');
}

/**
 * Refuses, before the render that would fetch them, the dependency repositories the project does
 * not permit (Argo CD's message, which Argo CD gives only once the fetch has failed): a URL as
 * Chart.yaml writes it, an `@name` as the URL of the repository Secret of that name, permitted or
 * not. The renderer judges them again (source/helm-deps.ts).
 */
function refuseDependencies(
  needs: readonly RepositoryNeed[],
  resolved: readonly DependencyRepository[],
  state: RepositoryState,
  project: string,
  sourceRepos: readonly string[],
): void {
  const named = (name: string | undefined) =>
    state.configs.find(
      (c) =>
        c.secretType === 'repository' &&
        (c.type === 'helm' || c.type === 'oci') &&
        (c.project === '' || c.project === project) &&
        c.name === name,
    )?.url;
  const refused = [
    ...new Set(
      needs
        .map((n, i) => n.url ?? resolved[i]?.url ?? named(n.name))
        .filter((u): u is string => u !== undefined && !fetchDecision(sourceRepos, u).permitted),
    ),
  ];
  if (refused.length === 0) return;
  throw new SourceError(
    'InvalidSource',
    `helm repos ${refused.map(redactURL).join(', ')} are not permitted in project '${project}': add them to its sourceRepos, or vendor the charts in charts/`,
  );
}

/** For messages: the sources' repositories, passwords hidden. */
export function describeSources(sources: readonly ApplicationSource[]): string {
  return sources.map((s) => redactURL(s.repoURL)).join(', ');
}

/** The paths of a source that may name a ref source: its value files, then its file parameters' paths. */
function refCandidates(source: ApplicationSource): string[] {
  const fileParameters = (source.helm as { fileParameters?: unknown } | undefined)?.fileParameters;
  const paths = Array.isArray(fileParameters)
    ? fileParameters.map((fp: unknown) => (fp as { path?: unknown } | null)?.path).filter((p) => typeof p === 'string')
    : [];
  return [...(source.helm?.valueFiles ?? []), ...paths];
}
