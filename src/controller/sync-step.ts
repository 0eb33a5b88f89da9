// One step of a sync (the rules are operation-machine.ts's nextSyncStep): plan it again from Git and
// the cluster with where it stood (sync/plan.ts), look once at what runs, then apply what may be
// applied now (group after group while each is done at once, as kinds without health are), and
// stop at the first wait. The step's results, message and progress are the operation's state until
// the next step; nothing here sleeps: Argo CD's pause after each wave but the last
// (delayBetweenSyncWaves, ARGOCD_SYNC_WAVE_DELAY) is a step that ends and a next one not before
// the pause is over (`progress.waveDelayUntil`), so that what was applied is not judged too soon.
import type { KubeObject, ResourceResult, SyncProgress } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import type { InventoryEntry, SyncOptions, SyncPlan, SyncResult, SyncTask } from '../sync/index.ts';
import {
  applyGroup,
  awaitsConfirmation,
  deleteHooks,
  failureMessage,
  isPending,
  isRunning,
  observe,
  planSync,
  waitingMessage,
} from '../sync/index.ts';
import { nextSyncStep } from './operation-machine.ts';
import type { SyncTaskView, SyncView } from './operation-machine.ts';

/** How soon a waiting sync takes its next step when nothing it waits for has changed (no watch). */
export const STEP_POLL_MS = 5000;

/** How long one wave (or the hooks of one phase) may take to become healthy, unless told. */
export const DEFAULT_WAIT_MS = 5 * 60_000;

/** gitops-engine's wave delay when ARGOCD_SYNC_WAVE_DELAY is not set. */
export const DEFAULT_WAVE_DELAY_MS = 2000;

/** Argo CD's operation message while a wave's tasks run (sync_context.go), and during the pause after. */
const TASKS_RUNNING = 'one or more tasks are running';

export interface StepInput {
  client: DestinationClient;
  desired: readonly KubeObject[];
  inventory: readonly InventoryEntry[];
  /** The sync's options; `prior` and `pruneWaves` say where it stood. */
  options: SyncOptions;
  progress: SyncProgress;
  waitTimeoutMs?: number | undefined;
  /** The pause after each applied group but the last (default DEFAULT_WAVE_DELAY_MS; 0: none). */
  waveDelayMs?: number | undefined;
  /** Checked before each group after the first (the ServiceAccount still exists): a message stops the sync. */
  beforeWave?: (() => Promise<string | null>) | undefined;
  now?: () => number;
}

export type StepOutcome =
  /** It waits: come back after `delayMs`, or when what it waits for changes. */
  | { kind: 'running'; message: string; resources: ResourceResult[]; progress: SyncProgress; delayMs: number }
  | { kind: 'done'; result: SyncResult }
  /** Its signal was aborted (terminated, or the controller is stopping). */
  | { kind: 'aborted' };

function stateOf(plan: SyncPlan, t: SyncTask): SyncTaskView['state'] {
  if (isPending(t)) return 'pending';
  if (isRunning(plan.ctx, t)) return 'running';
  return t.operationState === 'Failed' || t.operationState === 'Error' ? 'failed' : 'succeeded';
}

function viewOf(plan: SyncPlan, applyFailed: boolean, progress: SyncProgress, dryRun: boolean): SyncView {
  const view = (t: SyncTask): SyncTaskView => ({ group: t.group ?? 0, hook: t.hook, state: stateOf(plan, t) });
  return {
    tasks: plan.tasks.map((t) => ({ ...view(t), ...(awaitsConfirmation(plan, t) ? { unconfirmed: true } : {}) })),
    syncFail: plan.syncFail.map(view),
    groups: plan.groups,
    applyFailed,
    progress,
    dryRun,
  };
}

/** What a group waits for when its hooks' earlier runs are still being deleted (BeforeHookCreation). */
function deletingMessage(tasks: readonly SyncTask[]): string {
  const first = tasks[0]?.target;
  const more = tasks.length > 1 ? ` and ${tasks.length - 1} more hooks` : '';
  return `waiting for the earlier run of hook ${first ? `${first.kind}/${first.metadata.name}` : ''}${more} to be deleted`;
}

