// An operation (`operation.sync`, manual or automated) as a state machine, pure: from the
// Application as the API server has it now to the next step, from how a step ended to what is
// written, and, within a sync, which of its (phase, wave) groups comes next. The runners
// (operation.ts, sync-step.ts) only read, write and run what these decide.
//
// An operation advances step by step across reconciles, as Argo CD's does, and never holds a
// worker while it waits: a step applies what may be applied now (a wave, its hooks), writes where
// the sync stands (operationState: syncResult.resources, the message, `progress`) and ends; the
// next step comes when something it waits for changes (the live-object watches queue it) or after
// a poll interval, reads where it stood from that state, and goes on (nextSyncStep()).
//
// The crash-safety rules, each a branch of nextStep() or afterAttempt():
// - operationState is written Running (with startedAt and the Application's generation) before
//   anything touches the destination, so a crash at any later point leaves a Running state;
// - a Running state of the same operation is resumed (after a restart, or at its next step):
//   where it stood is in its state, and applies are idempotent server-side applies, so a step
//   taken again after a crash converges;
// - a failed attempt that may be retried stays Running with its finishedAt set (Argo CD's marker):
//   the retry begins, from scratch (its results and progress cleared), once its backoff is over,
//   after a restart too;
// - a completed state of the current generation whose `operation` is still set finished before a
//   crash that lost only the clearing: `operation` is cleared, the operation never run again
//   (setting or clearing `operation` bumps the generation, so a new operation, even an identical
//   one such as a self-heal, has a newer generation and starts afresh);
// - Terminating (`argocd app terminate-op`), or a Running state whose `operation` was removed,
//   finishes Failed without running;
// - a Running state older than the sync timeout (argocd-cmd-params-cm controller.sync.timeout.seconds)
//   is written Terminating with Argo CD's message, then finishes Failed as a terminated one does;
// - a controller that stops mid-sync leaves the state Running for the next one to resume;
// - a renderer that cannot be reached is not the Application's fault: the state stays Running,
//   its message says what it waits for (written only when that changes), and the attempt is made
//   again after RENDERER_RETRY_MS, with no retry counted;
// - a final write that conflicts is written again onto the newer object only while that object
//   still holds this operation unfinished (stillThisOperation), so a finished sync is never redone.
import { isDeepStrictEqual } from 'node:util';
import { CONDITION, isCompleted } from '../api/index.ts';
import type {
  AppCondition,
  ApplicationStatus,
  CompletedPhase,
  Operation,
  OperationState,
  SyncProgress,
  SyncResult,
} from '../api/index.ts';
import { appendHistory, mayRetry, retryDelayMs } from './operation-policy.ts';
import { mergeConditions } from './status.ts';

/** What the machine reads of an Application. */
export interface OperationView {
  operation: Operation | undefined;
  state: OperationState | undefined;
  generation: number | undefined;
}

/** How an operation ends: its final phase and message. */
export interface End {
  phase: CompletedPhase;
  message: string;
}

export const TERMINATED: End = { phase: 'Failed', message: 'Operation terminated' };

/** Argo CD's words (appcontroller.go processRequestedAppOperation) for a sync past its timeout. */
export const SYNC_TIMEOUT_TERMINATING = 'operation is terminating due to timeout';
const SYNC_TIMEOUT_CAUSE = 'controller sync timeout';

/** How soon an attempt that could not reach the renderer is made again. */
export const RENDERER_RETRY_MS = 5000;
/** How soon a held operation (sync window, pruning confirmation) is tried again. */
export const HELD_RETRY_MS = 5000;

export type Step =
  /** No operation and nothing left Running. */
  | { kind: 'none' }
  /** It finished before a restart; only clearing `operation` was lost. */
  | { kind: 'clear' }
  /** Terminated (or its `operation` removed) while Running: finish without running. */
  | { kind: 'finish'; state: OperationState; end: End }
  /** Running already: take its next step (a retry that is due: its first, from scratch). */
  | { kind: 'resume'; state: OperationState }
  /** A retry is owed but its backoff is not over: come back then. */
  | { kind: 'wait'; delayMs: number }
  /** A new operation: write this Running state, then run it. */
  | { kind: 'start'; state: OperationState }
  /** Past the sync timeout: write this Terminating state, then finish with `end`. */
  | { kind: 'timeout'; state: OperationState; end: End };

