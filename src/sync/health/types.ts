// The vocabulary of health (gitops-engine's pkg/health): the six codes (api/status.ts names them,
// best first), their order, and what a check returns.
import { HealthStatusCodeSchema } from '../../api/index.ts';
import type { HealthStatusCode } from '../../api/index.ts';

export type { HealthStatusCode };

/**
 * What a check returns. Wider than the status.health the controller writes (api/status.ts): a Lua
 * check may give no status at all, or fail.
 */
export interface HealthStatus {
  /**
   * '' only from a Lua check that returned nil or an empty table: Argo CD then records a health
   * with no status, which counts as nothing in the aggregate and never completes a sync wave.
   */
  status: HealthStatusCode | '';
  message?: string;
  /**
   * Set when a Lua check failed (status Unknown, message the script's error). Argo CD reports such
   * a failure apart from the health itself: as a comparison error, and a hook in Error.
   */
  error?: string;
}

/** From most to least healthy; the worst one wins an aggregate. */
export const HEALTH_ORDER: readonly HealthStatusCode[] = HealthStatusCodeSchema.options;

/** gitops-engine's IsWorse: a code it does not know (the empty one) ranks as Healthy. */
export function isWorse(current: HealthStatusCode | '', candidate: HealthStatusCode | ''): boolean {
  const rank = (c: HealthStatusCode | '') => Math.max(0, HEALTH_ORDER.indexOf(c as HealthStatusCode));
  return rank(candidate) > rank(current);
}

export function isHealthStatusCode(v: unknown): v is HealthStatusCode {
  return HealthStatusCodeSchema.safeParse(v).success;
}
