// An operation (`operation.sync`, manual or automated) as a state machine, pure: from the
// Application as the API server has it now to the next step, and from how an attempt ended to what
// is written. The runner (operation.ts) only reads, writes and runs the sync these decide on.
//
// The crash-safety rules, each a branch of nextStep() or afterAttempt():
// - operationState is written Running (with startedAt and the Application's generation) before
//   anything touches the destination, so a crash at any later point leaves a Running state;
// - a Running state of the same operation is resumed (after a restart, or for the next retry):
//   applies are idempotent server-side applies, so running it again converges;
// - a completed state of the current generation whose `operation` is still set finished before a
//   crash that lost only the clearing: `operation` is cleared, the operation never run again
//   (setting or clearing `operation` bumps the generation, so a new operation, even an identical
//   one such as a self-heal, has a newer generation and starts afresh);
// - Terminating (`argocd app terminate-op`), or a Running state whose `operation` was removed,
//   finishes Failed without running;
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
  /** Running already: continue it. */
  | { kind: 'resume'; state: OperationState }
  /** A new operation: write this Running state, then run it. */
  | { kind: 'start'; state: OperationState };

export function nextStep(view: OperationView, now: string): Step {
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
  if (state?.phase === 'Running' && isDeepStrictEqual(state.operation, operation)) return { kind: 'resume', state };
  if (state?.phase === 'Terminating') return { kind: 'finish', state, end: TERMINATED };
  return {
    kind: 'start',
    state: {
      operation,
      phase: 'Running',
      message: 'Operation started',
      startedAt: now,
      retryCount: 0,
      ...(generation !== undefined ? { generation } : {}),
    },
  };
}

/** How one attempt at the sync ended, as the runner saw it. */
export type Attempt =
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
        return { kind: 'retry', state: { ...tried, retryCount: retries + 1, message }, delayMs };
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
  return {
    ...status,
    operationState: { ...state, phase: end.phase, message: end.message, finishedAt: now },
    conditions: mergeConditions(status.conditions, conditions, now),
    ...(history ? { history } : {}),
  };
}

/** Whether `current` (read after a conflicting write) is still this operation, unfinished. */
export function stillThisOperation(current: OperationState | undefined, state: OperationState): boolean {
  return current !== undefined && current.startedAt === state.startedAt && !isCompleted(current.phase);
}
