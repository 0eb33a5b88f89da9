// gitops-engine's checks for the apps/ workloads: Deployment, StatefulSet, DaemonSet, ReplicaSet.
// States and messages are gitops-engine's, word for word.
import type { KubeObject } from '../../api/index.ts';
import type { HealthStatus } from './types.ts';
import { arr, h, meta, num, rec, str } from './values.ts';

export function deploymentHealth(o: KubeObject): HealthStatus {
  const spec = rec(o['spec']);
  const st = rec(o['status']);
  if (spec['paused'] === true) return h('Suspended', 'Deployment is paused');
  if (num(meta(o)['generation']) > num(st['observedGeneration'])) {
    return h(
      'Progressing',
      'Waiting for rollout to finish: observed deployment generation less than desired generation',
    );
  }
  const progressing = arr(st['conditions']).find((c) => c['type'] === 'Progressing');
  const replicas = typeof spec['replicas'] === 'number' ? spec['replicas'] : undefined;
  const updated = num(st['updatedReplicas']);
  if (progressing && progressing['reason'] === 'ProgressDeadlineExceeded')
    return h('Degraded', `Deployment "${str(meta(o)['name'])}" exceeded its progress deadline`);
  if (replicas !== undefined && updated < replicas)
    return h(
      'Progressing',
      `Waiting for rollout to finish: ${updated} out of ${replicas} new replicas have been updated...`,
    );
  if (num(st['replicas']) > updated)
    return h(
      'Progressing',
      `Waiting for rollout to finish: ${num(st['replicas']) - updated} old replicas are pending termination...`,
    );
  if (num(st['availableReplicas']) < updated)
    return h(
      'Progressing',
      `Waiting for rollout to finish: ${num(st['availableReplicas'])} of ${updated} updated replicas are available...`,
    );
  return h('Healthy');
}

export function statefulSetHealth(o: KubeObject): HealthStatus {
  const spec = rec(o['spec']);
  const st = rec(o['status']);
  const observed = num(st['observedGeneration']);
  if (observed === 0 || num(meta(o)['generation']) > observed)
    return h('Progressing', 'Waiting for statefulset spec update to be observed...');
  const replicas = typeof spec['replicas'] === 'number' ? spec['replicas'] : undefined;
  const ready = num(st['readyReplicas']);
  if (replicas !== undefined && ready < replicas)
    return h('Progressing', `Waiting for ${replicas - ready} pods to be ready...`);
  const strategy = rec(spec['updateStrategy']);
  const rolling = strategy['rollingUpdate'];
  if (strategy['type'] === 'RollingUpdate' && rolling !== undefined && rolling !== null) {
    const partition = rec(rolling)['partition'];
    if (replicas !== undefined && typeof partition === 'number' && num(st['updatedReplicas']) < replicas - partition) {
      return h(
        'Progressing',
        `Waiting for partitioned roll out to finish: ${num(st['updatedReplicas'])} out of ${replicas - partition} new pods have been updated...`,
      );
    }
    return h('Healthy', `partitioned roll out complete: ${num(st['updatedReplicas'])} new pods have been updated...`);
  }
  if (strategy['type'] === 'OnDelete') return h('Healthy', `statefulset has ${ready} ready pods`);
  if (str(st['updateRevision']) !== str(st['currentRevision'])) {
    return h(
      'Progressing',
      `waiting for statefulset rolling update to complete ${num(st['updatedReplicas'])} pods at revision ${str(st['updateRevision'])}...`,
    );
  }
  return h(
    'Healthy',
    `statefulset rolling update complete ${num(st['currentReplicas'])} pods at revision ${str(st['currentRevision'])}...`,
  );
}

export function daemonSetHealth(o: KubeObject): HealthStatus {
  const st = rec(o['status']);
  if (num(meta(o)['generation']) > num(st['observedGeneration'])) {
    return h(
      'Progressing',
      'Waiting for rollout to finish: observed daemon set generation less than desired generation',
    );
  }
  const desired = num(st['desiredNumberScheduled']);
  const updated = num(st['updatedNumberScheduled']);
  if (rec(rec(o['spec'])['updateStrategy'])['type'] === 'OnDelete')
    return h('Healthy', `daemon set ${updated} out of ${desired} new pods have been updated`);
  if (updated < desired)
    return h(
      'Progressing',
      `Waiting for daemon set "${str(meta(o)['name'])}" rollout to finish: ${updated} out of ${desired} new pods have been updated...`,
    );
  if (num(st['numberAvailable']) < desired) {
    return h(
      'Progressing',
      `Waiting for daemon set "${str(meta(o)['name'])}" rollout to finish: ${num(st['numberAvailable'])} of ${desired} updated pods are available...`,
    );
  }
  return h('Healthy');
}

export function replicaSetHealth(o: KubeObject): HealthStatus {
  const st = rec(o['status']);
  if (num(meta(o)['generation']) > num(st['observedGeneration'])) {
    return h(
      'Progressing',
      'Waiting for rollout to finish: observed replica set generation less than desired generation',
    );
  }
  const failure = arr(st['conditions']).find((c) => c['type'] === 'ReplicaFailure');
  if (failure && failure['status'] === 'True') return h('Degraded', str(failure['message']));
  const replicas = rec(o['spec'])['replicas'];
  if (typeof replicas === 'number' && num(st['availableReplicas']) < replicas) {
    return h(
      'Progressing',
      `Waiting for rollout to finish: ${num(st['availableReplicas'])} out of ${replicas} new replicas are available...`,
    );
  }
  return h('Healthy');
}
