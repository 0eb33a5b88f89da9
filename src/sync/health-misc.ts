// Health checks for the kinds whose rule is a line or two: Services, Ingresses, PVCs, and CRDs
// (Argo CD ships the CRD check as a bundled customization rather than built in).
import type { KubeObject } from '../api/index.ts';
import type { HealthStatus } from '../api/index.ts';

type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const arr = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(rec) : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

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
  if (o.metadata['deletionTimestamp']) return { status: 'Progressing', message: 'CRD is terminating' };
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
