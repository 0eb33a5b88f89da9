// Deleting an Application's resources for the resources finalizer, beside prune (tasks.ts) and
// through the one client built for the Application's identity: every object of its inventory
// (status.resources) that still carries its tracking id, namespaced objects first and Namespaces
// and cluster-scoped objects last.
import type { DestinationClient } from '../kube/types.ts';
import type { InventoryEntry } from './compare.ts';
import { trackedApp } from './tracking.ts';

export interface DeletionResult {
  ok: boolean;
  message: string;
  /** Objects still present (deletion accepted, finalizers or cascades running). */
  remaining: number;
}

/** Deletes what `inventory` lists and still carries `appName`'s tracking id. Never throws for API errors. */
export async function deleteResources(
  client: DestinationClient,
  inventory: readonly InventoryEntry[],
  appName: string,
): Promise<DeletionResult> {
  // Namespaced first: a Namespace deleted first would take the others with it, as the controller.
  const ordered = [...inventory].sort(
    (a, b) =>
      Number(!a.namespace) - Number(!b.namespace) || Number(a.kind === 'Namespace') - Number(b.kind === 'Namespace'),
  );
  const failures: string[] = [];
  let remaining = 0;
  for (const r of ordered) {
    const info = r.version
      ? await client.resolve(r.group ? `${r.group}/${r.version}` : r.version, r.kind)
      : await client.resolveGroupKind(r.group ?? '', r.kind);
    if (!info.ok) {
      if (info.error.code === 404) continue; // the kind is gone, so are its objects
      failures.push(`${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}: ${info.error.message}`);
      continue;
    }
    const ref = { apiVersion: info.value.apiVersion, kind: r.kind, name: r.name, namespace: r.namespace || undefined };
    const live = await client.get(ref);
    if (!live.ok) {
      failures.push(`${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}: ${live.error.message}`);
      continue;
    }
    if (!live.value || trackedApp(live.value) !== appName) continue; // gone, or not ours
    if ((live.value.metadata as { deletionTimestamp?: string }).deletionTimestamp) {
      remaining++;
      continue;
    }
    const del = await client.delete(ref, { propagationPolicy: 'Background' });
    if (!del.ok) failures.push(`${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}: ${del.error.message}`);
    else if (del.value === 'deleted') remaining++;
  }
  if (failures.length > 0)
    return { ok: false, message: `failed to delete resources: ${failures.join('; ')}`, remaining };
  return { ok: true, message: '', remaining };
}