export function nextStep(view: OperationView, now: string, syncTimeoutMs = 0): Step {
  const { operation, state, generation } = view;
  if (!operation) {
    const left = state?.phase === 'Running' || state?.phase === 'Terminating';
    return left ? { kind: 'finish', state, end: TERMINATED } : { kind: 'none' };
  }
  if (
    state &&
    isCompleted(state.phase) &&
    state.finishedAt &&
    state.generation !== undefined &&
    state.generation === generation
  )
    return { kind: 'clear' };
  if (state?.phase === 'Running' && isDeepStrictEqual(state.operation, operation)) {
    // Before a retry's wait too, as Argo CD checks it: the timeout counts from the operation's start.
    if (syncTimeoutMs > 0 && Date.parse(now) > Date.parse(state.startedAt) + syncTimeoutMs) {
      const retried = (state.retryCount ?? 0) > 0 ? ` (retried ${state.retryCount} times).` : '';
      return {
        kind: 'timeout',
        state: { ...state, phase: 'Terminating', message: SYNC_TIMEOUT_TERMINATING },
        end: { phase: 'Failed', message: `${TERMINATED.message}, triggered by ${SYNC_TIMEOUT_CAUSE}${retried}` },
      };
    }
    if (state.finishedAt === undefined) return { kind: 'resume', state };
    // A failed attempt owes a retry: once its backoff is over, the next attempt starts afresh.
    const due = Date.parse(state.finishedAt) + retryDelayMs(operation.retry, Math.max(0, (state.retryCount ?? 1) - 1));
    const wait = due - Date.parse(now);
    if (wait > 0) return { kind: 'wait', delayMs: wait };
    const { finishedAt: _f, syncResult: _r, progress: _p, ...fresh } = state;
    return { kind: 'resume', state: fresh };
  }
  if (state?.phase === 'Terminating') return { kind: 'finish', state, end: TERMINATED };
  return { kind: 'start', state: startedState(operation, now, generation) };
}

/** The Running state a new operation is written with before anything touches the destination. */
export function startedState(operation: Operation, now: string, generation: number | undefined): OperationState {
  return {
    operation,
    phase: 'Running',
    message: 'Operation started',
    startedAt: now,
    retryCount: 0,
    ...(generation !== undefined ? { generation } : {}),
  };
}

/** How one step of the sync ended, as the runner saw it. */
export type Attempt =
  /** The sync goes on: it waits for what it applied (or could not apply yet); come back. */
  | { kind: 'running'; message: string; syncResult: SyncResult; progress: SyncProgress; delayMs: number }
  | { kind: 'succeeded'; revision: string; message: string; syncResult: SyncResult }
  | {
      kind: 'failed';
      phase: Extract<CompletedPhase, 'Failed' | 'Error'>;
      message: string;
      /** syncPolicy.retry / operation.retry may try again (a render, a missing ServiceAccount, a failed sync). */
      retryable: boolean;
      syncResult?: SyncResult;
      /** Conditions to record with the failure (the identity's, when spec §5 refused it). */
      conditions?: AppCondition[];
    }
  /** The renderer could not be reached (SourceError RendererUnavailable): try again shortly. */
  | { kind: 'renderer-unavailable'; message: string }
  /**
   * The operation is held, still Running with this message, and is tried again shortly: by a sync
   * window ("Sync operation blocked by sync window") or a prune awaiting confirmation.
   */
  | { kind: 'held'; message: string; syncResult?: SyncResult }
  /** Aborted by a Terminating write: finish from the Application as it is now. */
  | { kind: 'terminated' }
  /** The controller is stopping: leave it Running for the next one. */
  | { kind: 'abandoned' };

export type AfterAttempt =
  | { kind: 'leave' }
  /** Still Running, at its next step later (or when what it waits for changes); `write`: its state changed. */
  | { kind: 'continue'; state: OperationState; write: boolean; delayMs: number }
  | { kind: 'retry'; state: OperationState; delayMs: number }
  /** Still Running, waiting for the renderer; `write`: the state's message changed. */
  | { kind: 'wait'; state: OperationState; write: boolean; delayMs: number }
  | {
      kind: 'finish';
      state: OperationState;
      end: End;
      conditions: AppCondition[];
      /** The commit synced, for the history and the event. */
      revision?: string;
      /** Read the Application again first: the write that ended the attempt changed it. */
      reread: boolean;
    };

