// The admission gate: whether an Application may be compared and synced, and as whom. One pure
// function from the control namespace's state (argocd-cm's settings, the cluster Secrets, the
// AppProjects) and an Application to the admitted context, or to the condition that refuses it.
// The controller asks it from its caches, `impersync explain` and `impersync diff` from files or a
// live read, so the three refuse exactly the same Applications with the same messages.
//
// In order, as a refusal names the first problem: the Application parses and sets no field
// impersync refuses (refused-fields.ts: the source hydrator, tagPrefix); its destination resolves
// to a cluster impersync can reach as Argo CD would (no config.proxyUrl)
// (spec §6); its project exists and parses; the project admits the Application's namespace
// (sourceNamespaces); the project permits its source and destination (spec §9); the identity
// decision (spec §3–§7) neither denies nor fails. As in Argo CD's controller, an invalid
// destinationServiceAccounts entry refuses only an Application whose walk reaches it (spec §3.1);
// every invalid entry is a warning (spec §8 as impersync validate checks it). The last is the one decision of the identity rule (ARCHITECTURE.md): an admitted
// context says whom the destination client acts as, and nothing else decides it.
import { CONDITION, parseApplication, projectName, readStatus, refusedClusterConfig } from '../api/index.ts';
import type { AppCondition, AppProject, Application, Cluster } from '../api/index.ts';
import { decideIdentity, globMatch, resolveDestination, validateProject } from '../impersonation/index.ts';
import type { Identity as ImpersonationIdentity, ImpersonationSettings } from '../impersonation/index.ts';
import type { Identity, MadeFor } from '../kube/types.ts';
import { checkApplicationLimits, describeViolation, projectClusters, withProjectClusters } from '../project/index.ts';
import { refusedApplicationFields } from './refused-fields.ts';

/** The identity decision of spec §5 for one Application, with its trace, entries and warnings. */
export type IdentityDecision = ImpersonationIdentity;

/** What the control namespace holds, as far as admission needs it. */
export interface ControlState {
  /** The control namespace: its Applications need no sourceNamespaces entry. */
  namespace: string;
  settings: ImpersonationSettings;
  /** The cluster Secrets that parse. */
  clusters: readonly Cluster[];
  /** Why the others do not (named when a destination is not found). */
  clusterErrors: readonly string[];
  /** argocd-cm `cluster.inClusterEnabled`: anything but "false" is on (Argo CD's IsInClusterEnabled). */
  inClusterEnabled?: boolean | undefined;
  /** The AppProjects of the control namespace that parse (global projects are among them). */
  projects: readonly AppProject[];
  /** Project name → why that AppProject does not parse. */
  projectErrors: ReadonlyMap<string, string>;
}

/** An Application whose project, destination and identity decision are known. */
export interface Decided {
  app: Application;
  /** The AppProject, with the implicit destinations of its project-scoped clusters (project/clusters.ts). */
  project: AppProject;
  /** The destination cluster (spec §6). */
  cluster: Cluster;
  /** The cluster Secrets scoped to the project, for permitOnlyProjectScopedClusters. */
  projectClusters?: readonly Cluster[];
  settings: ImpersonationSettings;
  identity: IdentityDecision;
  /** The ImpersonationInfo and ImpersonationWarning conditions of this decision (spec §10). */
  conditions: AppCondition[];
}

export type Admission =
  /** Compare and sync as `actsAs`. */
  | (Decided & { admitted: true; actsAs: Identity })
  /** spec §5: the identity decision denied or failed; nothing may touch the destination. */
  | (Decided & { admitted: false; by: 'identity'; condition: AppCondition })
  /** The Application, its destination or its project is not usable (InvalidSpecError). */
  | {
      admitted: false;
      by: 'spec';
      app: Application | undefined;
      settings: ImpersonationSettings;
      condition: AppCondition;
    };

/**
 * What the destination client's requests are made for (docs/impersonation.md §11): the
 * Application, its project and `revision` (the one compared or synced; absent when none is known),
 * and whether argocd-cm requires the API server to accept them.
 */
export function madeFor(decided: Pick<Decided, 'app' | 'project' | 'settings'>, revision?: string): MadeFor {
  return {
    application: `${decided.app.metadata.namespace ?? ''}/${decided.app.metadata.name}`,
    project: decided.project.metadata.name,
    ...(revision !== undefined && revision !== '' ? { revision } : {}),
    requireExtras: decided.settings.requireExtras,
  };
}

/** "system:serviceaccount:ns:sa" or "the controller's own credential", for messages. */
export function identityLabel(actsAs: Identity): string {
  return 'impersonate' in actsAs ? actsAs.impersonate : "the controller's own credential";
}

/** The identity conditions (spec §10): the decision and the ServiceAccount used for the comparison. */
export function identityConditions(identity: IdentityDecision): AppCondition[] {
  let message: string;
  switch (identity.decision) {
    case 'disabled':
      message = "sync impersonation is disabled: comparison and sync use the controller's own credential";
      break;
    case 'impersonate': {
      const m = identity.matched;
      const from = m
        ? ` (destinationServiceAccounts[${m.index}] of AppProject '${m.fromProject}': server '${m.server}', namespace '${m.namespace}')`
        : '';
      message = `comparison and sync run as ${identity.serviceAccount}${from}`;
      break;
    }
    case 'fallback':
      message = `${identity.message}: comparison and sync use the controller's own credential`;
      break;
    case 'deny':
    case 'error':
      message = `refused: ${identity.message}`;
      break;
  }
  const out: AppCondition[] = [{ type: CONDITION.ImpersonationInfo, message }];
  if (identity.warnings.length > 0)
    out.push({ type: CONDITION.ImpersonationWarning, message: identity.warnings.join('; ') });
  return out;
}

