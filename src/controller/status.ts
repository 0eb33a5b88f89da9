// The rule for writing an Application's status, and its conditions (the shapes are api/status.ts;
// the writes themselves applications.ts).
//
// Write rule (no update loops): the status subresource is written when anything other than
// `reconciledAt` changed, or when the stored `reconciledAt` is older than the refresh interval
// (so a periodic refresh is visible about once per interval, as in Argo CD). A write produces a
// watch event, but status-only changes of an Application do not requeue it (see manager.ts), and
// the next reconcile computes the same status, so a write never causes another.
import { isDeepStrictEqual } from 'node:util';
import { isCompleted } from '../api/index.ts';
import type { AppCondition, ApplicationStatus } from '../api/index.ts';

/**
 * Builds the next condition list: a condition whose type and message are unchanged keeps its
 * lastTransitionTime; any other gets `now`. Order follows `next`.
 */
export function mergeConditions(prev: AppCondition[] | undefined, next: AppCondition[], now: string): AppCondition[] {
  return next.map((c) => {
    const old = (prev ?? []).find((p) => p.type === c.type && p.message === c.message);
    return { type: c.type, message: c.message, lastTransitionTime: old?.lastTransitionTime ?? now };
  });
}

/**
 * status.health.lastTransitionTime as Argo CD's persistAppStatus sets it: `now` when the health
 * status code changed from the stored status, else the stored time (absent stays absent). Resources'
 * health (status.resources[].health) has no time: Argo CD writes only status and message there.
 */
export function withHealthTransition(
  prev: ApplicationStatus | undefined,
  next: ApplicationStatus,
  now: string,
): ApplicationStatus {
  if (!next.health) return next;
  const { lastTransitionTime: _dropped, ...health } = next.health;
  const at = prev?.health?.status === health.status ? prev.health.lastTransitionTime : now;
  return { ...next, health: { ...health, ...(at ? { lastTransitionTime: at } : {}) } };
}

function withoutReconciledAt(s: ApplicationStatus | undefined): Record<string, unknown> {
  const { reconciledAt: _r, ...rest } = s ?? {};
  // Absent and undefined fields are the same thing once serialized.
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
}

/** True when anything but reconciledAt differs. */
export function statusChanged(prev: ApplicationStatus | undefined, next: ApplicationStatus): boolean {
  return !isDeepStrictEqual(withoutReconciledAt(prev), withoutReconciledAt(next));
}

/** The write rule described at the top of this file. */
export function shouldWriteStatus(
  prev: ApplicationStatus | undefined,
  next: ApplicationStatus,
  nowMs: number,
  refreshIntervalMs: number,
): boolean {
  if (statusChanged(prev, next)) return true;
  const at = prev?.reconciledAt ? Date.parse(prev.reconciledAt) : NaN;
  return Number.isNaN(at) || nowMs - at >= refreshIntervalMs;
}

/**
 * An operation ended after the comparison the status holds (reconciledAt before finishedAt): the
 * comparison made next is written even if it finds nothing new, as Argo CD's controller persists
 * the refresh it asks for when an operation completes. `argocd app sync` waits for it. Not for a
 * retry's marker (Running with finishedAt: the operation goes on), nor for a finishedAt still ahead
 * of this clock (another clock's), which would have every refresh write until this one caught up.
 */
export function comparisonOwed(prev: ApplicationStatus | undefined, nowMs: number): boolean {
  const state = prev?.operationState;
  if (state?.finishedAt === undefined || !isCompleted(state.phase)) return false;
  const finished = Date.parse(state.finishedAt);
  if (!(finished <= nowMs)) return false;
  const at = prev?.reconciledAt ? Date.parse(prev.reconciledAt) : NaN;
  return Number.isNaN(at) || at < finished;
}

/**
 * The kind of refresh a comparison gets when nobody asked for one (Argo CD's comparisonExpiry): hard
 * once the last comparison is older than argocd-cm `timeout.hard.reconciliation` (or there was none),
 * when that is set; otherwise a normal one.
 */
export function periodicRefreshKind(
  prev: ApplicationStatus | undefined,
  nowMs: number,
  hardTimeoutMs: number,
): 'hard' | undefined {
  if (hardTimeoutMs <= 0) return undefined;
  const at = prev?.reconciledAt ? Date.parse(prev.reconciledAt) : NaN;
  return Number.isNaN(at) || nowMs - at >= hardTimeoutMs ? 'hard' : undefined;
}
