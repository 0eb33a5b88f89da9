// Argo CD's hook finalizer (gitops-engine pkg/sync/hook HookFinalizer, sync_context.go): every hook
// a sync creates carries `argocd.argoproj.io/hook-finalizer`, so that nothing (a Job's TTL, a
// namespace cleanup, a user) deletes it before the sync has seen how it ended; the sync removes it
// once the hook has completed, and from an earlier run's hook before that run is deleted or applied
// again. Requests go through the sync's one DestinationClient.
import type { KubeObject } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import { objectPath, refOf } from './util.ts';

export const HOOK_FINALIZER = 'argocd.argoproj.io/hook-finalizer';

function finalizersOf(o: KubeObject): string[] {
  const f = o.metadata['finalizers'];
  return Array.isArray(f) ? f.filter((x): x is string => typeof x === 'string') : [];
}

export function hasHookFinalizer(o: KubeObject | null | undefined): boolean {
  return o ? finalizersOf(o).includes(HOOK_FINALIZER) : false;
}

/** The hook as a sync creates it: with the hook finalizer (a copy; the object given is not changed). */
export function withHookFinalizer(hook: KubeObject): KubeObject {
  if (hasHookFinalizer(hook)) return hook;
  const copy = structuredClone(hook);
  copy.metadata['finalizers'] = [...finalizersOf(hook), HOOK_FINALIZER];
  return copy;
}

/**
 * Takes the hook finalizer off a live hook; the object as it is now (null when gone), or why it
 * failed. A JSON patch that tests the entry before removing it touches no other finalizer and
 * needs no resourceVersion; when the list moved under it, it reads the object again (gitops-engine
 * retries its update on conflict).
 */
export async function removeHookFinalizer(
  client: DestinationClient,
  live: KubeObject,
): Promise<{ ok: true; live: KubeObject | null } | { ok: false; error: string }> {
  let current: KubeObject | null = live;
  for (let attempt = 0; attempt < 3 && current; attempt++) {
    const at = finalizersOf(current).indexOf(HOOK_FINALIZER);
    if (at < 0) return { ok: true, live: current };
    const ref = refOf(current);
    const info = await client.resolve(ref.apiVersion, ref.kind);
    if (!info.ok) return { ok: false, error: info.error.message };
    const res = await client.request<KubeObject>({
      method: 'PATCH',
      path: objectPath(info.value, ref),
      body: [
        { op: 'test', path: `/metadata/finalizers/${at}`, value: HOOK_FINALIZER },
        { op: 'remove', path: `/metadata/finalizers/${at}` },
      ],
      contentType: 'application/json-patch+json',
    });
    if (res.ok) return { ok: true, live: res.value };
    if (res.error.code === 404) return { ok: true, live: null };
    if (res.error.code !== 422 && res.error.code !== 409) return { ok: false, error: res.error.message };
    const again = await client.get(ref);
    if (!again.ok) return { ok: false, error: again.error.message };
    current = again.value;
  }
  return current ? { ok: false, error: 'the finalizer list kept changing' } : { ok: true, live: null };
}
