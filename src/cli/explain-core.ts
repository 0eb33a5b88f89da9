// The pure part of `impersync explain`: from an inventory of objects to the explanation of which
// identity one Application syncs as (spec §3–§7, §10), or to the reason the input is unusable.
import { applicationKey, projectName, type AppProject, type Application } from '../api/index.ts';
import {
  decideIdentity,
  readImpersonationSettings,
  resolveDestination,
  type DecisionKind,
  type Identity,
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
}

export interface Explanation {
  report: ExplainReport;
  identity: Identity;
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

/** Argo CD always has a `default` project; without one in the input, an empty one stands in. */
function builtinDefaultProject(namespace: string): AppProject {
  return { apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'default', namespace }, spec: {} };
}

function findProject(inventory: Inventory, name: string, namespace: string): AppProject | undefined {
  const named = inventory.projects.filter((p) => p.value.metadata.name === name).map((p) => p.value);
  return named.find((p) => (p.metadata.namespace ?? namespace) === namespace) ?? named[0];
}

/** Explains one Application's identity, or says why the input cannot be explained. */
export function explain(inventory: Inventory, options: ExplainOptions): Loaded<Explanation> {
  const selected = selectApplication(inventory, options);
  if (!selected.ok) return selected;
  const app = selected.value.value;
  const appRef = `${describeWhere(selected.value.where)}: Application ${applicationKey(app)}`;
  const warnings: string[] = [];

  const projName = projectName(app);
  let project = findProject(inventory, projName, options.namespace);
  if (!project) {
    if (projName !== 'default')
      return { ok: false, error: `${appRef}: spec.project: AppProject '${projName}' not found in ${options.source}` };
    project = builtinDefaultProject(options.namespace);
    warnings.push(
      `AppProject 'default' not found in ${options.source}: using Argo CD's built-in default project (no destinationServiceAccounts)`,
    );
  }
  const projects = inventory.projects.map((p) => ({
    ...p.value,
    metadata: { ...p.value.metadata, namespace: p.value.metadata.namespace ?? options.namespace },
  }));
  const projectWithNs = {
    ...project,
    metadata: { ...project.metadata, namespace: project.metadata.namespace ?? options.namespace },
  };

  const destination = resolveDestination(
    app,
    inventory.clusters.map((c) => c.value),
  );
  if (!destination.ok) return { ok: false, error: `${appRef}: ${destination.field}: ${destination.error}` };

  const settings = readImpersonationSettings(inventory.configMap?.value ?? inventory.configMapError);
  if (settings.source === 'absent') warnings.push(missingConfigMapWarning(options.source));

  const identity = decideIdentity({
    application: app,
    project: projectWithNs,
    projects,
    settings,
    resolvedServer: destination.cluster.server,
  });
  const report: ExplainReport = {
    application: applicationKey(app),
    project: projName,
    destination: {
      server: app.spec.destination?.server ?? '',
      name: app.spec.destination?.name ?? '',
      namespace: app.spec.destination?.namespace ?? '',
    },
    resolvedServer: destination.cluster.server,
    impersonation: { enabled: settings.enabled, enforced: settings.enforced },
    decision: identity.decision,
    serviceAccount: identity.serviceAccount,
    matched: identity.matched,
    message: identity.message,
    warnings: [...warnings, ...identity.warnings],
  };
  return { ok: true, value: { report, identity, settings, clusterName: destination.cluster.name } };
}
