// The first half of every reconcile, shared by comparison, operations and deletion: Application →
// destination → project (+ global projects) → project validation → identity decision → the one
// destination client. Either a ready context, or the reason the Application cannot proceed.
import { parseApplication, parseAppProject, projectName } from '../api/index.ts';
import type { AppProject, Application, Cluster } from '../api/index.ts';
import {
  decideIdentity,
  globMatch,
  readImpersonationSettings,
  resolveDestination,
  validateProject,
} from '../impersonation/index.ts';
import type { Identity as IdentityDecision, ImpersonationSettings } from '../impersonation/index.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import type { ClientRefusal, DestinationClient } from '../kube/types.ts';
import { isRefusal } from '../kube/types.ts';
import type { Metrics } from '../observability/metrics.ts';
import { instrumentClient } from './instrument.ts';
import type { ControllerCache } from './cache.ts';
import type { HealthAssessor } from '../sync/index.ts';
import type { HealthAssessors } from './health.ts';
import type { LimitsPort } from './ports.ts';
import { builtinAssessor } from '../sync/index.ts';
import { CONDITION } from './status.ts';
import type { AppCondition } from './status.ts';

export interface AppContext {
  app: Application;
  project: AppProject;
  projects: AppProject[];
  cluster: Cluster;
  settings: ImpersonationSettings;
  identity: IdentityDecision;
  /** The client for the identity, or the spec §5 refusal (deny, error). */
  client: DestinationClient | ClientRefusal;
  /** ImpersonationInfo / ImpersonationWarning conditions for this decision. */
  identityConditions: AppCondition[];
  /** How this reconcile assesses health: argocd-cm's customizations as they are now. */
  health: HealthAssessor;
}

export type Prepared =
  | { ok: true; ctx: AppContext }
  | { ok: false; app: Application | undefined; condition: AppCondition; settings: ImpersonationSettings };

export interface PrepareDeps {
  cache: ControllerCache;
  factory: DestinationClientFactory;
  limits: LimitsPort;
  metrics?: Metrics;
  /** argocd-cm health customizations; without it, the built-in checks only. */
  health?: HealthAssessors;
}

/** "system:serviceaccount:ns:sa" or "the controller's own credential", for messages. */
export function identityLabel(identity: Pick<IdentityDecision, 'decision' | 'serviceAccount'>): string {
  return identity.decision === 'impersonate' && identity.serviceAccount
    ? identity.serviceAccount
    : "the controller's own credential";
}

/** The identity condition (spec §10): the decision and the ServiceAccount used for the comparison. */
export function identityConditions(identity: IdentityDecision): AppCondition[] {
  const out: AppCondition[] = [];
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
  out.push({ type: CONDITION.ImpersonationInfo, message });
  if (identity.warnings.length > 0)
    out.push({ type: CONDITION.ImpersonationWarning, message: identity.warnings.join('; ') });
  return out;
}

function invalid(app: Application | undefined, settings: ImpersonationSettings, message: string): Prepared {
  return { ok: false, app, settings, condition: { type: CONDITION.InvalidSpecError, message } };
}

export function prepare(deps: PrepareDeps, raw: unknown): Prepared {
  const settings = readImpersonationSettings(deps.cache.settingsConfigMap());
  let app: Application;
  try {
    app = parseApplication(raw);
  } catch (err) {
    return invalid(undefined, settings, (err as Error).message);
  }
  const { clusters, errors: clusterErrors } = deps.cache.clusters();
  const dest = resolveDestination(app, clusters);
  if (!dest.ok) {
    const extra = clusterErrors.length > 0 ? ` (unreadable cluster Secrets: ${clusterErrors.join('; ')})` : '';
    return invalid(app, settings, `${dest.field}: ${dest.error}${extra}`);
  }
  const name = projectName(app);
  const rawProject = deps.cache.rawProject(name);
  if (!rawProject) return invalid(app, settings, `Application referencing project ${name} which does not exist`);
  let project: AppProject;
  try {
    project = parseAppProject(rawProject);
  } catch (err) {
    return invalid(app, settings, (err as Error).message);
  }
  // Apps in any namespace: the project must list the Application's namespace in sourceNamespaces.
  const appNs = app.metadata.namespace ?? '';
  if (appNs !== deps.cache.namespace && !(project.spec.sourceNamespaces ?? []).some((g) => globMatch(g, appNs))) {
    return invalid(
      app,
      settings,
      `application '${app.metadata.name}' in namespace '${appNs}' is not permitted to use project '${name}' (spec.sourceNamespaces)`,
    );
  }
  const validation = validateProject(project);
  if (!validation.valid) {
    const first = validation.failures[0];
    return invalid(
      app,
      settings,
      `AppProject ${name}: spec.destinationServiceAccounts[${first?.index ?? 0}].${first?.field ?? 'server'}: ${first?.message ?? 'invalid'}`,
    );
  }
  const limits = deps.limits.checkApplication(project, app, dest.cluster);
  if (limits.length > 0) return invalid(app, settings, limits.join('; '));
  const projects = deps.cache.allProjects();
  const identity = decideIdentity({
    application: app,
    project,
    projects,
    settings,
    resolvedServer: dest.cluster.server,
  });
  const built = deps.factory.forDecision(identity, dest.cluster);
  const m = deps.metrics;
  const client =
    m && !isRefusal(built)
      ? instrumentClient(built, (code, kind) => m.apiRequests.inc({ code, identity: kind }))
      : built;
  return {
    ok: true,
    ctx: {
      app,
      project,
      projects,
      cluster: dest.cluster,
      settings,
      identity,
      client,
      identityConditions: identityConditions(identity),
      health: deps.health?.for(deps.cache.settingsConfigMap()) ?? builtinAssessor,
    },
  };
}
