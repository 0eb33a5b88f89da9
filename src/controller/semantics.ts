// The comparison and sync options one Application gets from its own spec and argocd-cm, built in
// one place for the refresh, the operation and `impersync diff`: tracking (method, label key,
// installation id), ignoreDifferences (spec and argocd-cm, jq run in a worker thread this owns),
// compare options, the resource filter, the managers a sync takes over, and the Application's
// Prune= / Delete= defaults.
import type { Application, Cluster, ConfigMap } from '../api/index.ts';
import type { ComparisonRules, IgnoreRule, ResourceFilter, SyncSettings, TrackingConfig } from '../sync/index.ts';
import { JqRunner, readSyncSettings, takeoverManagers } from '../sync/index.ts';
import { hasCompareOption } from '../api/annotations.ts';

export interface ApplicationSemantics {
  tracking: TrackingConfig;
  diff: ComparisonRules;
  filter: { rules: ResourceFilter; cluster: string };
  appSyncOptions: readonly string[];
  qualifiedName: string;
  takeover: readonly string[];
  /** ServerSideDiff without IncludeMutationWebhook=true: what mutating webhooks change is left out. */
  ignoreMutationWebhook: boolean;
  settings: SyncSettings;
}

/** spec.ignoreDifferences as rules (an empty group is the core group, as Argo CD reads it). */
export function specIgnoreRules(app: Application): IgnoreRule[] {
  return (app.spec.ignoreDifferences ?? []).map((d) => ({
    group: d.group ?? '',
    kind: d.kind,
    ...(d.name ? { name: d.name } : {}),
    ...(d.namespace ? { namespace: d.namespace } : {}),
    jsonPointers: d.jsonPointers ?? [],
    jqPathExpressions: d.jqPathExpressions ?? [],
    managedFieldsManagers: d.managedFieldsManagers ?? [],
  }));
}

/**
 * Argo CD's shouldUseServerSideDiff (controller/state.go): the controller's
 * `controller.diff.server.side`, the compare option ServerSideDiff=true or the sync option
 * ServerSideApply=true (ServerSideDiff=false is refused at admission). Then, unless the
 * Application's compare options say IncludeMutationWebhook=true, mutating webhooks' changes are
 * left out of the prediction (only the Application's annotation is read for it, as Argo CD reads it).
 */
export function ignoresMutationWebhook(app: Application, controllerServerSideDiff: boolean): boolean {
  const serverSide =
    controllerServerSideDiff ||
    hasCompareOption(app, 'ServerSideDiff=true') ||
    (app.spec.syncPolicy?.syncOptions ?? []).includes('ServerSideApply=true');
  return serverSide && !hasCompareOption(app, 'IncludeMutationWebhook=true');
}

export class Semantics {
  readonly jq = new JqRunner();
  readonly #serverSideDiff: boolean;
  #last: { key: string; settings: SyncSettings } | undefined;

  /** `serverSideDiff`: argocd-cmd-params-cm `controller.diff.server.side` is true. */
  constructor(opts: { serverSideDiff?: boolean } = {}) {
    this.#serverSideDiff = opts.serverSideDiff ?? false;
  }

  /** argocd-cm as it is now, read once per change. */
  settings(cm: ConfigMap | undefined | Error): SyncSettings {
    const data = cm instanceof Error || !cm ? {} : (cm.data ?? {});
    const key = JSON.stringify(data);
    if (this.#last?.key !== key) this.#last = { key, settings: readSyncSettings(data) };
    return this.#last.settings;
  }

  for(app: Application, cm: ConfigMap | undefined | Error, cluster: Cluster): ApplicationSemantics {
    const settings = this.settings(cm);
    return {
      tracking: settings.tracking,
      diff: {
        rules: [...specIgnoreRules(app), ...settings.ignoreDifferences],
        ignoreAggregatedRoles: settings.ignoreAggregatedRoles,
        status: settings.ignoreResourceStatusField,
        jq: this.jq,
        knownTypes: settings.knownTypeFields,
      },
      filter: { rules: settings.filter, cluster: cluster.server },
      appSyncOptions: app.spec.syncPolicy?.syncOptions ?? [],
      qualifiedName: app.metadata.namespace ? `${app.metadata.namespace}/${app.metadata.name}` : app.metadata.name,
      takeover: takeoverManagers(app.metadata.annotations),
      ignoreMutationWebhook: ignoresMutationWebhook(app, this.#serverSideDiff),
      settings,
    };
  }

  close(): Promise<void> {
    return this.jq.close();
  }
}
