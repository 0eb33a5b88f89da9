// HorizontalPodAutoscaler health (gitops-engine): autoscaling/v2 reads status.conditions,
// autoscaling/v1 the conditions its API server serialises into an annotation. A condition from the
// failure list degrades it; AbleToScale or ScalingLimited True makes it Healthy; otherwise it waits.
import type { KubeObject } from '../../api/index.ts';
import type { HealthStatus } from './types.ts';
import { arr, h, meta, rec, str } from './values.ts';

const CONDITIONS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/conditions';
const WAITING = h('Progressing', 'Waiting to Autoscale');

/** `type/reason` pairs that mean the autoscaler cannot do its job. */
const DEGRADED = new Set([
  'AbleToScale/FailedGetScale',
  'AbleToScale/FailedUpdateScale',
  'ScalingActive/FailedGetResourceMetric',
  'ScalingActive/FailedGetObjectMetric',
  'ScalingActive/FailedGetPodsMetric',
  'ScalingActive/FailedGetExternalMetric',
  'ScalingActive/FailedComputeMetricsReplicas',
  'ScalingActive/InvalidSelector',
]);

/** Thrown for what gitops-engine reports as an error: the caller makes it Unknown with this message. */
export class HealthCheckError extends Error {}

type Condition = { type: string; reason: string; message: string; status: string };

function fromConditions(conditions: Condition[]): HealthStatus {
  const degraded = conditions.find((c) => DEGRADED.has(`${c.type}/${c.reason}`));
  if (degraded) return h('Degraded', degraded.message);
  const healthy = conditions.find(
    (c) => (c.type === 'AbleToScale' || c.type === 'ScalingLimited') && c.status === 'True',
  );
  return healthy ? h('Healthy', healthy.message) : WAITING;
}

// Go's encoding/json matches field names case-insensitively: `type` and `Type` both fill Type.
function field(c: Record<string, unknown>, name: string): string {
  const key = Object.keys(c).find((k) => k.toLowerCase() === name);
  return key === undefined ? '' : str(c[key]);
}

const toCondition = (c: Record<string, unknown>): Condition => ({
  type: field(c, 'type'),
  reason: field(c, 'reason'),
  message: field(c, 'message'),
  status: field(c, 'status'),
});

export function hpaHealth(o: KubeObject): HealthStatus {
  switch (o.apiVersion) {
    case 'autoscaling/v2':
      return fromConditions(arr(rec(o['status'])['conditions']).map(toCondition));
    case 'autoscaling/v1': {
      const raw = rec(meta(o)['annotations'])[CONDITIONS_ANNOTATION];
      if (typeof raw !== 'string') return WAITING;
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch (err) {
        throw new HealthCheckError(`failed to convert conditions annotation to typed: ${(err as Error).message}`);
      }
      const conditions = arr(parsed).map(toCondition);
      return conditions.length === 0 ? WAITING : fromConditions(conditions);
    }
    default:
      throw new HealthCheckError(`unsupported HPA GVK: ${o.apiVersion}, Kind=${o.kind}`);
  }
}
