// The rules of operations, pure: when an automated sync starts (Argo CD's rules), the retry
// backoff and the history of the last syncs. The transitions of operationState are
// operation-machine.ts's.
import type {
  Application,
  HistoryEntry,
  Operation,
  OperationState,
  RetryStrategy,
  SyncStatusCode,
} from '../api/index.ts';
import { parseDurationSeconds } from '../impersonation/duration.ts';
import { DEFAULT_SELF_HEAL, goDuration, selfHealRemainingMs } from './self-heal.ts';
import type { SelfHealPolicy } from './self-heal.ts';

export const HISTORY_LIMIT = 10;

/** A backoff duration ("5s", "1m30s", or bare seconds, as Argo CD reads them) in ms; undefined when unset or bad. */
function durationMs(s: string | undefined): number | undefined {
  if (s === undefined || s.trim() === '') return undefined;
  const parsed = parseDurationSeconds(s);
  return parsed.ok ? parsed.seconds * 1000 : undefined;
}

/** Argo CD's retry backoff: duration·factor^retries, capped at maxDuration (defaults 5s, 2, 3m). */
export function retryDelayMs(strategy: RetryStrategy | undefined, retryCount: number): number {
  const base = durationMs(strategy?.backoff?.duration) ?? 5_000;
  const factor = strategy?.backoff?.factor ?? 2;
  const max = durationMs(strategy?.backoff?.maxDuration) ?? 180_000;
  return Math.min(max, base * factor ** Math.max(0, retryCount));
}

/** Whether another attempt is allowed after `retryCount` retries (limit < 0: unlimited). */
export function mayRetry(strategy: RetryStrategy | undefined, retryCount: number): boolean {
  if (!strategy) return false;
  const limit = strategy.limit ?? 0;
  return limit < 0 || retryCount < limit;
}

export interface Comparison {
  syncStatus: SyncStatusCode;
  revision: string;
  /** Multi-source: each source's revision (the operation then names `revisions`). */
  revisions?: string[] | undefined;
  /** Number of desired objects after rendering. */
  desiredCount: number;
  /** Out-of-sync resources, each marked when its only change is that it must be pruned. */
  outOfSync: Array<{ requiresPruning: boolean }>;
}

export type AutoSyncDecision =
  { sync: true; operation: Operation } | { sync: false; reason: string; retryAfterMs?: number };

/**
 * Argo CD's auto-sync rules: only when automated is on and the app is OutOfSync; one attempt per
 * revision unless self-heal; never an empty set unless allowEmpty; not when only pruning is
 * needed and prune is off; no repeat of an attempt that failed on the same revision.
 */
export function autoSyncDecision(
  app: Application,
  comparison: Comparison,
  lastState: OperationState | undefined,
  nowMs: number = Date.now(),
  selfHeal: SelfHealPolicy = DEFAULT_SELF_HEAL,
): AutoSyncDecision {
  const policy = app.spec.syncPolicy;
  const auto = policy?.automated;
  if (!auto || auto.enabled === false) return { sync: false, reason: 'automated sync is not enabled' };
  if (app.operation) return { sync: false, reason: 'an operation is already in progress' };
  if (comparison.syncStatus !== 'OutOfSync') return { sync: false, reason: `sync status is ${comparison.syncStatus}` };
  if (comparison.desiredCount === 0 && !auto.allowEmpty) {
    return {
      sync: false,
      reason: 'Skipping sync attempt: automated sync would wipe out all resources (allowEmpty is false)',
    };
  }
  if (!auto.prune && comparison.outOfSync.length > 0 && comparison.outOfSync.every((r) => r.requiresPruning)) {
    return {
      sync: false,
      reason: 'Skipping sync attempt: only resources to prune are out of sync and automated prune is off',
    };
  }
  const last = lastState;
  // Argo CD compares the source too (targetRevision aside): a new path or parameters on the same
  // commit is a new desired state and is synced again.
  const multi = comparison.revisions !== undefined;
  const sameRevision = multi
    ? canonical(last?.syncResult?.revisions ?? null) === canonical(comparison.revisions) &&
      sameSource(last?.syncResult?.sources, app.spec.sources)
    : last?.syncResult?.revision === comparison.revision && sameSource(last?.syncResult?.source, app.spec.source);
  const shown = multi ? (comparison.revisions ?? []).join(', ') : comparison.revision;
  let healAttempts: number | undefined;
  if (last && last.operation.initiatedBy?.automated && sameRevision) {
    if (last.phase !== 'Succeeded') {
      return { sync: false, reason: `Skipping auto-sync: failed previous sync attempt to ${shown}` };
    }
    if (!auto.selfHeal) return { sync: false, reason: `Skipping auto-sync: most recent sync already to ${shown}` };
    // Argo CD's self-heal backoff (self-heal.ts): each heal of the same revision waits longer, so a
    // resource that never converges is not applied in a loop; the count travels in the operation.
    const attempts = last.operation.sync?.autoHealAttemptsCount ?? 0;
    const finished = last.finishedAt ? Date.parse(last.finishedAt) : undefined;
    const remaining = selfHealRemainingMs(selfHeal, attempts, finished, nowMs);
    if (remaining > 0) {
      const revisions = `[${multi ? (comparison.revisions ?? []).join(' ') : comparison.revision}]`;
      return {
        sync: false,
        reason: `Skipping auto-sync: already attempted sync to ${revisions} with timeout ${goDuration(selfHeal.timeoutMs)} (retrying in ${goDuration(remaining)})`,
        retryAfterMs: remaining,
      };
    }
    healAttempts = attempts + 1;
  }
  const operation: Operation = {
    sync: {
      ...(multi ? { revisions: comparison.revisions } : { revision: comparison.revision }),
      prune: auto.prune ?? false,
      ...(policy?.syncOptions ? { syncOptions: policy.syncOptions } : {}),
      ...(healAttempts !== undefined ? { autoHealAttemptsCount: healAttempts } : {}),
    },
    initiatedBy: { automated: true },
    ...(policy?.retry ? { retry: policy.retry } : {}),
  };
  return { sync: true, operation };
}

/** Key order differs between what the API server returns and what the schemas parse, so sort. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v)
      .filter(([k, x]) => x !== undefined && k !== 'targetRevision')
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

function sameSource(recorded: unknown, current: unknown): boolean {
  return recorded === undefined || canonical(recorded) === canonical(current);
}

/** Appends a successful sync to the history, keeping the last HISTORY_LIMIT entries. */
export function appendHistory(
  history: HistoryEntry[] | undefined,
  entry: Pick<
    HistoryEntry,
    'revision' | 'source' | 'revisions' | 'sources' | 'deployedAt' | 'deployStartedAt' | 'initiatedBy' | 'identity'
  >,
  limit: number = HISTORY_LIMIT,
): HistoryEntry[] {
  const prev = history ?? [];
  const id = prev.reduce((m, h) => Math.max(m, h.id), -1) + 1;
  // spec.revisionHistoryLimit (Argo CD's GetRevisionHistoryLimit, default 10); 0 keeps none.
  const kept = Math.max(0, Math.floor(limit));
  return kept === 0 ? [] : [...prev, { id, ...entry }].slice(-kept);
}
