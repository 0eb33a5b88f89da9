// Whether a change to a live object is worth a refresh of the Application that tracks it, as Argo
// CD's ignoreResourceUpdates decides (util/settings GetIgnoreResourceUpdatesOverrides): argocd-cm's
// `resource.customizations.ignoreResourceUpdates.*` and, while
// `resource.compareoptions.ignoreDifferencesOnResourceUpdates` is on (the default), its
// ignoreDifferences too, with resourceVersion, generation and managedFields, name fields whose
// changes alone are not. `resource.ignoreResourceUpdatesEnabled: "false"` turns it off. A change
// of `status` is always worth one, so a health that changes is seen at once (Argo CD refreshes
// when the health changes).
//
// This runs on the watch's event, outside the fair queues, so a tenant's live objects decide what
// it costs: its managedFields are read only as far as WATCH_READ_COST allows, and past that the
// change is a refresh, whose comparison waits its tenant's turn and is charged to it.
import type { KubeObject } from '../api/index.ts';
import type { IgnoreRule, JqRunner, SyncSettings } from '../sync/index.ts';
import { normalizeIgnored, tooComplex } from '../sync/index.ts';
import { isDeepStrictEqual } from 'node:util';

/**
 * What the filter may spend reading one event's managedFields (managed-fields.ts units), a
 * hundredth of a comparison's bound: crafted managedFields reach it in some 40 ms, and a
 * Deployment's own cost about 2 units per env entry its ignored managers own.
 */
export const WATCH_READ_COST = 20_000;

/** The fields whose changes alone are never worth a refresh. */
const VOLATILE = ['resourceVersion', 'generation', 'managedFields'];

/** `o` without VOLATILE, copying only `o` and its metadata (not the rest, which may be megabytes). */
function withoutVolatile(o: KubeObject): KubeObject {
  const metadata: Record<string, unknown> = { ...o.metadata };
  for (const k of VOLATILE) delete metadata[k];
  return { ...o, metadata } as KubeObject;
}

/**
 * Whether the change from `old` to `now` is worth a refresh. `spent.ms` is given the time the
 * filter ran on this thread and jq's worker ran its expressions (not their wait for a turn, nor
 * what ran meanwhile), for the tenant's charge.
 */
export async function worthRefresh(
  settings: SyncSettings,
  old: KubeObject,
  now: KubeObject,
  jq: JqRunner | undefined,
  spent: { ms: number } = { ms: 0 },
): Promise<boolean> {
  let from = performance.now();
  const lap = () => {
    const at = performance.now();
    spent.ms += at - from;
    from = at;
  };
  try {
    if (!settings.ignoreResourceUpdatesEnabled) return true;
    if (!isDeepStrictEqual(old['status'], now['status'])) return true;
    const rules: IgnoreRule[] = [
      ...settings.ignoreResourceUpdates,
      ...(settings.ignoreDifferencesOnResourceUpdates ? settings.ignoreDifferences : []),
    ];
    // The volatile fields go before any rule reads the pair (a jq expression may test them), as
    // a rule of their own would; managedFieldsManagers still read the live object's. Without rules
    // for the object, nothing else is copied: the pair is compared as it is.
    const pending = normalizeIgnored(
      { rules, ignoreAggregatedRoles: false, jq, maxReadCost: WATCH_READ_COST, fieldsOf: old },
      withoutVolatile(old),
      withoutVolatile(now),
    );
    // What ran before normalizeIgnored's first wait; what ran after it is timed from here.
    lap();
    const n = await pending;
    from = performance.now();
    spent.ms += n.jqMs ?? 0;
    return !isDeepStrictEqual(n.live, n.predicted);
  } catch (e) {
    // managedFields too costly to read here: the refresh reads them in its tenant's turn.
    if (tooComplex(e)) return true;
    throw e;
  } finally {
    lap();
  }
}
