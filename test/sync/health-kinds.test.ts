// Table tests for the built-in checks added for issue 15, case by case as gitops-engine's
// health_test.go and Argo CD's bundled checks' health_test.yaml list them: the object, the state,
// the message.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { builtinHealth } from '../../src/sync/health/index.ts';

type Case = [name: string, obj: KubeObject, status: string, message: string | undefined];

const obj = (apiVersion: string, kind: string, rest: Record<string, unknown>, meta: Record<string, unknown> = {}) =>
  ({ apiVersion, kind, metadata: { name: 'x', namespace: 'ns', ...meta }, ...rest }) as KubeObject;

function table(cases: Case[]): void {
  for (const [name, o, status, message] of cases) {
    const got = builtinHealth(o);
    assert.equal(got?.status, status, `${name}: status`);
    assert.equal(got?.message, message, `${name}: message`);
  }
}

const hpaCondition = (type: string, status: string, reason: string, message: string) => ({
  type,
  status,
  reason,
  message,
});

test('HorizontalPodAutoscaler autoscaling/v2: conditions decide; failures degrade, AbleToScale or ScalingLimited heal', () => {
  const hpa = (conditions: unknown[]) => obj('autoscaling/v2', 'HorizontalPodAutoscaler', { status: { conditions } });
  table([
    [
      'healthy',
      hpa([
        hpaCondition('AbleToScale', 'True', 'ReadyForNewScale', 'recommended size matches current size'),
        hpaCondition('ScalingActive', 'True', 'ValidMetricFound', 'the HPA was able to compute the replica count'),
      ]),
      'Healthy',
      'recommended size matches current size',
    ],
    [
      'degraded: a metric cannot be read',
      hpa([
        hpaCondition('AbleToScale', 'True', 'SucceededGetScale', 'the HPA controller was able to get the target'),
        hpaCondition('ScalingActive', 'False', 'FailedGetResourceMetric', 'unable to get metrics for resource cpu'),
      ]),
      'Degraded',
      'unable to get metrics for resource cpu',
    ],
    ['progressing: no conditions yet', hpa([]), 'Progressing', 'Waiting to Autoscale'],
    [
      'progressing: not able to scale for a reason not on the failure list',
      hpa([
        hpaCondition(
          'AbleToScale',
          'False',
          'BackoffBoth',
          'the time since the previous scale is still within the window',
        ),
      ]),
      'Progressing',
      'Waiting to Autoscale',
    ],
    [
      'healthy: limited by maxReplicas (ScalingLimited True)',
      hpa([
        hpaCondition('ScalingLimited', 'True', 'TooFewReplicas', 'the desired replica count is more than the maximum'),
      ]),
      'Healthy',
      'the desired replica count is more than the maximum',
    ],
  ]);
});

test('HorizontalPodAutoscaler autoscaling/v1: the conditions annotation, Progressing without it', () => {
  const hpa = (annotation?: string) =>
    obj(
      'autoscaling/v1',
      'HorizontalPodAutoscaler',
      {},
      annotation === undefined ? {} : { annotations: { 'autoscaling.alpha.kubernetes.io/conditions': annotation } },
    );
  table([
    ['no annotation', hpa(), 'Progressing', 'Waiting to Autoscale'],
    ['empty list', hpa('[]'), 'Progressing', 'Waiting to Autoscale'],
    [
      'FailedGetObjectMetric degrades',
      hpa(JSON.stringify([hpaCondition('ScalingActive', 'False', 'FailedGetObjectMetric', 'no object metric')])),
      'Degraded',
      'no object metric',
    ],
    [
      'field names as the API server writes them (capitalised) are read too',
      hpa('[{"Type":"AbleToScale","Status":"True","Reason":"ReadyForNewScale","Message":"ready"}]'),
      'Healthy',
      'ready',
    ],
  ]);
  const broken = builtinHealth(hpa('{not json'));
  assert.equal(broken?.status, 'Unknown');
  assert.match(broken?.message ?? '', /^failed to convert conditions annotation to typed: /);
  assert.equal(broken?.error, broken?.message, 'a failed check is reported as an error too');
});

test('HorizontalPodAutoscaler of a version gitops-engine does not convert is Unknown, with its message', () => {
  assert.deepEqual(builtinHealth(obj('autoscaling/v2beta2', 'HorizontalPodAutoscaler', {})), {
    status: 'Unknown',
    message: 'unsupported HPA GVK: autoscaling/v2beta2, Kind=HorizontalPodAutoscaler',
    error: 'unsupported HPA GVK: autoscaling/v2beta2, Kind=HorizontalPodAutoscaler',
  });
});

test('APIService (v1 and v1beta1): Available True is Healthy, anything else Progressing, as reason: message', () => {
  const api = (version: string, conditions?: unknown[]) =>
    obj(`apiregistration.k8s.io/${version}`, 'APIService', conditions ? { status: { conditions } } : {});
  const available = (status: string, reason: string, message: string) => [
    { type: 'Available', status, reason, message },
  ];
  table([
    ['v1 true', api('v1', available('True', 'Passed', 'all checks passed')), 'Healthy', 'Passed: all checks passed'],
    [
      'v1 false',
      api('v1', available('False', 'MissingEndpoints', 'endpoints for service/metrics-server have no addresses')),
      'Progressing',
      'MissingEndpoints: endpoints for service/metrics-server have no addresses',
    ],
    [
      'v1beta1 true',
      api('v1beta1', available('True', 'Passed', 'all checks passed')),
      'Healthy',
      'Passed: all checks passed',
    ],
    ['no Available condition', api('v1', []), 'Progressing', 'Waiting to be processed'],
    ['no status', api('v1'), 'Progressing', 'Waiting to be processed'],
  ]);
});

