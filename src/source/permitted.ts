// The renderer's own check, before any request, that the project allows a repository that tenant
// content names (a chart dependency, a kustomize remote base or helmCharts repository): the same
// decision the controller makes (project/fetch-repos.ts), one message wherever it refuses.
import { fetchDecision } from '../project/fetch-repos.ts';
import { redactURL } from './errors.ts';

/**
 * Why the project's sourceRepos do not allow a fetch from `url`, or undefined when they do.
 * `sourceRepos` absent (a request that did not say) allows nothing.
 */
export function sourceRepoRefusal(url: string, sourceRepos: readonly string[] | undefined): string | undefined {
  const decision = fetchDecision(sourceRepos ?? [], url);
  if (decision.permitted) return undefined;
  return `the project's sourceRepos do not allow '${redactURL(url)}' (${decision.because})`;
}
