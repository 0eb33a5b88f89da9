// Hooks (Argo CD's resource hooks): which phases an object runs in, the name a `generateName` hook
// gets for this sync, and how far along a running hook or resource is, judged by its health.
import type { HookPhase, KubeObject, SyncPhase } from '../api/index.ts';
import { isHook, syncPhasesOf } from './annotations.ts';
import { resourceHealth } from './health.ts';

/**
 * One object per phase it runs in. A hook named by `generateName` gets a name per phase, made from
 * the revision, the phase and the sync's start time (Argo CD's scheme), so reruns do not collide.
 */
export function expandPhases(
  obj: KubeObject,
  revision: string,
  startedAt: Date,
): Array<{ obj: KubeObject; phase: SyncPhase }> {
  const phases = syncPhasesOf(obj);
  if (!isHook(obj)) return phases.map((phase) => ({ obj, phase }));
  const generateName = obj.metadata['generateName'];
  if (obj.metadata.name || typeof generateName !== 'string' || generateName === '')
    return phases.map((phase) => ({ obj, phase }));
  const rev = revision.slice(0, 7);
  const seconds = Math.floor(startedAt.getTime() / 1000);
  return phases.map((phase) => {
    const copy = structuredClone(obj);
    copy.metadata.name = `${generateName}${rev}-${phase}-${seconds}`.toLowerCase();
    delete copy.metadata['generateName'];
    return { obj: copy, phase };
  });
}

/**
 * Where a running task stands. Kinds without health are done once applied; Healthy is done,
 * Degraded (or Unknown, for a hook) failed, anything else still running.
 */
export function operationPhaseOf(live: KubeObject, hook: boolean): { phase: HookPhase; message: string } {
  const health = resourceHealth(live);
  if (!health) return { phase: 'Succeeded', message: hook ? `${live.metadata.name} created` : '' };
  switch (health.status) {
    case 'Healthy':
      return { phase: 'Succeeded', message: health.message ?? '' };
    case 'Degraded':
      return { phase: 'Failed', message: health.message ?? '' };
    case 'Unknown':
      return hook
        ? { phase: 'Failed', message: health.message ?? '' }
        : { phase: 'Running', message: health.message ?? '' };
    default:
      return { phase: 'Running', message: health.message ?? '' };
  }
}