test('CronJob: Healthy unless the last run failed; suspended ones Healthy with a note (Argo CD issue 24428)', () => {
  const cron = (spec: Record<string, unknown>, status?: Record<string, unknown>) =>
    obj('batch/v1', 'CronJob', { spec: { schedule: '* * * * *', ...spec }, ...(status ? { status } : {}) });
  const earlier = '2024-05-01T10:00:00Z';
  const later = '2024-05-01T11:00:00Z';
  table([
    ['suspended', cron({ suspend: true }, {}), 'Healthy', 'CronJob is Suspended'],
    ['no status yet', cron({}), 'Progressing', 'Waiting for CronJob'],
    ['never scheduled', cron({}, {}), 'Healthy', 'CronJob has not been scheduled yet'],
    [
      'scheduled, never succeeded',
      cron({}, { lastScheduleTime: later }),
      'Healthy',
      'The CronJob never completed successfully. It may not be healthy',
    ],
    [
      'running again after a failure',
      cron({}, { lastScheduleTime: later, lastSuccessfulTime: earlier, active: [{ name: 'j' }] }),
      'Healthy',
      'The job is running. Its last execution may not have been successful',
    ],
    [
      'last run failed',
      cron({}, { lastScheduleTime: later, lastSuccessfulTime: earlier }),
      'Degraded',
      'CronJob has not completed its last execution successfully',
    ],
    [
      'last run succeeded',
      cron({}, { lastScheduleTime: earlier, lastSuccessfulTime: later }),
      'Healthy',
      'CronJob has completed its last execution successfully',
    ],
  ]);
});

test('PodDisruptionBudget: a False condition degrades unless InsufficientPods; any other makes it Healthy', () => {
  const pdb = (conditions?: unknown[]) =>
    obj('policy/v1', 'PodDisruptionBudget', conditions ? { status: { conditions } } : { status: {} });
  const allowed = (status: string, reason: string) => ({ type: 'DisruptionAllowed', status, reason });
  table([
    ['no status yet', pdb(), 'Progressing', 'Waiting for status'],
    [
      'disruptions allowed',
      pdb([allowed('True', 'SufficientPods')]),
      'Healthy',
      'PodDisruptionBudget has SufficientPods',
    ],
    [
      'too few pods is a valid state',
      pdb([allowed('False', 'InsufficientPods')]),
      'Healthy',
      'PodDisruptionBudget has InsufficientPods',
    ],
    [
      'a sync failure degrades',
      pdb([allowed('False', 'SyncFailed')]),
      'Degraded',
      'PodDisruptionBudget has SyncFailed',
    ],
  ]);
});

test('argoproj.io Workflow: its phase, with the workflow message', () => {
  const wf = (phase?: string, message?: string) =>
    obj('argoproj.io/v1alpha1', 'Workflow', {
      status: { ...(phase ? { phase } : {}), ...(message ? { message } : {}) },
    });
  table([
    ['not started', wf(), 'Progressing', undefined],
    ['pending', wf('Pending'), 'Progressing', undefined],
    ['running', wf('Running', 'This node is running'), 'Progressing', 'This node is running'],
    ['succeeded', wf('Succeeded', 'This node is has succeeded'), 'Healthy', 'This node is has succeeded'],
    ['failed', wf('Failed', 'child failed'), 'Degraded', 'child failed'],
    ['error', wf('Error', 'pod deleted'), 'Degraded', 'pod deleted'],
    ['a phase gitops-engine does not know', wf('Skipped'), 'Unknown', undefined],
  ]);
});

test('Jobs: the suspended message is the condition message (gitops-engine job-suspended.yaml)', () => {
  const job = obj('batch/v1', 'Job', {
    status: { conditions: [{ type: 'Suspended', status: 'True', reason: 'JobSuspended', message: 'Job suspended' }] },
  });
  assert.deepEqual(builtinHealth(job), { status: 'Suspended', message: 'Job suspended' });
});

test('argocd.argoproj.io/ignore-restart-policy: "true" judges a run-to-completion Pod as long-running, never a hook', () => {
  const pod = (annotations: Record<string, string>) =>
    obj(
      'v1',
      'Pod',
      {
        spec: { restartPolicy: 'Never' },
        status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
      },
      { annotations },
    );
  table([
    ['restartPolicy Never, running', pod({}), 'Progressing', undefined],
    [
      'ignore-restart-policy, running and ready',
      pod({ 'argocd.argoproj.io/ignore-restart-policy': 'true' }),
      'Healthy',
      undefined,
    ],
    [
      'a hook may not ask',
      pod({ 'argocd.argoproj.io/ignore-restart-policy': 'true', 'argocd.argoproj.io/hook': 'Sync' }),
      'Progressing',
      undefined,
    ],
  ]);
});
