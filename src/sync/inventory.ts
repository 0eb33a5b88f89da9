// An Application's resources in the words of both sides, translated in one place: status.resources
// (api/status.ts) is what the last comparison found and the inventory that pruning and deletion rely
// on; InventoryEntry and ResourceComparison are what compare() and sync() read and return. Used by
// the controller's refresh and operations, `impersync diff` and deletion alike.
import type { Application, ResourceStatus } from '../api/index.ts';
import type { InventoryEntry, ResourceComparison } from './compare.ts';
import { keyOfEntry } from './compare.ts';
import { appInstanceName } from './tracking.ts';

/** What the Application's previous status.resources holds: the objects it may own. */
export function inventoryOf(app: Pick<Application, 'status'>): InventoryEntry[] {
  return (app.status?.resources ?? []).filter((r) => r.kind && r.name).map(entryOf);
}

/** A resource of status.resources or of a sync result as an inventory entry. */
function entryOf(r: Pick<ResourceStatus, 'kind' | 'name' | 'group' | 'namespace' | 'version'>): InventoryEntry {
  return {
    kind: r.kind,
    name: r.name,
    ...(r.group ? { group: r.group } : {}),
    ...(r.namespace ? { namespace: r.namespace } : {}),
    ...(r.version ? { version: r.version } : {}),
  };
}

/**
 * What deleting the Application may have to remove: the inventory, and what the last sync applied
 * (its syncResult, hooks aside), which a refresh may not yet have written into status.resources.
 * Argo CD finds them in its cluster cache by their tracking; deletion checks the tracking of each
 * before deleting it, so a candidate too many is harmless.
 */
export function deletionInventoryOf(app: Pick<Application, 'status'>): InventoryEntry[] {
  const out = inventoryOf(app);
  const seen = new Set(out.map(keyOfEntry));
  for (const r of app.status?.operationState?.syncResult?.resources ?? []) {
    if (r.hookType || r.status === 'Pruned' || !r.kind || !r.name) continue;
    const entry = entryOf(r);
    if (seen.has(keyOfEntry(entry))) continue;
    seen.add(keyOfEntry(entry));
    out.push(entry);
  }
  return out;
}

/**
 * Argo CD's status.resources entry of one compared object (no diff, no live object: status stays
 * small). A health with no status (a Lua check that returned nil) is written as none.
 */
export function resourceStatusOf(r: ResourceComparison): ResourceStatus {
  const health = r.health?.status
    ? { status: r.health.status, ...(r.health.message ? { message: r.health.message } : {}) }
    : undefined;
  return {
    group: r.group,
    version: r.version,
    kind: r.kind,
    ...(r.namespace ? { namespace: r.namespace } : {}),
    name: r.name,
    status: r.status,
    ...(health ? { health } : {}),
    ...(r.requiresPruning ? { requiresPruning: true } : {}),
    ...(r.requiresDeletionConfirmation ? { requiresDeletionConfirmation: true } : {}),
  };
}

/**
 * The two facts of an Application every comparison, sync and deletion needs: the name its objects'
 * tracking ids carry (appInstanceName) and the namespace objects without one are put in.
 */
export function trackingTarget(
  app: Pick<Application, 'metadata' | 'spec'>,
  controllerNamespace: string,
): { appName: string; namespace: string } {
  return { appName: appInstanceName(app, controllerNamespace), namespace: app.spec.destination?.namespace ?? '' };
}