export function afterAttempt(state: OperationState, attempt: Attempt, nowMs: number): AfterAttempt {
  switch (attempt.kind) {
    case 'abandoned':
      return { kind: 'leave' };
    case 'running': {
      const next: OperationState = {
        ...state,
        message: attempt.message,
        syncResult: attempt.syncResult,
        progress: attempt.progress,
      };
      return { kind: 'continue', state: next, write: !isDeepStrictEqual(next, state), delayMs: attempt.delayMs };
    }
    case 'terminated':
      return { kind: 'finish', state, end: TERMINATED, conditions: [], reread: true };
    case 'renderer-unavailable': {
      const message = `waiting for the renderer: ${attempt.message}`;
      return {
        kind: 'wait',
        state: { ...state, message },
        write: state.message !== message,
        delayMs: RENDERER_RETRY_MS,
      };
    }
    case 'held': {
      const next = {
        ...state,
        message: attempt.message,
        ...(attempt.syncResult ? { syncResult: attempt.syncResult } : {}),
      };
      return { kind: 'wait', state: next, write: !isDeepStrictEqual(next, state), delayMs: HELD_RETRY_MS };
    }
    case 'succeeded':
      return {
        kind: 'finish',
        state: { ...state, syncResult: attempt.syncResult },
        end: { phase: 'Succeeded', message: attempt.message },
        conditions: [],
        revision: attempt.revision,
        reread: false,
      };
    case 'failed': {
      const tried: OperationState = attempt.syncResult ? { ...state, syncResult: attempt.syncResult } : state;
      const retries = state.retryCount ?? 0;
      if (attempt.retryable && mayRetry(state.operation.retry, retries)) {
        const delayMs = retryDelayMs(state.operation.retry, retries);
        const at = new Date(nowMs + delayMs).toISOString();
        const message = `${attempt.message}. Retrying attempt #${retries + 1} at ${at}.`;
        // finishedAt on a Running state: this attempt is over, the next is owed (nextStep).
        const { progress: _p, ...rest } = tried;
        const finishedAt = new Date(nowMs).toISOString();
        return { kind: 'retry', state: { ...rest, retryCount: retries + 1, message, finishedAt }, delayMs };
      }
      const end: End = { phase: attempt.phase, message: attempt.message };
      return { kind: 'finish', state: tried, end, conditions: attempt.conditions ?? [], reread: false };
    }
  }
}

/**
 * The status an operation ends with: the final operationState; on success the history entry (not
 * for a dry run); on failure a SyncError condition, with `conditions` replacing those of their types.
 */
export function finishedStatus(
  status: ApplicationStatus,
  state: OperationState,
  end: End,
  opts: { conditions?: AppCondition[]; revision?: string | undefined; now: string; historyLimit?: number | undefined },
): ApplicationStatus {
  const { now } = opts;
  const extra = opts.conditions ?? [];
  let history = status.history;
  if (end.phase === 'Succeeded' && opts.revision !== undefined && !state.operation.sync?.dryRun) {
    const r = state.syncResult;
    history = appendHistory(
      history,
      {
        ...(r?.revisions
          ? { revisions: r.revisions, sources: r.sources }
          : { revision: opts.revision, source: r?.source }),
        deployedAt: now,
        deployStartedAt: state.startedAt,
        initiatedBy: state.operation.initiatedBy,
        ...(r?.identity !== undefined ? { identity: r.identity } : {}),
      },
      opts.historyLimit,
    );
  }
  const others = (status.conditions ?? []).filter(
    (c) => c.type !== CONDITION.SyncError && !extra.some((e) => e.type === c.type),
  );
  const conditions =
    end.phase === 'Succeeded' ? others : [{ type: CONDITION.SyncError, message: end.message }, ...extra, ...others];
  const { progress: _progress, ...ended } = state;
  const reconciledAt = state.operation.sync?.dryRun ? status.reconciledAt : comparedBefore(status.reconciledAt, now);
  return {
    ...status,
    ...(reconciledAt !== undefined ? { reconciledAt } : {}),
    operationState: { ...ended, phase: end.phase, message: end.message, finishedAt: now },
    conditions: mergeConditions(status.conditions, conditions, now),
    ...(history ? { history } : {}),
  };
}

/**
 * The reconciledAt an operation's final write keeps. The comparison the status holds was made before
 * the operation ended, and Argo CD's clients see both times at the second (its API drops the
 * fraction): `argocd app sync` waits for a reconciledAt not before finishedAt, the comparison after
 * the sync. A comparison made earlier in the same second would look like that one, and the CLI
 * would print the resources as they were before the sync; it is shown a second earlier instead.
 */
export function comparedBefore(reconciledAt: string | undefined, finishedAt: string): string | undefined {
  const at = reconciledAt === undefined ? NaN : Date.parse(reconciledAt);
  const end = Math.floor(Date.parse(finishedAt) / 1000);
  if (Number.isNaN(at) || Number.isNaN(end) || Math.floor(at / 1000) < end) return reconciledAt;
  return new Date((end - 1) * 1000).toISOString();
}

/** Whether `current` (read after a conflicting write) is still this operation, unfinished. */
export function stillThisOperation(current: OperationState | undefined, state: OperationState): boolean {
  return current !== undefined && current.startedAt === state.startedAt && !isCompleted(current.phase);
}

