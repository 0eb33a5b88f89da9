// The impersonation core: pure functions from values to values (spec §2–§8, §10). No I/O.
//
// Contract (what the controller, the CLI and the sync engine may rely on):
// - `readImpersonationSettings(cm | undefined | Error)` never throws; problems are in `.errors`.
// - `resolveDestination(app, clusterSecrets)` maps spec.destination (server, or name; `in-cluster`
//   is built in) to the Cluster whose `server` the globs are matched against, or an error value
//   naming the field.
// - `decideIdentity({application, project, projects, settings, resolvedServer})` is THE identity
//   decision of the identity rule (ARCHITECTURE.md): it applies global-project inheritance (§7),
//   the resolver (§3) and the enabled/enforced table (§5), and returns
//   `{decision, serviceAccount, matched, message, trace, entries, globalProjects, warnings}`:
//     disabled    → use the controller's credential, message ""
//     impersonate → send `Impersonate-User: <serviceAccount>` (user only) on every request
//     fallback    → use the controller's credential; `message` is the info line to log
//     deny, error → do not touch the destination; `message` is the operation/condition message
//                   (error also when the ServiceAccount is in kube-system, kube-public or
//                   kube-node-lease and argocd-cm's allowSystemNamespaces is not "true")
//   `warnings` carries settings errors, global-project problems and the §10 warning.
// - `validateProject(project)` lists every §8 failure, first = Argo CD's.
// - `compileGlob`/`matchGlob`/`globMatch` are the §2 dialect (cached); `project/` may use them.
// Inputs are not mutated; the same inputs always give the same result.
import type { AppProject, Application } from '../api/index.ts';
import { decide, type IdentityDecision } from './decision.ts';
import { effectiveDestinationServiceAccounts } from './global-projects.ts';
import type { ServiceAccountEntry } from './resolver.ts';
import type { ImpersonationSettings } from './settings.ts';
import { projectImpersonationWarning } from './warnings.ts';

export { compileGlob, matchGlob, globMatch, type Glob, type CompileResult, type MatchResult } from './glob.ts';
export {
  resolveServiceAccount,
  serviceAccountUser,
  isInvalidServiceAccountName,
  trimSpaces,
  SERVICE_ACCOUNT_DISALLOWED_CHARS,
  type ServiceAccountEntry,
  type ResolveTarget,
  type EntryTrace,
  type Resolution,
} from './resolver.ts';
export {
  readImpersonationSettings,
  parseGlobalProjects,
  settingsReadError,
  IMPERSONATION_ENABLED_KEY,
  IMPERSONATION_ENFORCED_KEY,
  GLOBAL_PROJECTS_KEY,
  RECONCILIATION_TIMEOUT_KEY,
  REQUIRE_EXTRAS_KEY,
  DEFAULT_IMPERSONATION_ENABLED,
  DEFAULT_IMPERSONATION_ENFORCED,
  DEFAULT_RECONCILIATION_TIMEOUT_SECONDS,
  type ImpersonationSettings,
  type GlobalProjectSetting,
} from './settings.ts';
export {
  ALLOW_SYSTEM_NAMESPACES_KEY,
  SYSTEM_NAMESPACES,
  systemNamespaceOf,
  systemNamespaceRefusal,
  systemNamespaceEntries,
  type SystemNamespaceEntry,
} from './system-namespaces.ts';
export { matchesLabelSelector, checkLabelSelector, type LabelSelector } from './label-selector.ts';
export { parseDurationSeconds } from './duration.ts';
export {
  decide,
  deriveErrorMessage,
  noMatchDenyMessage,
  noMatchFallbackMessage,
  type DecisionKind,
  type DecisionInput,
  type IdentityDecision,
  type MatchedEntry,
} from './decision.ts';
export {
  effectiveDestinationServiceAccounts,
  matchingGlobalProjects,
  ownEntries,
  type EffectiveEntries,
} from './global-projects.ts';
export {
  validateProject,
  validateDestinationServiceAccounts,
  type ProjectValidation,
  type ValidationFailure,
} from './validation.ts';
export { impersonationDisabledWarning, projectImpersonationWarning } from './warnings.ts';
export { resolveDestination, knownClusters, type DestinationResult } from './destination.ts';

export interface IdentityInput {
  application: Pick<Application, 'metadata' | 'spec'>;
  /** The Application's AppProject. */
  project: AppProject;
  /** Every AppProject known (for global projects, §7); the project itself may be among them. */
  projects?: readonly AppProject[];
  settings: Pick<ImpersonationSettings, 'enabled' | 'enforced' | 'allowSystemNamespaces' | 'globalProjects' | 'errors'>;
  /** The destination's server URL, from resolveDestination. */
  resolvedServer: string;
}

export interface Identity extends IdentityDecision {
  /** The effective destinationServiceAccounts: own entries, then inherited ones. */
  entries: ServiceAccountEntry[];
  /** Global projects inherited from, in order. */
  globalProjects: string[];
  warnings: string[];
}

/** The identity decision for one Application (spec §3, §5, §7, §10). */
export function decideIdentity(input: IdentityInput): Identity {
  const { application, project, settings } = input;
  const effective = effectiveDestinationServiceAccounts(project, input.projects ?? [], settings);
  const decision = decide({
    settings,
    project: project.metadata.name,
    entries: effective.entries,
    resolvedServer: input.resolvedServer,
    destinationNamespace: application.spec.destination?.namespace ?? '',
    applicationNamespace: application.metadata.namespace ?? '',
  });
  const warnings = [...settings.errors, ...effective.warnings];
  const disabled = projectImpersonationWarning(project.metadata.name, effective.entries.length, settings);
  if (disabled) warnings.push(disabled);
  return { ...decision, entries: effective.entries, globalProjects: effective.globalProjects, warnings };
}
