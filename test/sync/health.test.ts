import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { builtinHealth as resourceHealth } from '../../src/sync/health/index.ts';

const o = (
  apiVersion: string,
  kind: string,
  rest: Record<string, unknown> = {},
  meta: Record<string, unknown> = {},
): KubeObject => ({ apiVersion, kind, metadata: { name: 'x', ...meta }, ...rest });
const status = (obj: KubeObject) => resourceHealth(obj)?.status;

test('Deployment: paused, rollout pending, deadline exceeded, available', () => {
  const d = (spec: Record<string, unknown>, st: Record<string, unknown>, generation = 1) =>
    o('apps/v1', 'Deployment', { spec, status: st }, { generation });
  assert.equal(status(d({ paused: true }, {})), 'Suspended');
  assert.deepEqual(resourceHealth(d({ replicas: 1 }, { observedGeneration: 1 }, 2)), {
    status: 'Progressing',
    message: 'Waiting for rollout to finish: observed deployment generation less than desired generation',
  });
  assert.deepEqual(resourceHealth(d({ replicas: 2 }, { observedGeneration: 1, updatedReplicas: 1 })), {
    status: 'Progressing',
    message: 'Waiting for rollout to finish: 1 out of 2 new replicas have been updated...',
  });
  assert.equal(
    status(
      d(
        { replicas: 1 },
        { observedGeneration: 1, conditions: [{ type: 'Progressing', reason: 'ProgressDeadlineExceeded' }] },
      ),
    ),
    'Degraded',
  );
  assert.equal(
    status(d({ replicas: 1 }, { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 0 })),
    'Progressing',
  );
  assert.equal(
    status(d({ replicas: 1 }, { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1 })),
    'Healthy',
  );
});

test('StatefulSet, DaemonSet, ReplicaSet', () => {
  const sts = (st: Record<string, unknown>, strategy: Record<string, unknown> = { type: 'RollingUpdate' }) =>
    o('apps/v1', 'StatefulSet', { spec: { replicas: 2, updateStrategy: strategy }, status: st }, { generation: 1 });
  assert.equal(status(sts({})), 'Progressing');
  assert.equal(status(sts({ observedGeneration: 1, readyReplicas: 1 })), 'Progressing');
  assert.equal(
    status(sts({ observedGeneration: 1, readyReplicas: 2, currentRevision: 'a', updateRevision: 'b' })),
    'Progressing',
  );
  assert.equal(
    status(sts({ observedGeneration: 1, readyReplicas: 2, currentRevision: 'a', updateRevision: 'a' })),
    'Healthy',
  );
  assert.equal(status(sts({ observedGeneration: 1, readyReplicas: 2 }, { type: 'OnDelete' })), 'Healthy');
  const ds = (st: Record<string, unknown>) => o('apps/v1', 'DaemonSet', { spec: {}, status: st }, { generation: 1 });
  assert.equal(
    status(ds({ observedGeneration: 1, desiredNumberScheduled: 2, updatedNumberScheduled: 1 })),
    'Progressing',
  );
  assert.equal(
    status(ds({ observedGeneration: 1, desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2 })),
    'Healthy',
  );
  const rs = (st: Record<string, unknown>) =>
    o('apps/v1', 'ReplicaSet', { spec: { replicas: 1 }, status: st }, { generation: 1 });
  assert.deepEqual(
    resourceHealth(
      rs({ observedGeneration: 1, conditions: [{ type: 'ReplicaFailure', status: 'True', message: 'quota' }] }),
    ),
    { status: 'Degraded', message: 'quota' },
  );
  assert.equal(status(rs({ observedGeneration: 1, availableReplicas: 1 })), 'Healthy');
});

test('Pod: pending, running ready, crash loop, failed, finite pods stay Progressing while running', () => {
  const pod = (st: Record<string, unknown>, restartPolicy = 'Always') =>
    o('v1', 'Pod', { spec: { restartPolicy }, status: st });
  assert.equal(status(pod({ phase: 'Pending' })), 'Progressing');
  assert.equal(status(pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] })), 'Healthy');
  assert.deepEqual(
    resourceHealth(
      pod({
        phase: 'Running',
        containerStatuses: [{ state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off' } } }],
      }),
    ),
    { status: 'Degraded', message: 'back-off' },
  );
  assert.equal(status(pod({ phase: 'Running' }, 'Never')), 'Progressing');
  assert.equal(status(pod({ phase: 'Succeeded' }, 'Never')), 'Healthy');
  assert.deepEqual(
    resourceHealth(
      pod({ phase: 'Failed', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 3 } } }] }, 'Never'),
    ),
    { status: 'Degraded', message: 'container "main" failed with exit code 3' },
  );
  assert.equal(status(pod({})), 'Unknown');
});

