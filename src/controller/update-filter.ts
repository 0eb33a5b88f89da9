// Whether a change to a live object is worth a refresh of the Application that tracks it, as Argo
// CD's ignoreResourceUpdates decides (util/settings GetIgnoreResourceUpdatesOverrides): argocd-cm's
// `resource.customizations.ignoreResourceUpdates.*` and, while
// `resource.compareoptions.ignoreDifferencesOnResourceUpdates` is on (the default), its
// ignoreDifferences too, with resourceVersion, generation and managedFields, name fields whose
// changes alone are not. `resource.ignoreResourceUpdatesEnabled: "false"` turns it off. A change
// of `status` is always worth one, so a health that changes is seen at once (Argo CD refreshes
// when the health changes).
import type { KubeObject } from '../api/index.ts';
import type { IgnoreRule, JqRunner, SyncSettings } from '../sync/index.ts';
import { normalizeIgnored, tooComplex } from '../sync/index.ts';
import { isDeepStrictEqual } from 'node:util';

const ALWAYS: IgnoreRule = {
  group: '*',
  kind: '*',
  jsonPointers: ['/metadata/resourceVersion', '/metadata/generation', '/metadata/managedFields'],
  jqPathExpressions: [],
  managedFieldsManagers: [],
};

export async function worthRefresh(
  settings: SyncSettings,
  old: KubeObject,
  now: KubeObject,
  jq: JqRunner | undefined,
): Promise<boolean> {
  if (!settings.ignoreResourceUpdatesEnabled) return true;
  if (!isDeepStrictEqual(old['status'], now['status'])) return true;
  const rules = [
    ALWAYS,
    ...settings.ignoreResourceUpdates,
    ...(settings.ignoreDifferencesOnResourceUpdates ? settings.ignoreDifferences : []),
  ];
  try {
    const n = await normalizeIgnored({ rules, ignoreAggregatedRoles: false, jq }, old, now);
    return !isDeepStrictEqual(n.live, n.predicted);
  } catch (e) {
    // managedFields too costly to read: the refresh says so on the resource.
    if (tooComplex(e)) return true;
    throw e;
  }
}
