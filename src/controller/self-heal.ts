// How long a self-heal sync waits, as Argo CD's selfHealRemainingBackoff (controller/appcontroller.go)
// computes it: with the backoff (the default), the n-th attempt to heal the same revision waits
// what the n-th Step() of a wait.Backoff{Duration, Factor, Cap} returns (2 s, 6 s, 18 s, ... up to
// 300 s by default; the first attempt not at all); without it (its timeout 0), a fixed timeout. Both
// count from when the last sync finished.

export interface SelfHealBackoff {
  durationMs: number;
  factor: number;
  capMs: number;
}

export interface SelfHealPolicy {
  /** `controller.self.heal.timeout.seconds`: the wait when there is no backoff. */
  timeoutMs: number;
  /** Absent when `controller.self.heal.backoff.timeout.seconds` is 0. */
  backoff?: SelfHealBackoff | undefined;
}

/** Argo CD's defaults: no timeout, a backoff from 2 s by a factor of 3 up to 300 s. */
export const DEFAULT_SELF_HEAL: SelfHealPolicy = {
  timeoutMs: 0,
  backoff: { durationMs: 2_000, factor: 3, capMs: 300_000 },
};

/**
 * What `steps` calls of k8s.io/apimachinery's Backoff.Step() return last (0 for none): each call
 * returns the current duration and multiplies it by the factor; once that passes the cap it is the
 * cap, and every later call returns it.
 */
export function backoffDelayMs(backoff: SelfHealBackoff, steps: number): number {
  let duration = backoff.durationMs;
  let remaining = steps;
  let delay = 0;
  for (let i = 0; i < steps; i++) {
    if (remaining < 1) {
      delay = duration;
      continue;
    }
    remaining--;
    delay = duration;
    if (backoff.factor !== 0) {
      duration = duration * backoff.factor;
      if (backoff.capMs > 0 && duration > backoff.capMs) {
        duration = backoff.capMs;
        remaining = 0;
      }
    }
  }
  return delay;
}

/**
 * How much longer a self-heal sync waits after `attempts` self-heal syncs of the same revision
 * (the last operation's autoHealAttemptsCount); 0 or less: now. `finishedAtMs` undefined (the last
 * operation has not finished) counts as no time passed.
 */
export function selfHealRemainingMs(
  policy: SelfHealPolicy,
  attempts: number,
  finishedAtMs: number | undefined,
  nowMs: number,
): number {
  const since = finishedAtMs === undefined ? 0 : nowMs - finishedAtMs;
  const wait = policy.backoff ? backoffDelayMs(policy.backoff, attempts) : policy.timeoutMs;
  return wait - since;
}

/** A duration as Go's time.Duration prints it ("0s", "2s", "1m30s", "1.5s"), for Argo CD's messages. */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${trim(rest)}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = `${trim(rest / 1000)}s`;
  return `${sign}${h > 0 ? `${h}h${m}m` : m > 0 ? `${m}m` : ''}${s}`;
}

function trim(n: number): string {
  return String(Math.round(n * 1000) / 1000);
}
