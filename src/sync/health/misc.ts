// Health checks for the kinds whose rule is a condition or two: Services, Ingresses, PVCs and
// APIServices (gitops-engine), CRDs and PodDisruptionBudgets (the states and messages of Argo CD's
// bundled checks, which it ships as customizations rather than built in).
import type { KubeObject } from '../../api/index.ts';
import type { HealthStatus } from './types.ts';
import { arr, h, meta, rec, str } from './values.ts';

/** A LoadBalancer Service is Progressing until the cloud gives it an address; others are Healthy. */
export function serviceHealth(o: KubeObject): HealthStatus {
  if (rec(o['spec'])['type'] !== 'LoadBalancer') return { status: 'Healthy' };
  const ingress = rec(rec(o['status'])['loadBalancer'])['ingress'];
  return { status: Array.isArray(ingress) && ingress.length > 0 ? 'Healthy' : 'Progressing' };
}

/** An Ingress is Healthy once its controller published an address. */
export function ingressHealth(o: KubeObject): HealthStatus {
  const ingress = rec(rec(o['status'])['loadBalancer'])['ingress'];
  return { status: Array.isArray(ingress) && ingress.length > 0 ? 'Healthy' : 'Progressing' };
}

export function pvcHealth(o: KubeObject): HealthStatus {
  switch (rec(o['status'])['phase']) {
    case 'Lost':
      return { status: 'Degraded' };
    case 'Pending':
      return { status: 'Progressing' };
    case 'Bound':
      return { status: 'Healthy' };
    default:
      return { status: 'Unknown' };
  }
}

export function crdHealth(o: KubeObject): HealthStatus {
  if (meta(o)['deletionTimestamp']) return { status: 'Progressing', message: 'CRD is terminating' };
  const conditions = arr(rec(o['status'])['conditions']);
  if (conditions.length === 0) return { status: 'Progressing', message: 'Status conditions not found' };
  let established = false;
  for (const c of conditions) {
    if (c['type'] === 'Terminating' && c['status'] === 'True')
      return { status: 'Progressing', message: `CRD is terminating: ${str(c['message'])}` };
    if (c['type'] === 'NamesAccepted' && c['status'] === 'False')
      return { status: 'Degraded', message: `CRD names have not been accepted: ${str(c['message'])}` };
    if (c['type'] === 'NonStructuralSchema' && c['status'] === 'True')
      return { status: 'Degraded', message: `Schema violations found: ${str(c['message'])}` };
    if (c['type'] === 'Established') {
      if (c['status'] === 'True') established = true;
      else if (c['reason'] === 'Installing') return { status: 'Progressing', message: 'CRD is being installed' };
    }
  }
  if (!established) return { status: 'Degraded', message: 'CRD is not established' };
  return { status: 'Healthy', message: 'CRD is healthy' };
}

/** An APIService (gitops-engine): its Available condition, as `reason: message`. */
export function apiServiceHealth(o: KubeObject): HealthStatus {
  const available = arr(rec(o['status'])['conditions']).find((c) => c['type'] === 'Available');
  if (!available) return h('Progressing', 'Waiting to be processed');
  const message = `${str(available['reason'])}: ${str(available['message'])}`;
  return h(available['status'] === 'True' ? 'Healthy' : 'Progressing', message);
}

/**
 * A PodDisruptionBudget (Argo CD's bundled check): Degraded by a False condition other than
 * InsufficientPods (which has valid uses), Healthy once a condition is reported.
 */
export function pdbHealth(o: KubeObject): HealthStatus {
  let health = h('Progressing', 'Waiting for status');
  for (const c of arr(rec(o['status'])['conditions'])) {
    const message = `PodDisruptionBudget has ${str(c['reason'])}`;
    if (c['status'] === 'False' && c['reason'] !== 'InsufficientPods') return h('Degraded', message);
    health = h('Healthy', message);
  }
  return health;
}
