// The steps of a sync, as the controller takes them, one reconcile at a time (controller/
// sync-step.ts runs them; the rules of which comes next are controller/operation-machine.ts's):
// apply one (phase, wave) group of a plan (plan.ts) without waiting for it, look once at how its
// running tasks stand, delete hooks as their policies say. Nothing here waits for health: an
// operation comes back when its resources or hooks change. Every request goes through the one
// DestinationClient of the plan (ARCHITECTURE.md, the identity rule).
import { groupOf } from '../api/index.ts';
import { hookDeletePolicies } from './annotations.ts';
import { pruneNeedsConfirmation } from './options.ts';
import { taskObject } from './order.ts';
import type { SyncPlan } from './plan.ts';
import type { SyncTask, TaskContext } from './tasks.ts';
import { applyTask } from './apply.ts';
import { deleteOnce, isPrune, pruneTask, refreshRunning, setResult, waitForCrd } from './tasks.ts';
import { releaseHook } from './hook-tasks.ts';
import { mapLimit } from './util.ts';

export { planSync, taskContext, toResult } from './plan.ts';
export type { Planned, SyncOptions, SyncPlan, SyncResult } from './plan.ts';

const APPLY_CONCURRENCY = 8;
// A CRD just applied is Established within a second or two: its custom resources, later in the
// same group, wait that long at most (or are applied at a later step).
const CRD_WAIT_MS = 10_000;

/** Not started in this operation: no result yet, and no earlier run of it being deleted. */
export function isPending(t: SyncTask): boolean {
  return t.order === undefined;
}

export interface Applied {
  /** False when something failed to apply, prune or delete. */
  ok: boolean;
  /** Whether any task of the group got a result (one whose old object is still going does not). */
  progressed: boolean;
}

/**
 * The pending tasks of one group, as Argo CD applies a wave: prunes, then hooks whose earlier run
 * must go first (BeforeHookCreation: deleted now, created at a later step once gone), then applies
 * in runs of one kind (a CRD waited on until served, briefly; an object Replace/Force must delete
 * first: deleted now, created at a later step once gone).
 */
export async function applyGroup(ctx: TaskContext, group: readonly SyncTask[]): Promise<Applied> {
  const pending = group.filter(isPending);
  const prunes = pending.filter(isPrune);
  const creates = pending.filter((t) => !isPrune(t));
  // Results list tasks in the order they were started, not the order the server answered.
  const start = (tasks: SyncTask[]) => tasks.forEach((t) => (t.order ??= ctx.nextOrder()));
  start(prunes);
  const pruned = await mapLimit(prunes, APPLY_CONCURRENCY, (t) => pruneTask(ctx, t));
  if (pruned.includes(false)) return { ok: false, progressed: true };
  for (const t of creates) {
    // An earlier operation's run of the hook lets go of it first, so that it can be deleted or
    // applied again (gitops-engine: "remove finalizers from previous sync on existing hooks").
    if (t.hook && t.live && !(await releaseHook(ctx, t))) return { ok: false, progressed: true };
    if (!t.hook || !t.live || ctx.dryRun || !hookDeletePolicies(taskObject(t)).includes('BeforeHookCreation')) continue;
    const gone = await deleteOnce(ctx, t.live);
    if (typeof gone === 'object') {
      setResult(ctx, t, 'SyncFailed', 'Error', gone.error);
      return { ok: false, progressed: true };
    }
    if (gone === 'gone') t.live = null;
    else t.deleting = true;
  }
  const ready = creates.filter((t) => !t.deleting);
  let ok = true;
  for (let i = 0; i < ready.length;) {
    const kind = (ready[i] as SyncTask).target?.kind;
    let j = i;
    while (j < ready.length && (ready[j] as SyncTask).target?.kind === kind) j++;
    const run = ready.slice(i, j);
    start(run);
    const results = await mapLimit(run, APPLY_CONCURRENCY, (t) => applyTask(ctx, t));
    if (results.includes(false)) ok = false;
    // Replace/Force deleted its object to create it again, and it is not gone yet: not started
    // after all, created at a later step (deleteForRecreate).
    for (const t of run) if (t.deleting) t.order = undefined;
    if (!ctx.dryRun) {
      for (const t of run) {
        if (
          t.result === 'Synced' &&
          t.target?.kind === 'CustomResourceDefinition' &&
          groupOf(t.target.apiVersion) === 'apiextensions.k8s.io'
        ) {
          await waitForCrd(ctx, t.target, Date.now() + CRD_WAIT_MS);
        }
      }
    }
    i = j;
  }
  return { ok, progressed: prunes.length + ready.filter((t) => !t.deleting).length > 0 };
}

/**
 * Looks once at every running task of `tasks` (their live objects, their health); a hook of this
 * operation that has completed lets go of its finalizer (gitops-engine: hooksCompleted).
 */
export async function observe(ctx: TaskContext, tasks: readonly SyncTask[]): Promise<void> {
  await refreshRunning(ctx, tasks);
  for (const t of tasks)
    if (t.hook && t.order !== undefined && t.operationState !== 'Running') await releaseHook(ctx, t);
}

/**
 * Prune=confirm (annotation, or the Application's Prune=confirm): a prune not yet started that waits,
 * its whole group with it, until the Application is approved (gitops-engine's pruning confirmation).
 */
export function awaitsConfirmation(plan: SyncPlan, t: SyncTask): boolean {
  return (
    isPending(t) &&
    isPrune(t) &&
    plan.ctx.prune &&
    !plan.pruneConfirmed &&
    pruneNeedsConfirmation(t.live, plan.ctx.pruneDefault)
  );
}

/** Whether a task is still on its way: applied and not yet healthy, or pruned and not yet gone. */
export function isRunning(ctx: TaskContext, t: SyncTask): boolean {
  if (isPrune(t)) return t.result === 'Pruned' && !t.gone && !ctx.dryRun && t.live !== null;
  return t.operationState === 'Running';
}
