// Global projects (spec §7): a project whose labels match a `globalProjects` selector in argocd-cm
// inherits that global project's destinationServiceAccounts, appended after its own, in
// `globalProjects` order. Mirrors Argo CD's GetGlobalProjects: a project is never its own global
// project, and an invalid selector or a missing global project stops the walk there.
import type { AppProject } from '../api/index.ts';
import type { ServiceAccountEntry } from './resolver.ts';
import type { GlobalProjectSetting } from './settings.ts';
import { checkLabelSelector, matchesLabelSelector } from './label-selector.ts';

export interface EffectiveEntries {
  /** Own entries first, then each matching global project's; each names the project it came from. */
  entries: ServiceAccountEntry[];
  /** Names of the global projects inherited from, in order. */
  globalProjects: string[];
  /** Why the walk over `globalProjects` stopped early, if it did. */
  warnings: string[];
}

/** The project's own destinationServiceAccounts, tagged with its name. */
export function ownEntries(project: AppProject): ServiceAccountEntry[] {
  return (project.spec.destinationServiceAccounts ?? []).map((e) => ({
    server: e.server,
    namespace: e.namespace,
    defaultServiceAccount: e.defaultServiceAccount,
    fromProject: project.metadata.name,
  }));
}

/** The global projects `project` inherits from, in `globalProjects` order (spec §7). */
export function matchingGlobalProjects(
  project: AppProject,
  allProjects: readonly AppProject[],
  globalProjects: readonly GlobalProjectSetting[],
): { projects: AppProject[]; warnings: string[] } {
  const projects: AppProject[] = [];
  const warnings: string[] = [];
  const sameNamespace = (p: AppProject) => (p.metadata.namespace ?? '') === (project.metadata.namespace ?? '');
  for (const setting of globalProjects) {
    if (setting.projectName === project.metadata.name) continue;
    const check = checkLabelSelector(setting.labelSelector);
    if (!check.ok) {
      warnings.push(
        `globalProjects entry for '${setting.projectName}' has an invalid labelSelector (${check.error}); later global projects are ignored`,
      );
      break;
    }
    if (!matchesLabelSelector(setting.labelSelector, project.metadata.labels ?? {})) continue;
    const global = allProjects.find((p) => p.metadata.name === setting.projectName && sameNamespace(p));
    if (!global) {
      warnings.push(
        `global project '${setting.projectName}' selects AppProject '${project.metadata.name}' but was not found; later global projects are ignored`,
      );
      break;
    }
    projects.push(global);
  }
  return { projects, warnings };
}

/** Own entries, then inherited ones (spec §7), each tagged with `fromProject`. */
export function effectiveDestinationServiceAccounts(
  project: AppProject,
  allProjects: readonly AppProject[],
  settings: { globalProjects: readonly GlobalProjectSetting[] },
): EffectiveEntries {
  const { projects, warnings } = matchingGlobalProjects(project, allProjects, settings.globalProjects);
  const entries = ownEntries(project);
  for (const global of projects) entries.push(...ownEntries(global));
  return { entries, globalProjects: projects.map((p) => p.metadata.name), warnings };
}
