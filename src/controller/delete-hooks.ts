// PreDelete and PostDelete hooks (Argo CD's controller/hook.go, executeHooks and cleanupHooks, and
// finalizeApplicationDeletion): an Application whose manifests hold objects annotated
// `argocd.argoproj.io/hook: PreDelete` (Helm's `pre-delete`) or `PostDelete` (`post-delete`)
// carries that type's finalizer, `pre-delete-finalizer.argocd.argoproj.io` or
// `post-delete-finalizer.argocd.argoproj.io`, and its `/cleanup` variant, set and removed by the
// refresh while it is not being deleted. Once it is deleted (PreDelete: before any resource is;
// PostDelete: once they are gone), the hooks are created (with the Application's tracking), the
// deletion waits while any is Progressing, a Degraded one is deleted and fails the deletion with
// "<type> hook(s) failed: <ns>/<name>"; then the first finalizer goes. The cleanup step deletes the
// hooks whose delete policy says so (HookSucceeded when all are Healthy, HookFailed when one is
// Degraded) and waits for them to be gone before the `/cleanup` finalizer goes. All of it as the
// Application's identity, through its one client.
import type { KubeObject } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import type { HealthAssessor, TrackingConfig } from '../sync/index.ts';
import { withTrackingId } from '../sync/index.ts';
import { refOf } from '../sync/util.ts';
import { annotationCSV, ANNOTATION_HOOK, HELM_HOOK, hookDeletePolicies } from '../sync/annotations.ts';

export type DeleteHookType = 'PreDelete' | 'PostDelete';

export const PRE_DELETE_FINALIZER = 'pre-delete-finalizer.argocd.argoproj.io';
export const PRE_DELETE_CLEANUP_FINALIZER = `${PRE_DELETE_FINALIZER}/cleanup`;
export const POST_DELETE_FINALIZER = 'post-delete-finalizer.argocd.argoproj.io';
export const POST_DELETE_CLEANUP_FINALIZER = `${POST_DELETE_FINALIZER}/cleanup`;

/** Each type's annotation values (Argo CD's hookTypeAnnotations) and its two finalizers. */
const TYPES: Record<DeleteHookType, { argo: string; helm: string; finalizer: string; cleanup: string }> = {
  PreDelete: {
    argo: 'PreDelete',
    helm: 'pre-delete',
    finalizer: PRE_DELETE_FINALIZER,
    cleanup: PRE_DELETE_CLEANUP_FINALIZER,
  },
  PostDelete: {
    argo: 'PostDelete',
    helm: 'post-delete',
    finalizer: POST_DELETE_FINALIZER,
    cleanup: POST_DELETE_CLEANUP_FINALIZER,
  },
};

/** Argo CD's isHookOfType: either annotation names the type (unlike sync hooks, Helm's counts beside Argo CD's). */
export function isDeleteHook(obj: KubeObject, type: DeleteHookType): boolean {
  const t = TYPES[type];
  return annotationCSV(obj, ANNOTATION_HOOK).includes(t.argo) || annotationCSV(obj, HELM_HOOK).includes(t.helm);
}

export function isPreDeleteHook(obj: KubeObject): boolean {
  return isDeleteHook(obj, 'PreDelete');
}

export function isPostDeleteHook(obj: KubeObject): boolean {
  return isDeleteHook(obj, 'PostDelete');
}

/**
 * The finalizers after a refresh that rendered `objects`, or undefined when they stay as they are.
 * Argo CD sets or removes a type's two finalizers together (PreDelete's, then PostDelete's), and
 * only while the Application is not being deleted (the caller's check).
 */
export function deleteHookFinalizers(
  finalizers: readonly string[],
  objects: readonly KubeObject[],
): string[] | undefined {
  let out = [...finalizers];
  let changed = false;
  for (const type of ['PreDelete', 'PostDelete'] as const) {
    const { finalizer, cleanup } = TYPES[type];
    const wanted = objects.some((o) => isDeleteHook(o, type));
    if (wanted === out.includes(finalizer) && wanted === out.includes(cleanup)) continue;
    changed = true;
    out = out.filter((f) => f !== finalizer && f !== cleanup);
    if (wanted) out.push(finalizer, cleanup);
  }
  return changed ? out : undefined;
}