/** One task of a sync as nextSyncStep() sees it. */
export interface SyncTaskView {
  /** Its (phase, wave) group, in the order a sync runs them (0 first). */
  group: number;
  hook: boolean;
  /** pending: not started in this attempt; running: applied, not yet healthy (or pruned, not yet gone). */
  state: 'pending' | 'running' | 'succeeded' | 'failed';
  /** A pending prune that waits for the Application's deletion-approved annotation (Prune=confirm). */
  unconfirmed?: boolean;
}

/** Where a sync stands at a step: its tasks and SyncFail hooks, and what the last steps recorded. */
export interface SyncView {
  tasks: readonly SyncTaskView[];
  syncFail: readonly SyncTaskView[];
  /** How many groups `tasks` has. */
  groups: number;
  /** Something this step applied, pruned or deleted failed. */
  applyFailed: boolean;
  progress: SyncProgress;
  dryRun: boolean;
}

/** What a sync does next (the runner, sync-step.ts, does it and asks again until it waits or ends). */
export type SyncStep =
  /** Apply the pending tasks of this group (the ServiceAccount checked first when a group came before). */
  | { kind: 'apply'; group: number }
  /**
   * The next group holds a prune awaiting confirmation (Prune=confirm): nothing of it is done, the
   * operation stays Running until the Application is approved (these indices into `tasks`).
   */
  | { kind: 'hold'; unconfirmed: number[] }
  /** Wait for these tasks (indices into `tasks`, or into `syncFail` once failing). */
  | { kind: 'wait'; running: number[]; of: 'tasks' | 'syncFail' }
  /** Failing: apply the SyncFail hooks not yet started. */
  | { kind: 'applySyncFail' }
  /**
   * The sync failed (`timedOut`: these tasks did not finish in time): hooks go by HookFailed, and
   * its SyncFail hooks run, or it ends Failed when it has none.
   */
  | { kind: 'fail'; what: string; timedOut?: number[] }
  /** Failing, and its SyncFail hooks are done (`timedOut`: these did not finish in time): end Failed. */
  | { kind: 'failed'; timedOut?: number[] }
  /** Every task done: hooks go by HookSucceeded, and the operation ends Succeeded. */
  | { kind: 'succeed' };

const indices = (tasks: readonly SyncTaskView[], keep: (t: SyncTaskView) => boolean): number[] =>
  tasks.flatMap((t, i) => (keep(t) ? [i] : []));

/**
 * The rules of one sync across its steps, as Argo CD's sync context holds them: groups one after
 * another; a group's tasks waited for until they are done, except in the last group when it has no
 * hooks (a plain apply succeeds at once, as `kubectl apply` would), and never in a dry run; a wait
 * longer than `waitTimeoutMs` fails the sync; any task that failed fails it, once nothing runs;
 * a failed sync runs its SyncFail hooks, waits for them, and ends Failed.
 */
export function nextSyncStep(view: SyncView, nowMs: number, waitTimeoutMs: number): SyncStep {
  const since = view.progress.waitingSince === undefined ? nowMs : Date.parse(view.progress.waitingSince);
  const late = nowMs - since >= waitTimeoutMs;
  if (view.progress.failure !== undefined) {
    if (view.syncFail.some((t) => t.state === 'pending')) return { kind: 'applySyncFail' };
    const running = indices(view.syncFail, (t) => t.state === 'running');
    if (running.length > 0)
      return late ? { kind: 'failed', timedOut: running } : { kind: 'wait', running, of: 'syncFail' };
    return { kind: 'failed' };
  }
  if (view.applyFailed) return { kind: 'fail', what: 'one or more objects failed to apply' };
  const last = view.groups - 1;
  const lastHasHooks = view.tasks.some((t) => t.group === last && t.hook);
  const waited = (t: SyncTaskView) => !view.dryRun && (t.group < last || lastHasHooks);
  const running = indices(view.tasks, (t) => t.state === 'running' && waited(t));
  if (running.length > 0)
    return late
      ? { kind: 'fail', what: 'one or more synchronization tasks completed unsuccessfully', timedOut: running }
      : { kind: 'wait', running, of: 'tasks' };
  // A task of the last group, when that group is not waited for, is done once applied (as today).
  if (view.tasks.some((t) => t.state === 'failed' && waited(t)))
    return { kind: 'fail', what: 'one or more synchronization tasks completed unsuccessfully' };
  const next = view.tasks.find((t) => t.state === 'pending');
  if (next) {
    const unconfirmed = indices(view.tasks, (t) => t.group === next.group && t.unconfirmed === true);
    if (unconfirmed.length > 0) return { kind: 'hold', unconfirmed };
    return { kind: 'apply', group: next.group };
  }
  return { kind: 'succeed' };
}
