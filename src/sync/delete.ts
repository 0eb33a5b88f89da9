// Deleting an Application's resources for the resources finalizer, beside prune (tasks.ts) and
// through the one client built for the Application's identity, as Argo CD's
// finalizeApplicationDeletion (controller/appcontroller.go) does: every object of its inventory
// (status.resources) that its tracking still claims, except CRDs, objects saying Delete=false (or
// whose Application says so) and Helm's `resource-policy: keep`; the highest sync wave first, the
// next only once it is gone; nothing while an object marked Delete=confirm or Prune=confirm awaits
// the Application's deletion-approved annotation. Foreground propagation unless the finalizer is
// the `/background` variant.
import type { KubeObject } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import { waveOf } from './annotations.ts';
import type { InventoryEntry } from './compare.ts';
import type { PropagationPolicy } from './options.ts';
import { deletedWithApplication, requiresDeletionConfirmation } from './options.ts';
import type { TrackingConfig } from './tracking.ts';
import { DEFAULT_TRACKING, selfReferenced, trackedApp } from './tracking.ts';

export interface DeletionResult {
  ok: boolean;
  message: string;
  /** Objects still present (deletion accepted, finalizers or cascades running, later waves, confirmation). */
  remaining: number;
  /** Set while an object awaits deletion confirmation: Argo CD's log line, naming it. */
  waiting?: string;
}

export interface DeletionOptions {
  tracking?: TrackingConfig | undefined;
  /** Foreground (resources-finalizer.argocd.argoproj.io, /foreground) or Background (/background). */
  propagationPolicy?: PropagationPolicy | undefined;
  /** The Application's syncOptions: its Delete= and Prune= defaults. */
  appSyncOptions?: readonly string[] | undefined;
  /** The Application's deletion-approved annotation is at or after its deletionTimestamp. */
  approved?: boolean | undefined;
}

function describe(r: InventoryEntry): string {
  return `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
}

/** Deletes what `inventory` lists and `appName`'s tracking still claims. Never throws for API errors. */
export async function deleteResources(
  client: DestinationClient,
  inventory: readonly InventoryEntry[],
  appName: string,
  opts: DeletionOptions = {},
): Promise<DeletionResult> {
  const tracking = opts.tracking ?? DEFAULT_TRACKING;
  const deleteDefault = (opts.appSyncOptions ?? [])
    .map((o) => o.trim())
    .find((o) => o.startsWith('Delete='))
    ?.slice(7);
  const failures: string[] = [];
  const live: Array<{
    entry: InventoryEntry;
    obj: KubeObject;
    ref: { apiVersion: string; kind: string; name: string; namespace: string | undefined };
  }> = [];
  for (const r of inventory) {
    const info = r.version
      ? await client.resolve(r.group ? `${r.group}/${r.version}` : r.version, r.kind)
      : await client.resolveGroupKind(r.group ?? '', r.kind);
    if (!info.ok) {
      if (info.error.code === 404) continue; // the kind is gone, so are its objects
      failures.push(`${describe(r)}: ${info.error.message}`);
      continue;
    }
    const ref = { apiVersion: info.value.apiVersion, kind: r.kind, name: r.name, namespace: r.namespace || undefined };
    const got = await client.get(ref);
    if (!got.ok) {
      failures.push(`${describe(r)}: ${got.error.message}`);
      continue;
    }
    const obj = got.value;
    if (!obj || trackedApp(obj, tracking) !== appName || !selfReferenced(obj, tracking)) continue; // gone, or not ours
    if (!deletedWithApplication(obj, deleteDefault)) continue; // Delete=false, a CRD, or Helm's keep
    live.push({ entry: r, obj, ref });
  }
  if (failures.length > 0)
    return { ok: false, message: `failed to delete resources: ${failures.join('; ')}`, remaining: live.length };
  // Objects being deleted already are waited for before anything else (Argo CD).
  const deleting = live.filter((l) => (l.obj.metadata as { deletionTimestamp?: string }).deletionTimestamp);
  if (deleting.length > 0) return { ok: true, message: '', remaining: live.length };
  const unconfirmed = live.find((l) => requiresDeletionConfirmation(l.obj, opts.appSyncOptions));
  if (unconfirmed && !opts.approved)
    return {
      ok: true,
      message: '',
      remaining: live.length,
      waiting: `Resource ${describe(unconfirmed.entry)} requires manual confirmation to delete`,
    };
  if (live.length === 0) return { ok: true, message: '', remaining: 0 };
  // FilterObjectsForDeletion: only the highest wave now; namespaced objects before Namespaces and
  // cluster-scoped ones within it, so that a Namespace does not take the others with it.
  const top = Math.max(...live.map((l) => waveOf(l.obj)));
  const wave = live
    .filter((l) => waveOf(l.obj) === top)
    .sort(
      (a, b) =>
        Number(!a.entry.namespace) - Number(!b.entry.namespace) ||
        Number(a.entry.kind === 'Namespace') - Number(b.entry.kind === 'Namespace'),
    );
  for (const l of wave) {
    const del = await client.delete(l.ref, { propagationPolicy: opts.propagationPolicy ?? 'Foreground' });
    if (!del.ok) failures.push(`${describe(l.entry)}: ${del.error.message}`);
  }
  if (failures.length > 0)
    return { ok: false, message: `failed to delete resources: ${failures.join('; ')}`, remaining: live.length };
  return { ok: true, message: '', remaining: live.length };
}
