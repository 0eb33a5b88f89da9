// An Application's health from its resources' (Argo CD's setApplicationHealth): the worst one wins;
// hooks, objects marked argocd.argoproj.io/ignore-healthcheck and kinds without health do not count;
// missing objects count only when none exists at all; a child Application's Missing or Unknown does
// not count. The message names the resources that made it what it is ("Caused by ...").
import type { KubeObject } from '../../api/index.ts';
import { annotationsOf, isHook } from '../annotations.ts';
import type { HealthStatus, HealthStatusCode } from './types.ts';
import { isWorse } from './types.ts';

export const ANNOTATION_IGNORE_HEALTHCHECK = 'argocd.argoproj.io/ignore-healthcheck';

/** Argo CD names at most this many causes, then "and N more". */
const CAUSES_SHOWN = 3;

export interface AggregateInput {
  group: string;
  kind: string;
  namespace: string;
  name: string;
  health?: HealthStatus | null | undefined;
  /** The live object; null or absent when missing. */
  live?: KubeObject | null | undefined;
  /** Hooks are not part of an Application's health. */
  hook?: boolean;
}

/** A type, not an interface: it is written as status.health (api/status.ts), an open object. */
export type AggregateHealth = {
  status: HealthStatusCode;
  message?: string;
};

function causeName(r: AggregateInput): string {
  const gk = r.group ? `${r.group}/${r.kind}` : r.kind;
  return `${gk}:${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
}

export function aggregateHealth(resources: readonly AggregateInput[]): AggregateHealth {
  let worst: HealthStatusCode = 'Healthy';
  let causes: AggregateInput[] = [];
  let any = false;
  let anyLive = false;
  for (const r of resources) {
    if (r.hook || (r.live && isHook(r.live))) continue;
    any = true;
    if (r.live) anyLive = true;
    if (r.live && annotationsOf(r.live)[ANNOTATION_IGNORE_HEALTHCHECK] === 'true') continue;
    const health = r.live ? r.health : { status: 'Missing' as const };
    if (!health || health.status === '') continue;
    if (!r.live && health.status === 'Missing') continue;
    if (
      r.group === 'argoproj.io' &&
      r.kind === 'Application' &&
      (health.status === 'Missing' || health.status === 'Unknown')
    )
      continue;
    if (isWorse(worst, health.status)) {
      worst = health.status;
      causes = [r];
    } else if (worst === health.status && worst !== 'Healthy') causes.push(r);
  }
  if (any && !anyLive && isWorse(worst, 'Missing')) return { status: 'Missing' };
  if (causes.length === 0) return { status: worst };
  const named = causes.slice(0, CAUSES_SHOWN).map(causeName).join(', ');
  const more = causes.length > CAUSES_SHOWN ? ` and ${causes.length - CAUSES_SHOWN} more` : '';
  return { status: worst, message: `Caused by ${named}${more}` };
}

/**
 * Argo CD's ComparisonError for checks that failed (a Lua error): the first one, and how many more.
 * Null when every check ran.
 */
export function healthCheckErrors(resources: readonly AggregateInput[]): string | null {
  const failed = resources.filter(
    (r) =>
      r.live &&
      !r.hook &&
      !isHook(r.live) &&
      annotationsOf(r.live)[ANNOTATION_IGNORE_HEALTHCHECK] !== 'true' &&
      r.health?.error !== undefined,
  );
  const first = failed[0];
  if (!first) return null;
  const err =
    `failed to get resource health for ${JSON.stringify(first.kind)} with name ${JSON.stringify(first.name)} ` +
    `in namespace ${JSON.stringify(first.namespace)}: ${resourceHealthError(first.namespace, first.name, first.health?.error ?? '')}`;
  const text =
    failed.length > 1
      ? `see application-controller logs for ${failed.length - 1} other errors; most recent error was: ${err}`
      : err;
  return `error setting app health: ${text}`;
}

/** gitops-engine's wrapping of a failed health override. */
export function resourceHealthError(namespace: string, name: string, error: string): string {
  return `failed to get resource health for ${namespace}/${name}: ${error}`;
}
