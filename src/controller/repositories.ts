// Before a render: a repository Secret or credential template an Application's sources would use
// that does not parse refuses the render, naming the Secret and field (repository/unreadable.ts),
// as Argo CD's GetRepository fails; the render would otherwise fetch without what it meant to give.
import type { AppProject, Application, SyncOperation } from '../api/index.ts';
import { unreadableRefusal } from '../repository/unreadable.ts';
import { SourceError } from '../source/errors.ts';
import type { ControllerRepositoryState } from './cache.ts';
import { applicationSources } from './render.ts';

export function refuseUnreadableRepositories(
  app: Application,
  operation: SyncOperation | undefined,
  repositories: ControllerRepositoryState,
  project: AppProject,
): void {
  const { sources } = applicationSources(app, operation);
  const refusal = unreadableRefusal(
    repositories.configs,
    repositories.unreadable,
    sources.map((s) => s.repoURL),
    project.metadata.name,
  );
  if (refusal) throw new SourceError('InvalidSource', refusal);
}
