// What a sync does to its hooks besides applying them: takes Argo CD's hook finalizer off
// (hook-finalizer.ts) once one has completed, from an earlier run before it is deleted or applied
// again, and from all of them when the operation ends; and deletes them as their delete policy
// says. Through the sync's one DestinationClient; outcomes recorded on the task.
import type { KubeObject } from '../api/index.ts';
import { hookDeletePolicies } from './annotations.ts';
import { hasHookFinalizer, removeHookFinalizer } from './hook-finalizer.ts';
import { taskObject } from './order.ts';
import type { SyncTask, TaskContext } from './tasks.ts';
import { setResult } from './tasks.ts';
import { refOf } from './util.ts';

/**
 * Takes the hook finalizer off a hook task's live object (gitops-engine removeHookFinalizer); false,
 * with the task in Error, when that failed.
 */
export async function releaseHook(ctx: TaskContext, t: SyncTask): Promise<boolean> {
  if (ctx.dryRun || !t.hook || !hasHookFinalizer(t.live)) return true;
  const res = await removeHookFinalizer(ctx.client, t.live as KubeObject);
  if (res.ok) {
    t.live = res.live;
    return true;
  }
  setResult(ctx, t, undefined, 'Error', `Failed to remove hook finalizer: ${res.error}`);
  return false;
}

/** Hooks whose delete policy matches the outcome go away (`HookSucceeded` / `HookFailed`). */
export async function deleteHooks(
  ctx: TaskContext,
  tasks: readonly SyncTask[],
  policy: 'HookSucceeded' | 'HookFailed',
): Promise<void> {
  if (ctx.dryRun) return;
  // The operation ends here: no hook of it keeps the finalizer, running or not.
  for (const t of tasks) await releaseHook(ctx, t);
  for (const t of tasks) {
    if (!t.hook || !t.live || t.operationState === 'Running' || !hookDeletePolicies(taskObject(t)).includes(policy))
      continue;
    const res = await ctx.client.delete(refOf(t.live), { propagationPolicy: 'Foreground' });
    if (!res.ok) setResult(ctx, t, undefined, 'Error', `failed to delete resource: ${res.error.message}`);
  }
}
