// The pure part of `impersync explain`: from an inventory of objects to the explanation of which
// identity one Application syncs as (spec §3–§7, §10), to the controller's refusal of it, or to the
// reason the input is unusable. The Application goes through the controller's admission gate
// (controller/admission.ts), so what the controller refuses is refused here too, with its message:
// an answer about the Application, not a fault of the input.
import { applicationKey, isInClusterEnabled, projectName, type AppProject, type Application } from '../api/index.ts';
import type { SyncWindowsStatus } from '../api/index.ts';
import { admit, type Admission, type ControlState, type IdentityDecision } from '../controller/admission.ts';
import { syncWindowsStatus } from '../controller/sync-windows.ts';
import {
  readImpersonationSettings,
  type DecisionKind,
  type ImpersonationSettings,
  type MatchedEntry,
} from '../impersonation/index.ts';
import { describeWhere, type Loaded } from './documents.ts';
import type { Inventory, Located } from './inventory.ts';

export interface ExplainOptions {
  /** `NAMESPACE/NAME` or `NAME`; required when the input has several Applications. */
  app?: string | undefined;
  /** The control namespace: Applications and AppProjects written without a namespace are in it. */
  namespace: string;
  /** Where the objects came from, for messages (`the input files a.yaml, b.yaml`, `namespace argocd`). */
  source: string;
  /** The time sync windows are judged at (default now). */
  now?: Date | undefined;
}

/** The JSON document of `explain -o json`: exactly these fields. */
export interface ExplainReport {
  application: string;
  project: string;
  destination: { server: string; name: string; namespace: string };
  resolvedServer: string;
  impersonation: { enabled: boolean; enforced: boolean };
  decision: DecisionKind;
  serviceAccount: string | null;
  matched: MatchedEntry | null;
  message: string;
  warnings: string[];
  /** The AppProject's sync windows for this Application now (only when some apply): controller/sync-windows.ts. */
  syncWindows?: SyncWindowsStatus;
}

/** The JSON document of `explain -o json` for an Application the controller refuses before deciding its identity. */
export interface RefusalReport {
  application: string;
  project: string;
  decision: 'refused';
  /** The condition the controller sets on it (InvalidSpecError). */
  condition: string;
  message: string;
}

/** explain()'s answer when the admission gate refuses the Application; `error` is the same as one line. */
export interface Refused {
  ok: false;
  refused: RefusalReport;
  error: string;
}

export interface Explanation {
  report: ExplainReport;
  /** What the admission gate said: admitted, or refused by the identity decision (deny, error). */
  admission: Exclude<Admission, { by: 'spec' }>;
  identity: IdentityDecision;
  settings: ImpersonationSettings;
  /** The destination cluster's name (`in-cluster` for the built-in one). */
  clusterName: string;
}

export function missingConfigMapWarning(source: string): string {
  return `no argocd-cm ConfigMap in ${source}: impersonation settings take their defaults (enabled: false, enforced: true)`;
}

function withNamespace(app: Application, namespace: string): Application {
  if (app.metadata.namespace) return app;
  return { ...app, metadata: { ...app.metadata, namespace } };
}

function selectApplication(inventory: Inventory, options: ExplainOptions): Loaded<Located<Application>> {
  const apps = inventory.applications.map((a) => ({
    value: withNamespace(a.value, options.namespace),
    where: a.where,
  }));
  const keys = () => apps.map((a) => applicationKey(a.value)).join(', ');
  if (options.app !== undefined) {
    const slash = options.app.indexOf('/');
    const wantNs = slash >= 0 ? options.app.slice(0, slash) : undefined;
    const wantName = slash >= 0 ? options.app.slice(slash + 1) : options.app;
    const found = apps.filter(
      (a) => a.value.metadata.name === wantName && (wantNs === undefined || a.value.metadata.namespace === wantNs),
    );
    if (found.length === 1) return { ok: true, value: found[0] as Located<Application> };
    if (found.length === 0) {
      return {
        ok: false,
        error: `--app ${options.app}: no such Application in ${options.source}${apps.length > 0 ? ` (found: ${keys()})` : ''}`,
      };
    }
    return {
      ok: false,
      error: `--app ${options.app}: ${found.length} Applications have that name in ${options.source} (${found.map((a) => applicationKey(a.value)).join(', ')}); give NAMESPACE/NAME`,
    };
  }
  if (apps.length === 1) return { ok: true, value: apps[0] as Located<Application> };
  if (apps.length === 0) return { ok: false, error: `no Application in ${options.source}` };
  return {
    ok: false,
    error: `${apps.length} Applications in ${options.source} (${keys()}); choose one with --app NAMESPACE/NAME`,
  };
}

/**
 * The control namespace's state as the input gives it, for the admission gate: the AppProjects of
 * the control namespace (a document without a namespace is in it), its argocd-cm, cluster Secrets.
 */
export function inventoryState(inventory: Inventory, namespace: string): ControlState {
  const projects: AppProject[] = inventory.projects
    .map((p) => p.value)
    .filter((p) => (p.metadata.namespace ?? namespace) === namespace)
    .map((p) => ({ ...p, metadata: { ...p.metadata, namespace } }));
  return {
    namespace,
    settings: readImpersonationSettings(inventory.configMap?.value ?? inventory.configMapError),
    clusters: inventory.clusters.map((c) => c.value),
    clusterErrors: [],
    inClusterEnabled: isInClusterEnabled(inventory.configMap?.value ?? inventory.configMapError),
    projects,
    projectErrors: new Map(),
  };
}

/** Explains one Application's identity, or the controller's refusal of it, or says why the input is unusable. */
export function explain(inventory: Inventory, options: ExplainOptions): Loaded<Explanation> | Refused {
  const selected = selectApplication(inventory, options);
  if (!selected.ok) return selected;
  const app: Application = selected.value.value;
  const appRef = `${describeWhere(selected.value.where)}: Application ${applicationKey(app)}`;
  const admission = admit(inventoryState(inventory, options.namespace), app);
  if (!admission.admitted && admission.by === 'spec')
    return {
      ok: false,
      refused: {
        application: applicationKey(app),
        project: projectName(app),
        decision: 'refused',
        condition: admission.condition.type,
        message: admission.condition.message,
      },
      error: `${appRef}: ${admission.condition.message}`,
    };
  const { identity, settings, cluster, project } = admission;
  const warnings: string[] = [];
  if (settings.source === 'absent') warnings.push(missingConfigMapWarning(options.source));
  const report: ExplainReport = {
    application: applicationKey(app),
    project: project.metadata.name,
    destination: {
      server: app.spec.destination?.server ?? '',
      name: app.spec.destination?.name ?? '',
      namespace: app.spec.destination?.namespace ?? '',
    },
    resolvedServer: cluster.server,
    impersonation: { enabled: settings.enabled, enforced: settings.enforced },
    decision: identity.decision,
    serviceAccount: identity.serviceAccount,
    matched: identity.matched,
    message: identity.message,
    warnings: [...warnings, ...identity.warnings],
  };
  const windows = syncWindowsStatus(project, app, options.now ?? new Date()).status;
  if (windows) report.syncWindows = windows;
  return { ok: true, value: { report, admission, identity, settings, clusterName: cluster.name } };
}
