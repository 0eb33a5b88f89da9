// The comparison and sync options one Application gets from its own spec and argocd-cm, built in
// one place for the refresh, the operation and `impersync diff`: tracking (method, label key,
// installation id), ignoreDifferences (spec and argocd-cm, jq run in a worker thread this owns),
// compare options, the resource filter, the managers a sync takes over, and the Application's
// Prune= / Delete= defaults.
import type { Application, Cluster, ConfigMap } from '../api/index.ts';
import type { ComparisonRules, IgnoreRule, ResourceFilter, SyncSettings, TrackingConfig } from '../sync/index.ts';
import { JqRunner, readSyncSettings, takeoverManagers } from '../sync/index.ts';

export interface ApplicationSemantics {
  tracking: TrackingConfig;
  diff: ComparisonRules;
  filter: { rules: ResourceFilter; cluster: string };
  appSyncOptions: readonly string[];
  qualifiedName: string;
  takeover: readonly string[];
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

export class Semantics {
  readonly jq = new JqRunner();
  #last: { key: string; settings: SyncSettings } | undefined;

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
      settings,
    };
  }

  close(): Promise<void> {
    return this.jq.close();
  }
}
