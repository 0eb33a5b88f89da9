// What the controller asks the renderer for one Application: its one source and the few facts of the
// Application a render needs (name, destination namespace, revision) and its project's sourceRepos,
// never the Application itself.
// Runs on the controller's side: the refusals here need no Git and no tool.
import type { Application, ApplicationSource } from '../api/application.ts';
import { SourceError } from '../source/errors.ts';
import type { RenderInput } from '../source/index.ts';

export interface RenderInputOptions {
  /** Render this revision instead of spec.source.targetRevision (operation.sync.revision). */
  revision?: string | undefined;
  /** The destination's Kubernetes version and API versions, passed to helm as Argo CD does. */
  kubeVersion?: string | undefined;
  apiVersions?: readonly string[] | undefined;
  /** The AppProject's spec.sourceRepos: where kustomize remote bases may come from (none without it). */
  sourceRepos?: readonly string[] | undefined;
  /**
   * Render this source instead of spec.source: a rollback's `operation.sync.source` (the source a
   * history entry recorded). Multi-source rollbacks would pass `sources` beside it.
   */
  source?: ApplicationSource | undefined;
}

/** The render request for `app`; a SourceError (InvalidSource) when it has nothing renderable. */
export function renderInputFor(app: Application, opts: RenderInputOptions = {}): RenderInput {
  const source = opts.source ?? app.spec.source;
  if (!source) {
    if (app.spec.sources && app.spec.sources.length > 0) {
      throw new SourceError('InvalidSource', 'spec.sources (multiple sources) is not supported; use spec.source');
    }
    throw new SourceError('InvalidSource', 'spec.source is missing');
  }
  return {
    source,
    appName: app.metadata.name,
    destinationNamespace: app.spec.destination?.namespace,
    ...(opts.revision !== undefined ? { revision: opts.revision } : {}),
    ...(opts.kubeVersion !== undefined ? { kubeVersion: opts.kubeVersion } : {}),
    ...(opts.apiVersions !== undefined ? { apiVersions: opts.apiVersions } : {}),
    ...(opts.sourceRepos !== undefined ? { sourceRepos: opts.sourceRepos } : {}),
  };
}
