// The steps of a sync, one task at a time, all through the one DestinationClient: prune, delete a
// hook or what Replace/Force re-creates (without waiting for it to go), look at health, wait for a
// CRD to be served (the apply itself: apply.ts). Each step records its outcome on the task; none
// throws for an API error.
import type { HookPhase, KubeObject, ResultCode, SyncPhase, SyncStatusCode } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import type { DestinationClient, FieldValidation } from '../kube/types.ts';
import type { HealthAssessor } from './health/index.ts';
import { operationPhaseOf } from './hooks.ts';
import type { PropagationPolicy } from './options.ts';
import { pruneDisabled } from './options.ts';
import type { Orderable } from './order.ts';
import { taskObject } from './order.ts';
import { refOf, sleep } from './util.ts';

export interface SyncTask extends Orderable {
  hook: boolean;
  /** What the comparison said (for ApplyOutOfSyncOnly); absent for hooks. */
  comparison?: SyncStatusCode | undefined;
  result?: ResultCode;
  operationState?: HookPhase;
  message: string;
  /** Execution order, for the results list. */
  order?: number;
  /** A pruned object the server no longer has (until then, later waves wait, as Argo CD does). */
  gone?: boolean;
  /** When reads of this task's object started being refused (401/403), while waiting for its health. */
  refusedSince?: number;
  /** Its (phase, wave) group, in the order the sync runs them (plan.ts). */
  group?: number;
  /**
   * Its object is being deleted first, to be created at a later step once gone: a hook's earlier
   * run (BeforeHookCreation), or what Replace=true / Force=true re-creates.
   */
  deleting?: boolean;
}

/** A delete Replace=true / Force=true sent to create an object again (progress.recreating). */
export interface Recreating {
  /** The task (taskKey). */
  key: string;
  /** The deleted object's uid: an object of that name with another uid is the one made since. */
  uid: string;
  /** When the delete was sent (ISO 8601): the wait for the object to go counts from here. */
  since: string;
}

export interface TaskContext {
  client: DestinationClient;
  dryRun: boolean;
  prune: boolean;
  fieldManager: string;
  fieldValidation: FieldValidation | undefined;
  prunePropagationPolicy: PropagationPolicy;
  /** The Application's Prune= default (false, confirm) for objects without their own. */
  pruneDefault?: string | undefined;
  /** Replace=true / Force=true for every object (sync options, or the operation's syncStrategy force). */
  replace?: boolean;
  force?: boolean;
  /** Managers whose fields each apply takes over first (takeover.ts); none: no takeover. */
  takeover?: readonly string[] | undefined;
  pollMs: number;
  /** How a running task's live object is judged. */
  health: HealthAssessor;
  signal?: AbortSignal | undefined;
  nextOrder: () => number;
  /** The deletes of Replace=true / Force=true still to see go; updated by this step (deleteForRecreate). */
  recreating: Recreating[];
  /** The clock a delete's timeout is measured by (the operation's, so a test can move it). */
  now: () => number;
}

export function isPrune(t: SyncTask): boolean {
  return t.target === null;
}

export function setResult(
  ctx: TaskContext,
  t: SyncTask,
  result: ResultCode | undefined,
  state: HookPhase,
  message: string,
): void {
  if (result !== undefined) t.result = result;
  t.operationState = state;
  if (message !== '') t.message = message;
  t.order ??= ctx.nextOrder();
}

/** kubectl's way of naming what it applied: `deployment.apps/web`. */
export function kubectlName(o: KubeObject): string {
  const g = groupOf(o.apiVersion);
  return `${o.kind.toLowerCase()}${g ? `.${g}` : ''}/${o.metadata.name}`;
}

export async function pruneTask(ctx: TaskContext, t: SyncTask): Promise<boolean> {
  if (!ctx.prune) {
    setResult(ctx, t, 'PruneSkipped', 'Succeeded', 'ignored (requires pruning)');
  } else if (pruneDisabled(t.live, ctx.pruneDefault)) {
    setResult(ctx, t, 'PruneSkipped', 'Succeeded', 'ignored (no prune)');
  } else if (ctx.dryRun) {
    setResult(ctx, t, 'Pruned', 'Succeeded', 'pruned (dry run)');
  } else {
    const res = await ctx.client.delete(refOf(taskObject(t)), { propagationPolicy: ctx.prunePropagationPolicy });
    if (!res.ok) {
      setResult(ctx, t, 'SyncFailed', 'Failed', res.error.message);
      return false;
    }
    setResult(ctx, t, 'Pruned', 'Succeeded', 'pruned');
  }
  return true;
}

