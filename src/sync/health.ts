// Health of live objects in Argo CD's terms, following gitops-engine's built-in checks and Argo CD's
// bundled checks for CRDs and Applications. Kinds without a check have no health (null), which a
// sync treats as done as soon as the object is applied.
import type { HealthStatus, HealthStatusCode, KubeObject } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import { ANNOTATION_IGNORE_RESTART_POLICY, annotationsOf, isHook } from './annotations.ts';
import { crdHealth, ingressHealth, pvcHealth, serviceHealth } from './health-misc.ts';

/** From most to least healthy; the worst one wins an aggregate. */
export const HEALTH_ORDER: readonly HealthStatusCode[] = [
  'Healthy',
  'Suspended',
  'Progressing',
  'Missing',
  'Degraded',
  'Unknown',
];

export function isWorse(current: HealthStatusCode, candidate: HealthStatusCode): boolean {
  return HEALTH_ORDER.indexOf(candidate) > HEALTH_ORDER.indexOf(current);
}

type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const arr = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(rec) : []);
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const h = (status: HealthStatusCode, message?: string): HealthStatus => (message ? { status, message } : { status });

function deploymentHealth(o: KubeObject): HealthStatus {
  const spec = rec(o['spec']);
  const st = rec(o['status']);
  if (spec['paused'] === true) return h('Suspended', 'Deployment is paused');
  if (num(o.metadata['generation']) > num(st['observedGeneration'])) {
    return h(
      'Progressing',
      'Waiting for rollout to finish: observed deployment generation less than desired generation',
    );
  }
  const progressing = arr(st['conditions']).find((c) => c['type'] === 'Progressing');
  const replicas = typeof spec['replicas'] === 'number' ? spec['replicas'] : undefined;
  const updated = num(st['updatedReplicas']);
  if (progressing && progressing['reason'] === 'ProgressDeadlineExceeded')
    return h('Degraded', `Deployment "${o.metadata.name}" exceeded its progress deadline`);
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

function statefulSetHealth(o: KubeObject): HealthStatus {
  const spec = rec(o['spec']);
  const st = rec(o['status']);
  const observed = num(st['observedGeneration']);
  if (observed === 0 || num(o.metadata['generation']) > observed)
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

function daemonSetHealth(o: KubeObject): HealthStatus {
  const st = rec(o['status']);
  if (num(o.metadata['generation']) > num(st['observedGeneration'])) {
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
      `Waiting for daemon set "${o.metadata.name}" rollout to finish: ${updated} out of ${desired} new pods have been updated...`,
    );
  if (num(st['numberAvailable']) < desired) {
    return h(
      'Progressing',
      `Waiting for daemon set "${o.metadata.name}" rollout to finish: ${num(st['numberAvailable'])} of ${desired} updated pods are available...`,
    );
  }
  return h('Healthy');
}

function replicaSetHealth(o: KubeObject): HealthStatus {
  const st = rec(o['status']);
  if (num(o.metadata['generation']) > num(st['observedGeneration'])) {
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

function podHealth(o: KubeObject): HealthStatus {
  const spec = rec(o['spec']);
  const st = rec(o['status']);
  const message = str(st['message']);
  // A Pod that runs to completion (a hook, typically) is judged by its phase, unless it asks to be
  // treated as long-running; hooks may not ask.
  const ignoreRestart = annotationsOf(o)[ANNOTATION_IGNORE_RESTART_POLICY] === 'true' && !isHook(o);
  const policy = str(spec['restartPolicy']) || 'Always';
  const longRunning = policy === 'Always' || ignoreRestart;
  if (longRunning) {
    const bad = arr(st['containerStatuses'])
      .map((c) => rec(rec(c['state'])['waiting']))
      .filter((w) => {
        const r = str(w['reason']);
        return r !== '' && (r.startsWith('Err') || r.endsWith('Error') || r.endsWith('BackOff'));
      });
    if (bad.length) return h('Degraded', bad.map((w) => str(w['message'])).join(', '));
  }
  switch (str(st['phase'])) {
    case 'Pending':
      return h('Progressing', message);
    case 'Succeeded':
      return h('Healthy', message);
    case 'Failed': {
      if (message) return h('Degraded', message);
      for (const c of [...arr(st['initContainerStatuses']), ...arr(st['containerStatuses'])]) {
        const t = rec(c['state'])['terminated'];
        if (t === undefined || t === null) continue;
        const tr = rec(t);
        if (str(tr['message'])) return h('Degraded', str(tr['message']));
        if (tr['reason'] === 'OOMKilled') return h('Degraded', 'OOMKilled');
        if (num(tr['exitCode']) !== 0)
          return h('Degraded', `container "${str(c['name'])}" failed with exit code ${num(tr['exitCode'])}`);
      }
      return h('Degraded');
    }
    case 'Running': {
      if (!longRunning) return h('Progressing', message);
      const ready = arr(st['conditions']).some((c) => c['type'] === 'Ready' && c['status'] === 'True');
      if (ready) return h('Healthy', message);
      if (arr(st['containerStatuses']).some((c) => rec(c['lastState'])['terminated'] !== undefined))
        return h('Degraded', message);
      return h('Progressing', message);
    }
  }
  return h('Unknown', message);
}

function jobHealth(o: KubeObject): HealthStatus {
  let failed = false;
  let complete = false;
  let suspended = false;
  let failMsg = '';
  let message = '';
  for (const c of arr(rec(o['status'])['conditions'])) {
    switch (c['type']) {
      case 'Failed':
        failed = true;
        complete = true;
        failMsg = str(c['message']);
        break;
      case 'Complete':
        complete = true;
        message = str(c['message']);
        break;
      case 'Suspended':
        complete = true;
        message = str(c['message']);
        if (c['status'] === 'True') suspended = true;
        break;
    }
  }
  if (!complete) return h('Progressing', message);
  if (failed) return h('Degraded', failMsg);
  if (suspended) return h('Suspended', message);
  return h('Healthy', message);
}

/** An Argo CD Application (app of apps): its own reported health, Progressing until it has one. */
function applicationHealth(o: KubeObject): HealthStatus {
  const health = rec(rec(o['status'])['health']);
  const status = str(health['status']);
  if (!status) return h('Progressing');
  return h(
    (HEALTH_ORDER as readonly string[]).includes(status) ? (status as HealthStatusCode) : 'Unknown',
    str(health['message']),
  );
}

/** The health of a live object, or null when Argo CD has no check for its kind. */
export function resourceHealth(o: KubeObject): HealthStatus | null {
  // Being deleted (and not a hook held by Argo CD's finalizer): on its way out.
  if (
    o.metadata['deletionTimestamp'] &&
    !(o.metadata['finalizers'] as string[] | undefined)?.includes('argocd.argoproj.io/hook-finalizer')
  ) {
    return h('Progressing', 'Pending deletion');
  }
  const group = groupOf(o.apiVersion);
  const check = CHECKS[`${group}/${o.kind}`];
  return check ? check(o) : null;
}

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
  'apiextensions.k8s.io/CustomResourceDefinition': crdHealth,
  'argoproj.io/Application': applicationHealth,
};

/**
 * An Application's health from its resources' (Argo CD's rule): the worst one wins; missing
 * resources do not count (OutOfSync already says so) unless none exists at all; hooks do not count.
 */
export function aggregateHealth(
  resources: ReadonlyArray<{
    health?: HealthStatus | null | undefined;
    hook?: boolean;
    live: boolean;
    kind: string;
    group: string;
  }>,
): HealthStatus {
  let worst: HealthStatusCode = 'Healthy';
  let any = false;
  let anyLive = false;
  for (const r of resources) {
    if (r.hook) continue;
    any = true;
    if (r.live) anyLive = true;
    if (!r.health || (!r.live && r.health.status === 'Missing')) continue;
    if (
      r.group === 'argoproj.io' &&
      r.kind === 'Application' &&
      (r.health.status === 'Missing' || r.health.status === 'Unknown')
    )
      continue;
    if (isWorse(worst, r.health.status)) worst = r.health.status;
  }
  if (any && !anyLive && isWorse(worst, 'Missing')) worst = 'Missing';
  return { status: worst };
}
