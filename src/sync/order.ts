// The order a sync runs in, as Argo CD's gitops-engine orders it: phase, then sync wave, then kind
// (Helm's install order, namespaces and CRDs first, workloads last, unknown kinds after all known
// ones), then name. Afterwards a Namespace or CRD that something earlier depends on is moved up
// to just before its first user, taking that user's phase and wave.
import type { KubeObject, SyncPhase } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import { waveOf } from './annotations.ts';

export const KIND_ORDER: readonly string[] = [
  'Namespace',
  'NetworkPolicy',
  'ResourceQuota',
  'LimitRange',
  'PodSecurityPolicy',
  'PodDisruptionBudget',
  'ServiceAccount',
  'Secret',
  'SecretList',
  'ConfigMap',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleList',
  'ClusterRoleBinding',
  'ClusterRoleBindingList',
  'Role',
  'RoleList',
  'RoleBinding',
  'RoleBindingList',
  'Service',
  'DaemonSet',
  'Pod',
  'ReplicationController',
  'ReplicaSet',
  'Deployment',
  'HorizontalPodAutoscaler',
  'StatefulSet',
  'Job',
  'CronJob',
  'IngressClass',
  'Ingress',
  'APIService',
];

const PHASE_ORDER: Record<SyncPhase, number> = { PreSync: -1, Sync: 0, PostSync: 1, SyncFail: 2 };

/** Known kinds rank below zero in list order; every other kind ranks 0, after all of them. */
export function kindRank(kind: string): number {
  const i = KIND_ORDER.indexOf(kind);
  return i < 0 ? 0 : i - KIND_ORDER.length;
}

export interface Orderable {
  phase: SyncPhase;
  /** What Git wants; null for a prune. */
  target: KubeObject | null;
  live: KubeObject | null;
  /** Set when the wave is not the object's own (PruneLast, reversed prune waves, dependencies). */
  waveOverride?: number | undefined;
}

export function taskObject(t: Orderable): KubeObject {
  return (t.target ?? t.live) as KubeObject;
}

export function taskWave(t: Orderable): number {
  return t.waveOverride ?? waveOf(taskObject(t));
}

export function compareTasks(a: Orderable, b: Orderable): number {
  const d = PHASE_ORDER[a.phase] - PHASE_ORDER[b.phase] || taskWave(a) - taskWave(b);
  if (d !== 0) return d;
  const oa = taskObject(a);
  const ob = taskObject(b);
  const k = kindRank(oa.kind) - kindRank(ob.kind);
  if (k !== 0) return k;
  return oa.metadata.name < ob.metadata.name ? -1 : oa.metadata.name > ob.metadata.name ? 1 : 0;
}

/** Sorts in place and returns the same array. */
export function sortTasks<T extends Orderable>(tasks: T[]): T[] {
  tasks.sort(compareTasks);
  // Namespaces before what lives in them.
  hoistDependencies(
    tasks,
    (o) => (o.kind === 'Namespace' && groupOf(o.apiVersion) === '' ? o.metadata.name : undefined),
    (o) => (o.metadata.namespace ? o.metadata.namespace : undefined),
  );
  // CRDs before their custom resources.
  hoistDependencies(
    tasks,
    (o) => {
      if (o.kind !== 'CustomResourceDefinition' || groupOf(o.apiVersion) !== 'apiextensions.k8s.io') return undefined;
      const spec = o['spec'] as { group?: unknown; names?: { kind?: unknown } } | undefined;
      return typeof spec?.group === 'string' && typeof spec.names?.kind === 'string'
        ? `${spec.group}/${spec.names.kind}`
        : undefined;
    },
    (o) => `${groupOf(o.apiVersion)}/${o.kind}`,
  );
  return tasks;
}

function hoistDependencies<T extends Orderable>(
  tasks: T[],
  provides: (o: KubeObject) => string | undefined,
  needs: (o: KubeObject) => string | undefined,
): void {
  const firstUser = new Map<string, number>();
  for (let i = 0; i < tasks.length; i++) {
    const t = tasks[i] as T;
    if (!t.target) continue;
    const dep = provides(t.target);
    if (dep !== undefined) {
      const at = firstUser.get(dep);
      if (at === undefined) continue;
      const user = tasks[at] as T;
      t.waveOverride = taskWave(user);
      t.phase = user.phase;
      tasks.splice(i, 1);
      tasks.splice(at, 0, t);
      for (const [k, idx] of firstUser) if (idx >= at) firstUser.set(k, idx + 1);
    } else {
      const key = needs(t.target);
      if (key !== undefined && !firstUser.has(key)) firstUser.set(key, i);
    }
  }
}