export async function syncStep(input: StepInput): Promise<StepOutcome> {
  const now = input.now ?? Date.now;
  const waitMs = input.waitTimeoutMs ?? DEFAULT_WAIT_MS;
  const { options } = input;
  const planned = await planSync(input.client, input.desired, input.inventory, {
    ...options,
    recreating: input.progress.recreating,
    now,
  });
  if (planned.kind === 'done') return planned;
  const plan = planned.plan;
  const { ctx } = plan;
  const dryRun = options.dryRun === true;
  const progress: SyncProgress = { ...input.progress, pruneWaves: plan.pruneWaves };
  const done = (phase: SyncResult['phase'], message: string): StepOutcome => ({
    kind: 'done',
    result: { phase, message, identity: plan.identity, resources: plan.results(), comparison: plan.comparison },
  });
  const running = (message: string, delayMs = STEP_POLL_MS): StepOutcome => {
    // The deletes of Replace/Force still to see go: a later step (or one after a restart) looks
    // for them instead of deleting again, and measures their timeout from when they were sent.
    const { recreating: _r, ...rest } = progress;
    return {
      kind: 'running',
      message,
      resources: plan.results(),
      progress: ctx.recreating.length > 0 ? { ...rest, recreating: ctx.recreating } : rest,
      delayMs,
    };
  };
  const last = plan.groups - 1;
  const waitedGroup = (g: number) => !dryRun && (g < last || plan.tasks.some((t) => t.group === g && t.hook));
  const waveDelayMs = dryRun ? 0 : (input.waveDelayMs ?? DEFAULT_WAVE_DELAY_MS);

  // The pause after the last group applied: nothing is looked at or applied before it is over.
  if (progress.waveDelayUntil !== undefined) {
    const left = Date.parse(progress.waveDelayUntil) - now();
    if (left > 0) return running(TASKS_RUNNING, left);
    delete progress.waveDelayUntil;
  }

  // Where the running tasks stand now.
  await observe(ctx, [...plan.tasks.filter((t) => waitedGroup(t.group ?? 0)), ...plan.syncFail]);
  let applyFailed = false;
  let startedBefore = (options.prior ?? []).length > 0;
  for (;;) {
    if (options.signal?.aborted) return { kind: 'aborted' };
    const step = nextSyncStep(viewOf(plan, applyFailed, progress, dryRun), now(), waitMs);
    switch (step.kind) {
      case 'apply': {
        if (startedBefore && input.beforeWave) {
          const stop = await input.beforeWave();
          if (stop !== null) return done('Failed', stop);
        }
        const group = plan.tasks.filter((t) => t.group === step.group);
        const applied = await applyGroup(ctx, group);
        startedBefore = true;
        if (!applied.ok) {
          applyFailed = true;
          continue;
        }
        progress.waitingSince = new Date(now()).toISOString();
        if (!applied.progressed) {
          const deleting = group.filter((t) => t.deleting);
          const hooks = deleting.filter((t) => t.hook);
          // Replace/Force: Argo CD's words for a task waiting on a deletion.
          if (hooks.length === 0) return running(waitingMessage(deleting, 'deletion of'));
          return running(
            `waiting for the earlier run of ${waitingMessage(hooks).replace(/^waiting for \S+ \S+ /, '')} to be deleted`,
          );
        }
        // Argo CD pauses after every wave but the last, its tasks applied: the next step comes after.
        if (waveDelayMs > 0 && step.group < last) {
          progress.waveDelayUntil = new Date(now() + waveDelayMs).toISOString();
          return running(TASKS_RUNNING, waveDelayMs);
        }
        // Kinds without health are done once applied: the next group may follow in this step.
        if (waitedGroup(step.group)) await observe(ctx, group);
        continue;
      }
      case 'hold':
        // Nothing of the group is done until the Application is approved; no wait timeout runs.
        return running(
          waitingMessage(
            step.unconfirmed.map((i) => plan.tasks[i] as SyncTask),
            'pruning confirmation of',
          ),
        );
      case 'wait': {
        const tasks = step.of === 'tasks' ? plan.tasks : plan.syncFail;
        return running(waitingMessage(step.running.map((i) => tasks[i] as SyncTask)));
      }
      case 'fail': {
        const what = step.timedOut
          ? `${step.what}, reason: timed out after ${Math.round(waitMs / 1000)}s ${waitingMessage(step.timedOut.map((i) => plan.tasks[i] as SyncTask))}`
          : step.what;
        const message = failureMessage(what, plan.tasks);
        await deleteHooks(ctx, plan.tasks, 'HookFailed');
        if (plan.syncFail.length === 0) return done('Failed', message);
        progress.failure = message;
        progress.waitingSince = new Date(now()).toISOString();
        continue;
      }
      case 'applySyncFail': {
        const applied = await applyGroup(ctx, plan.syncFail);
        if (!applied.progressed) return running(deletingMessage(plan.syncFail.filter((t) => t.deleting)));
        if (!dryRun) await observe(ctx, plan.syncFail);
        continue;
      }
      case 'failed': {
        // The operation failed, so only HookFailed applies, to these hooks too (as Argo CD).
        await deleteHooks(ctx, plan.syncFail, 'HookFailed');
        const failed = plan.syncFail.filter((t) => t.operationState !== 'Succeeded');
        const extra = failed.length ? `\n${failureMessage('one or more SyncFail hooks failed', failed)}` : '';
        return done('Failed', `${progress.failure ?? ''}${extra}`);
      }
      case 'succeed':
        await deleteHooks(ctx, plan.tasks, 'HookSucceeded');
        return done('Succeeded', 'successfully synced (all tasks run)');
    }
  }
}
