// Which built-in check a kind has (gitops-engine's GetHealthCheckFunc, plus the checks Argo CD
// bundles as customizations for CRDs, CronJobs and PodDisruptionBudgets), and the rule every
// assessment starts with: an object being deleted is Progressing.
import type { KubeObject } from '../../api/index.ts';
import { groupOf } from '../../api/index.ts';
import { HealthCheckError, hpaHealth } from './hpa.ts';
import { apiServiceHealth, crdHealth, ingressHealth, pdbHealth, pvcHealth, serviceHealth } from './misc.ts';
import { cronJobHealth, jobHealth, podHealth, workflowHealth } from './pods.ts';
import type { HealthStatus } from './types.ts';
import { meta, rec } from './values.ts';
import { daemonSetHealth, deploymentHealth, replicaSetHealth, statefulSetHealth } from './workloads.ts';

const CHECKS: Record<string, (o: KubeObject) => HealthStatus> = {
  'apps/Deployment': deploymentHealth,
  'apps/StatefulSet': statefulSetHealth,
  'apps/DaemonSet': daemonSetHealth,
  'apps/ReplicaSet': replicaSetHealth,
  '/Pod': podHealth,
  '/Service': serviceHealth,
  '/PersistentVolumeClaim': pvcHealth,
  'networking.k8s.io/Ingress': ingressHealth,
  'extensions/Ingress': ingressHealth,
  'batch/Job': jobHealth,
  'batch/CronJob': cronJobHealth,
  'autoscaling/HorizontalPodAutoscaler': hpaHealth,
  'apiregistration.k8s.io/APIService': apiServiceHealth,
  'policy/PodDisruptionBudget': pdbHealth,
  'argoproj.io/Workflow': workflowHealth,
  'apiextensions.k8s.io/CustomResourceDefinition': crdHealth,
};

/** The health of a live object; null when its kind has none (a sync then counts it done once applied). */
export type HealthAssessor = (obj: KubeObject) => Promise<HealthStatus | null>;

const HOOK_FINALIZER = 'argocd.argoproj.io/hook-finalizer';

/** Being deleted, and not a hook held by Argo CD's finalizer: on its way out (gitops-engine). */
export function pendingDeletion(o: KubeObject): HealthStatus | null {
  const m = meta(o);
  const finalizers = m['finalizers'];
  if (!m['deletionTimestamp'] || (Array.isArray(finalizers) && finalizers.includes(HOOK_FINALIZER))) return null;
  return { status: 'Progressing', message: 'Pending deletion' };
}

/** Whether a built-in check exists for the object's group and kind. */
export function hasBuiltinCheck(o: KubeObject): boolean {
  return CHECKS[`${groupOf(String(o.apiVersion ?? ''))}/${String(o.kind)}`] !== undefined;
}

/**
 * The built-in health of a live object, or null when there is no check for its kind (which a sync
 * treats as done once applied). Argo CD Applications have none: since Argo CD 1.8 a parent
 * Application reads its children's health only through a configured customization.
 */
export function builtinHealth(o: KubeObject): HealthStatus | null {
  const deleting = pendingDeletion(o);
  if (deleting) return deleting;
  const check = CHECKS[`${groupOf(String(o.apiVersion ?? ''))}/${String(o.kind)}`];
  if (!check) return null;
  try {
    return check({ ...o, metadata: rec(o.metadata) as KubeObject['metadata'] });
  } catch (err) {
    if (!(err instanceof HealthCheckError)) throw err;
    return { status: 'Unknown', message: err.message, error: err.message };
  }
}

/** The built-in checks only: what impersync assesses without customizations. */
export const builtinAssessor: HealthAssessor = (obj) => Promise.resolve(builtinHealth(obj));