export interface DeleteHookContext {
  client: DestinationClient;
  /** The rendered objects (the hooks of the type among them are used). */
  objects: readonly KubeObject[];
  appName: string;
  destinationNamespace: string;
  tracking: TrackingConfig;
  health: HealthAssessor;
}

/** What one step did: finished, still waiting (with Argo CD's log line), or failed (the deletion error). */
export type HookStep = { done: true } | { done: false; waiting: string } | { done: false; error: string };

function hooksOf(type: DeleteHookType, ctx: DeleteHookContext): KubeObject[] {
  return ctx.objects
    .filter((o) => isDeleteHook(o, type))
    .map((o) => {
      const hook = structuredClone(o);
      if (!hook.metadata.namespace) hook.metadata.namespace = ctx.destinationNamespace;
      return withTrackingId(hook, ctx.appName, ctx.destinationNamespace, ctx.tracking);
    });
}

async function liveHooks(
  type: DeleteHookType,
  ctx: DeleteHookContext,
): Promise<{ error: string } | { live: Array<[KubeObject, KubeObject | null]> }> {
  const out: Array<[KubeObject, KubeObject | null]> = [];
  for (const hook of hooksOf(type, ctx)) {
    const got = await ctx.client.get(refOf(hook));
    if (!got.ok) return { error: got.error.message };
    out.push([hook, got.value]);
  }
  return { live: out };
}

function hookName(o: KubeObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** Argo CD's executeHooks: create the missing hooks of `type`, then wait for them to complete. */
export async function runDeleteHooks(type: DeleteHookType, ctx: DeleteHookContext): Promise<HookStep> {
  const found = await liveHooks(type, ctx);
  if ('error' in found) return { done: false, error: found.error };
  let created = 0;
  for (const [hook, live] of found.live) {
    if (live) continue;
    const res = await ctx.client.create(hook);
    if (!res.ok && res.error.code !== 409) return { done: false, error: res.error.message };
    if (res.ok) created++;
  }
  if (created > 0) return { done: false, waiting: `Created ${created} ${type} hooks` };
  let progressing = 0;
  const failed: KubeObject[] = [];
  for (const [, live] of found.live) {
    if (!live) continue;
    // No health check: healthy (Argo CD: "No health check defined for resource, considering it healthy").
    const status = (await ctx.health(live))?.status ?? 'Healthy';
    if (status === 'Progressing') progressing++;
    else if (status === 'Degraded') failed.push(live);
  }
  if (failed.length > 0) {
    // Deleted so that the next attempt creates them again, perhaps fixed in Git.
    for (const f of failed) await ctx.client.delete(refOf(f));
    return { done: false, error: `${type} hook(s) failed: ${failed.map(hookName).join(', ')}` };
  }
  if (progressing > 0) return { done: false, waiting: `Waiting for ${progressing} ${type} hooks to complete` };
  return { done: true };
}

const RANK: Record<string, number> = { Healthy: 0, Suspended: 1, Progressing: 2, Missing: 3, Degraded: 4, Unknown: 5 };

/** Argo CD's cleanupHooks: delete the hooks of `type` their delete policy names, and wait until they are gone. */
export async function cleanupDeleteHooks(type: DeleteHookType, ctx: DeleteHookContext): Promise<HookStep> {
  const found = await liveHooks(type, ctx);
  if ('error' in found) return { done: false, error: found.error };
  const live = found.live.flatMap(([, l]) => (l ? [l] : []));
  let aggregated = 'Healthy';
  for (const l of live) {
    const status = (await ctx.health(l))?.status ?? 'Healthy';
    if ((RANK[status] ?? 0) > (RANK[aggregated] ?? 0)) aggregated = status;
  }
  let pending = 0;
  for (const l of live) {
    const policies = hookDeletePolicies(l);
    const remove =
      (policies.includes('HookSucceeded') && aggregated === 'Healthy') ||
      (policies.includes('HookFailed') && aggregated === 'Degraded');
    if (!remove) continue;
    pending++;
    if (l.metadata['deletionTimestamp']) continue;
    const res = await ctx.client.delete(refOf(l));
    if (!res.ok) return { done: false, error: res.error.message };
  }
  if (pending > 0) return { done: false, waiting: `Waiting for ${pending} ${type} hooks to be deleted` };
  return { done: true };
}