test('Service, Ingress, PVC', () => {
  assert.equal(status(o('v1', 'Service', { spec: { type: 'ClusterIP' } })), 'Healthy');
  assert.equal(
    status(o('v1', 'Service', { spec: { type: 'LoadBalancer' }, status: { loadBalancer: {} } })),
    'Progressing',
  );
  assert.equal(
    status(
      o('v1', 'Service', {
        spec: { type: 'LoadBalancer' },
        status: { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } },
      }),
    ),
    'Healthy',
  );
  assert.equal(status(o('networking.k8s.io/v1', 'Ingress', { status: { loadBalancer: {} } })), 'Progressing');
  assert.equal(
    status(o('networking.k8s.io/v1', 'Ingress', { status: { loadBalancer: { ingress: [{ hostname: 'h' }] } } })),
    'Healthy',
  );
  assert.equal(status(o('v1', 'PersistentVolumeClaim', { status: { phase: 'Pending' } })), 'Progressing');
  assert.equal(status(o('v1', 'PersistentVolumeClaim', { status: { phase: 'Bound' } })), 'Healthy');
  assert.equal(status(o('v1', 'PersistentVolumeClaim', { status: { phase: 'Lost' } })), 'Degraded');
});

test('Job: running, complete, failed, suspended', () => {
  const job = (conditions: unknown[]) => o('batch/v1', 'Job', { status: { conditions } });
  assert.equal(status(job([])), 'Progressing');
  assert.equal(status(job([{ type: 'Complete', status: 'True' }])), 'Healthy');
  assert.equal(status(job([{ type: 'Failed', status: 'True', message: 'm' }])), 'Degraded');
  assert.equal(status(job([{ type: 'Suspended', status: 'True' }])), 'Suspended');
});

test('CRD: established, installing, names not accepted, no conditions', () => {
  const crd = (conditions: unknown[]) =>
    o('apiextensions.k8s.io/v1', 'CustomResourceDefinition', { status: { conditions } });
  assert.deepEqual(resourceHealth(crd([{ type: 'Established', status: 'True' }])), {
    status: 'Healthy',
    message: 'CRD is healthy',
  });
  assert.equal(status(crd([{ type: 'Established', status: 'False', reason: 'Installing' }])), 'Progressing');
  assert.equal(status(crd([{ type: 'NamesAccepted', status: 'False', message: 'taken' }])), 'Degraded');
  assert.equal(status(crd([])), 'Progressing');
  assert.equal(status(crd([{ type: 'NamesAccepted', status: 'True' }])), 'Degraded');
});

test('Application (app of apps): no built-in health, as in Argo CD since 1.8', () => {
  assert.equal(
    resourceHealth(o('argoproj.io/v1alpha1', 'Application', { status: { health: { status: 'Degraded' } } })),
    null,
  );
});

test('an object without metadata, or with metadata of the wrong shape, is assessed without throwing', () => {
  const bare = { apiVersion: 'apps/v1', kind: 'Deployment', spec: { replicas: 1 } } as unknown as KubeObject;
  assert.deepEqual(resourceHealth(bare), {
    status: 'Progressing',
    message: 'Waiting for rollout to finish: 0 out of 1 new replicas have been updated...',
  });
  const odd = { apiVersion: 'v1', kind: 'Pod', metadata: 'x', status: { phase: 'Pending' } } as unknown as KubeObject;
  assert.equal(resourceHealth(odd)?.status, 'Progressing');
});

test('objects being deleted are Progressing; kinds without a check have no health', () => {
  assert.deepEqual(resourceHealth(o('v1', 'Service', { spec: {} }, { deletionTimestamp: '2024-01-01T00:00:00Z' })), {
    status: 'Progressing',
    message: 'Pending deletion',
  });
  assert.equal(resourceHealth(o('v1', 'ConfigMap')), null);
});