/** How long an object Replace=true / Force=true deleted may take to go, counted across steps. */
export const RECREATE_TIMEOUT_MS = 60_000;

/** What identifies a task across steps: its phase and its object (as its result does, plan.ts). */
export function taskKey(t: SyncTask): string {
  const o = taskObject(t);
  return `${t.phase}/${groupOf(o.apiVersion)}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** The delete an earlier step of this operation sent for this task, to create its object again. */
export function recreationOf(ctx: TaskContext, t: SyncTask): Recreating | undefined {
  const key = taskKey(t);
  return ctx.recreating.find((r) => r.key === key);
}

/** The task has its result: no delete of its to look for any more. */
export function forgetRecreation(ctx: TaskContext, t: SyncTask): void {
  const key = taskKey(t);
  const i = ctx.recreating.findIndex((r) => r.key === key);
  if (i >= 0) ctx.recreating.splice(i, 1);
}

/**
 * Replace=true / Force=true: deletes an object that must be created again, without waiting for it
 * to go. The delete is sent once (not at all when the object is being deleted already) and kept in
 * ctx.recreating (the operation's progress), so that later steps only look: 'gone' once the server
 * no longer has that object (t.live is then null, or the object made since, after a crash before
 * its result was written: it is not deleted again), 'deleting' until then, or why it failed,
 * RECREATE_TIMEOUT_MS after the delete was sent.
 */
export async function deleteForRecreate(
  ctx: TaskContext,
  t: SyncTask,
  live: KubeObject,
): Promise<'gone' | 'deleting' | { error: string }> {
  const ref = refOf(live);
  const uidOf = (o: KubeObject) => (typeof o.metadata['uid'] === 'string' ? o.metadata['uid'] : '');
  let rec = recreationOf(ctx, t);
  if (!rec) {
    if (!live.metadata['deletionTimestamp']) {
      const res = await ctx.client.delete(ref, { propagationPolicy: 'Foreground' });
      if (!res.ok && res.error.code !== 404) return { error: `failed to delete resource: ${res.error.message}` };
    }
    rec = { key: taskKey(t), uid: uidOf(live), since: new Date(ctx.now()).toISOString() };
    ctx.recreating.push(rec);
  }
  const { uid, since } = rec;
  const got = await ctx.client.get(ref);
  if (got.ok && (got.value === null || (uid !== '' && uidOf(got.value) !== uid))) {
    t.live = got.value;
    return 'gone';
  }
  // A read that fails now may succeed at the next step; the timeout bounds the looking.
  if (ctx.now() - Date.parse(since) >= RECREATE_TIMEOUT_MS)
    return {
      error: `timed out after ${RECREATE_TIMEOUT_MS / 1000}s waiting for ${kubectlName(live)} to be deleted${got.ok ? '' : `: ${got.error.message}`}`,
    };
  return 'deleting';
}

/**
 * Deletes an object (an earlier run of a hook, BeforeHookCreation) without waiting for it to go:
 * 'gone' when the server no longer has it, 'deleting' while it is being deleted, or why it failed.
 */
export async function deleteOnce(ctx: TaskContext, obj: KubeObject): Promise<'gone' | 'deleting' | { error: string }> {
  const ref = refOf(obj);
  const res = await ctx.client.delete(ref, { propagationPolicy: 'Foreground' });
  if (!res.ok && res.error.code !== 404) return { error: `failed to delete resource: ${res.error.message}` };
  const got = await ctx.client.get(ref);
  return got.ok && got.value === null ? 'gone' : 'deleting';
}

/** Argo CD's failure message: `<what>, reason: <messages of the failed tasks>`. */
export function failureMessage(what: string, tasks: readonly SyncTask[]): string {
  // Tasks in Error after a successful apply (the live object unreadable) say why too.
  const reasons = [
    ...new Set(
      tasks
        .filter((t) => (t.result === 'SyncFailed' || t.operationState === 'Error') && t.message)
        .map((t) => t.message),
    ),
  ];
  return reasons.length ? `${what}, reason: ${reasons.join(',')}` : what;
}

/** How long reads may be refused before the identity is taken to have lost its rights. */
const FORBIDDEN_GRACE_MS = 5_000;

/** Refreshes every running task from the server; true while any is still running or being deleted. */
export async function refreshRunning(ctx: TaskContext, tasks: readonly SyncTask[]): Promise<boolean> {
  let running = false;
  for (const t of tasks) {
    if (t.result === 'Pruned' && !t.gone && t.live && !ctx.dryRun) {
      const still = await ctx.client.get(refOf(t.live));
      if (still.ok && still.value === null) t.gone = true;
      else running = true;
      continue;
    }
    if (t.operationState !== 'Running' || !t.target) continue;
    const got = await ctx.client.get(refOf(t.target));
    if (!got.ok) {
      if (got.error.code === 401 || got.error.code === 403) {
        // The identity lost its right to read what it applied (RBAC revoked mid-sync): waiting
        // cannot help. The apply stays reported as done; the task ends in Error saying who was refused.
        // A refusal that lasts less than FORBIDDEN_GRACE_MS is waited out: an API server that has
        // just restarted refuses for a moment while its RBAC caches fill.
        t.refusedSince ??= Date.now();
        if (Date.now() - t.refusedSince >= FORBIDDEN_GRACE_MS) {
          setResult(ctx, t, undefined, 'Error', `Failed to get live resource: ${got.error.message}`);
          continue;
        }
        t.message = `Failed to get live resource: ${got.error.message}`;
        running = true;
        continue;
      }
      t.refusedSince = undefined;
      // A read that fails now may succeed at the next poll; the deadline bounds the waiting.
      t.message = `Failed to get live resource ${got.error.message}`;
      running = true;
      continue;
    }
    if (got.value === null) {
      const o = t.target;
      setResult(
        ctx,
        t,
        'SyncFailed',
        'Error',
        `Resource ${groupOf(o.apiVersion)}/${o.kind}/${o.metadata.name} is missing, it might have been deleted`,
      );
      continue;
    }
    t.refusedSince = undefined;
    t.live = got.value;
    const { phase, message } = operationPhaseOf(await ctx.health(got.value), got.value, t.hook);
    setResult(ctx, t, undefined, phase, message);
    if (phase === 'Running') running = true;
  }
  return running;
}

/**
 * A CRD just applied: wait until it is Established and its kind is served, so the custom resources
 * after it can be applied. Waiting ends at the deadline; the apply that follows then reports why.
 */
export async function waitForCrd(ctx: TaskContext, crd: KubeObject, deadline: number): Promise<void> {
  const spec = crd['spec'] as
    { group?: string; names?: { kind?: string }; versions?: Array<{ name?: string; served?: boolean }> } | undefined;
  const version = spec?.versions?.find((v) => v.served !== false)?.name;
  while (Date.now() < deadline && !ctx.signal?.aborted) {
    const got = await ctx.client.get(refOf(crd));
    const conditions =
      (
        (got.ok && got.value ? got.value['status'] : undefined) as
          { conditions?: Array<{ type?: string; status?: string }> } | undefined
      )?.conditions ?? [];
    if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) {
      if (!spec?.group || !spec.names?.kind || !version) return;
      const served = await ctx.client.resolve(`${spec.group}/${version}`, spec.names.kind);
      if (served.ok) return;
    }
    await sleep(ctx.pollMs, ctx.signal);
  }
}

/** Argo CD's words for what a sync is waiting on: `waiting for healthy state of apps/Deployment/web and 2 more resources`. */
export function waitingMessage(tasks: readonly SyncTask[], why?: string): string {
  if (tasks.length === 0) return '';
  const hooks = tasks.filter((t) => t.hook);
  const first = taskObject(hooks[0] ?? (tasks[0] as SyncTask));
  const reason =
    why ?? (tasks.every(isPrune) ? 'deletion of' : hooks.length ? 'completion of hook' : 'healthy state of');
  const type = tasks.length === hooks.length ? 'hooks' : 'resources';
  const more = tasks.length > 1 ? ` and ${tasks.length - 1} more ${type}` : '';
  return `waiting for ${reason} ${groupOf(first.apiVersion)}/${first.kind}/${first.metadata.name}${more}`;
}

export function hookTypeOf(t: SyncTask): SyncPhase | undefined {
  return t.hook ? t.phase : undefined;
}