/** Whom the destination client acts as for a decision, or the message refusing it. */
function actingIdentity(identity: IdentityDecision): Identity | string {
  switch (identity.decision) {
    case 'impersonate':
      return identity.serviceAccount
        ? { impersonate: identity.serviceAccount }
        : 'failed to derive service account to impersonate: the decision named no ServiceAccount';
    case 'disabled':
    case 'fallback':
      return { controller: true };
    case 'deny':
    case 'error':
      return identity.message;
  }
}

/**
 * Every invalid destinationServiceAccounts entry of the project and of the global projects it
 * inherits from, as a warning. Argo CD's controller validates no project: it walks the entries and
 * fails only on an invalid one it visits before the match (the decision does the same), so a typo
 * in a later entry refuses nothing; this says so before a sync that reaches it fails.
 */
function invalidEntryWarnings(identity: IdentityDecision, project: AppProject, state: ControlState): string[] {
  const checked = [
    project,
    ...identity.globalProjects.flatMap((name) => state.projects.filter((p) => p.metadata.name === name)),
  ];
  return checked.flatMap((p) =>
    validateProject(p).failures.map(
      (f) =>
        `AppProject ${p.metadata.name}: spec.destinationServiceAccounts[${f.index}].${f.field}: ${f.message} (Argo CD's API server would refuse this project; a sync whose walk reaches this entry fails)`,
    ),
  );
}

/**
 * The status is the controller's to write: one another writer left in a shape the schema rejects
 * (`sync.status: ""`) is read as none (readStatus) and replaced by this reconcile's, not a reason
 * to refuse the Application, which would leave it unsynced until its next periodic refresh.
 */
function withoutUnreadableStatus(raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || !('status' in raw)) return raw;
  const { status, ...rest } = raw as Record<string, unknown>;
  return status === undefined || readStatus({ status }) !== undefined ? raw : rest;
}

export function admit(state: ControlState, raw: unknown): Admission {
  const { settings } = state;
  const refuse = (app: Application | undefined, message: string): Admission => ({
    admitted: false,
    by: 'spec',
    app,
    settings,
    condition: { type: CONDITION.InvalidSpecError, message },
  });
  let app: Application;
  try {
    app = parseApplication(withoutUnreadableStatus(raw));
  } catch (err) {
    return refuse(undefined, (err as Error).message);
  }
  const refused = refusedApplicationFields(app);
  if (refused.length > 0) return refuse(app, refused.join('; '));
  const dest = resolveDestination(app, state.clusters, { inClusterEnabled: state.inClusterEnabled !== false });
  if (!dest.ok) {
    const unreadable = state.clusterErrors.length > 0;
    return refuse(
      app,
      `${dest.field}: ${dest.error}${unreadable ? ` (unreadable cluster Secrets: ${state.clusterErrors.join('; ')})` : ''}`,
    );
  }
  const unreachable = refusedClusterConfig(dest.cluster);
  if (unreachable.length > 0) return refuse(app, unreachable.join('; '));
  const name = projectName(app);
  const own = state.projects.find((p) => p.metadata.name === name);
  if (!own) {
    const broken = state.projectErrors.get(name);
    return refuse(app, broken ?? `Application referencing project ${name} which does not exist`);
  }
  // Apps in any namespace: the project must list the Application's namespace in sourceNamespaces.
  const appNs = app.metadata.namespace ?? '';
  if (appNs !== state.namespace && !(own.spec.sourceNamespaces ?? []).some((g) => globMatch(g, appNs))) {
    return refuse(
      app,
      `application '${app.metadata.name}' in namespace '${appNs}' is not permitted to use project '${name}' (spec.sourceNamespaces)`,
    );
  }
  // As Argo CD's controller reads a project: with its project-scoped clusters as destinations.
  const project = withProjectClusters(own, state.clusters);
  const scoped = projectClusters(state.clusters, name);
  const limits = checkApplicationLimits(project, app, dest.cluster, scoped).map(describeViolation);
  if (limits.length > 0) return refuse(app, limits.join('; '));
  const decision = decideIdentity({
    application: app,
    project,
    projects: state.projects,
    settings,
    resolvedServer: dest.cluster.server,
  });
  const identity = { ...decision, warnings: [...decision.warnings, ...invalidEntryWarnings(decision, project, state)] };
  const decided: Decided = {
    app,
    project,
    cluster: dest.cluster,
    projectClusters: scoped,
    settings,
    identity,
    conditions: identityConditions(identity),
  };
  const actsAs = actingIdentity(identity);
  if (typeof actsAs === 'string')
    return {
      ...decided,
      admitted: false,
      by: 'identity',
      condition: { type: CONDITION.ComparisonError, message: actsAs },
    };
  return { ...decided, admitted: true, actsAs };
}
