// PostDelete hooks (Argo CD's controller/hook.go and finalizeApplicationDeletion): an Application
// whose manifests hold objects annotated `argocd.argoproj.io/hook: PostDelete` (or Helm's
// `post-delete`) carries the finalizers `post-delete-finalizer.argocd.argoproj.io` and its
// `/cleanup` variant, set and removed by the refresh while it is not being deleted. Once it is
// deleted and its resources are gone, the hooks are created (with the Application's tracking), the
// deletion waits while any is Progressing, a Degraded one is deleted and fails the deletion with
// "PostDelete hook(s) failed: <ns>/<name>"; then the first finalizer goes. The cleanup step deletes
// the hooks whose delete policy says so (HookSucceeded when all are Healthy, HookFailed when one is
// Degraded) and waits for them to be gone before the `/cleanup` finalizer goes. All of it as the
// Application's identity, through its one client.
import type { KubeObject } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import type { HealthAssessor, TrackingConfig } from '../sync/index.ts';
import { withTrackingId } from '../sync/index.ts';
import { refOf } from '../sync/util.ts';
import { annotationCSV, ANNOTATION_HOOK, HELM_HOOK, hookDeletePolicies } from '../sync/annotations.ts';

export const POST_DELETE_FINALIZER = 'post-delete-finalizer.argocd.argoproj.io';
export const POST_DELETE_CLEANUP_FINALIZER = `${POST_DELETE_FINALIZER}/cleanup`;

export function isPostDeleteHook(obj: KubeObject): boolean {
  return (
    annotationCSV(obj, ANNOTATION_HOOK).includes('PostDelete') || annotationCSV(obj, HELM_HOOK).includes('post-delete')
  );
}

/**
 * The finalizers after a refresh that rendered `objects`, or undefined when they stay as they are
 * (Argo CD sets or removes both together, and only while the Application is not being deleted).
 */
export function postDeleteFinalizers(
  finalizers: readonly string[],
  objects: readonly KubeObject[],
): string[] | undefined {
  const wanted = objects.some(isPostDeleteHook);
  const has = finalizers.includes(POST_DELETE_FINALIZER);
  const hasCleanup = finalizers.includes(POST_DELETE_CLEANUP_FINALIZER);
  if (wanted === has && wanted === hasCleanup) return undefined;
  const rest = finalizers.filter((f) => f !== POST_DELETE_FINALIZER && f !== POST_DELETE_CLEANUP_FINALIZER);
  return wanted ? [...rest, POST_DELETE_FINALIZER, POST_DELETE_CLEANUP_FINALIZER] : rest;
}

export interface PostDeleteContext {
  client: DestinationClient;
  /** The rendered objects (the hooks among them are used). */
  objects: readonly KubeObject[];
  appName: string;
  destinationNamespace: string;
  tracking: TrackingConfig;
  health: HealthAssessor;
}

/** What one step did: finished, still waiting (with Argo CD's log line), or failed (the deletion error). */
export type HookStep = { done: true } | { done: false; waiting: string } | { done: false; error: string };

function hooksOf(ctx: PostDeleteContext): KubeObject[] {
  return ctx.objects.filter(isPostDeleteHook).map((o) => {
    const hook = structuredClone(o);
    if (!hook.metadata.namespace) hook.metadata.namespace = ctx.destinationNamespace;
    return withTrackingId(hook, ctx.appName, ctx.destinationNamespace, ctx.tracking);
  });
}

async function liveHooks(
  ctx: PostDeleteContext,
): Promise<{ error: string } | { live: Array<[KubeObject, KubeObject | null]> }> {
  const out: Array<[KubeObject, KubeObject | null]> = [];
  for (const hook of hooksOf(ctx)) {
    const got = await ctx.client.get(refOf(hook));
    if (!got.ok) return { error: got.error.message };
    out.push([hook, got.value]);
  }
  return { live: out };
}

function hookName(o: KubeObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** Argo CD's executeHooks for PostDelete: create the missing ones, then wait for them to complete. */
export async function runPostDeleteHooks(ctx: PostDeleteContext): Promise<HookStep> {
  const found = await liveHooks(ctx);
  if ('error' in found) return { done: false, error: found.error };
  let created = 0;
  for (const [hook, live] of found.live) {
    if (live) continue;
    const res = await ctx.client.create(hook);
    if (!res.ok && res.error.code !== 409) return { done: false, error: res.error.message };
    if (res.ok) created++;
  }
  if (created > 0) return { done: false, waiting: `Created ${created} PostDelete hooks` };
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
    return { done: false, error: `PostDelete hook(s) failed: ${failed.map(hookName).join(', ')}` };
  }
  if (progressing > 0) return { done: false, waiting: `Waiting for ${progressing} PostDelete hooks to complete` };
  return { done: true };
}

const RANK: Record<string, number> = { Healthy: 0, Suspended: 1, Progressing: 2, Missing: 3, Degraded: 4, Unknown: 5 };

/** Argo CD's cleanupHooks for PostDelete: delete the hooks their delete policy names, and wait until they are gone. */
export async function cleanupPostDeleteHooks(ctx: PostDeleteContext): Promise<HookStep> {
  const found = await liveHooks(ctx);
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
  if (pending > 0) return { done: false, waiting: `Waiting for ${pending} PostDelete hooks to be deleted` };
  return { done: true };
}
