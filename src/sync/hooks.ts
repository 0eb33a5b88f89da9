// Hooks (Argo CD's resource hooks): which phases an object runs in, the name a `generateName` hook
// gets for this sync, and how far along a running hook or resource is, judged by its health.
import type { HookPhase, KubeObject, SyncPhase } from '../api/index.ts';
import { isHook, syncPhasesOf } from './annotations.ts';
import type { HealthStatus } from './health/index.ts';
import { resourceHealthError } from './health/index.ts';

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
 * Where a running task stands, given its live object's health (gitops-engine's sync context).
 * Kinds without health are done once applied; Healthy is done, Degraded (or Unknown, for a hook)
 * failed, anything else still running. A check that failed leaves a resource running (its wave
 * waits) and puts a hook in Error; a health with no status completes a hook, never a resource.
 */
export function operationPhaseOf(
  health: HealthStatus | null,
  live: KubeObject,
  hook: boolean,
): { phase: HookPhase; message: string } {
  const name = String(live.metadata?.name ?? '');
  if (health?.error !== undefined) {
    if (!hook) return { phase: 'Running', message: health.message ?? '' };
    const why = resourceHealthError(String(live.metadata?.namespace ?? ''), name, health.error);
    return { phase: 'Error', message: `failed to get resource health: ${why}` };
  }
  if (!health) return { phase: 'Succeeded', message: hook ? `${name} created` : '' };
  if (health.status === '')
    return hook ? { phase: 'Succeeded', message: `${name} created` } : { phase: 'Running', message: '' };
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
