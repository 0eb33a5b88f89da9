// Binds the LimitsPort to project/ (spec §9). Until project/ exposes its checks, nothing is
// refused here; the binding is this one file.
import type { LimitsPort } from './ports.ts';

export function projectLimits(): LimitsPort {
  return {
    checkApplication: () => [],
    checkObjects: () => [],
  };
}
