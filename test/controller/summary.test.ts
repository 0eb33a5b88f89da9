// status.summary as Argo CD's controller gathers it (controller/cache/info.go, ApplicationTree.GetSummary).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applicationSummary } from '../../src/controller/summary.ts';
import { completedMessage } from '../../src/controller/operation.ts';
import { conflictMessage, podReady } from '../../src/controller/argocd-controller.ts';
import type { KubeObject } from '../../src/api/index.ts';

const ingress = (
  spec: Record<string, unknown>,
  annotations?: Record<string, string>,
  status?: unknown,
): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name: 'web', namespace: 'ns', ...(annotations ? { annotations } : {}) },
  spec,
  ...(status ? { status } : {}),
});
const backend = { service: { name: 'web', port: { number: 80 } } };

test('Ingress hosts with their paths, https when TLS covers the host or names a secret, sorted and once each', () => {
  const s = applicationSummary(undefined, [
    ingress({
      rules: [
        {
          host: 'b.example.com',
          http: {
            paths: [
              { path: '/api*', backend },
              { path: '/', backend },
            ],
          },
        },
        { host: 'a.example.com', http: { paths: [{ path: '/', backend }] } },
      ],
      tls: [{ hosts: ['a.example.com'] }],
    }),
    ingress({ rules: [{ host: 'a.example.com', http: { paths: [{ path: '/', backend }] } }] }),
  ]);
  assert.deepEqual(s.externalURLs, [
    'http://a.example.com/',
    'http://b.example.com/',
    'http://b.example.com/api',
    'https://a.example.com/',
  ]);
  const secret = applicationSummary(undefined, [
    ingress({
      rules: [{ host: 'c.example.com', http: { paths: [{ path: '/', backend }] } }],
      tls: [{ secretName: 'x' }],
    }),
  ]);
  assert.deepEqual(secret.externalURLs, ['https://c.example.com/']);
});

test("a rule without a host uses the load balancer's hostname or IP; none at all gives no URL", () => {
  const rules = [{ http: { paths: [{ path: '/x', backend }] } }];
  assert.deepEqual(
    applicationSummary(undefined, [ingress({ rules }, undefined, { loadBalancer: { ingress: [{ ip: '10.0.0.9' }] } })])
      .externalURLs,
    ['http://10.0.0.9/x'],
  );
  assert.equal(applicationSummary(undefined, [ingress({ rules })]).externalURLs, undefined);
});

test('link annotations: http(s) only (a javascript: link is dropped), title|url kept whole; ignore-default-links drops the Ingress URLs', () => {
  const s = applicationSummary({ 'link.argocd.argoproj.io/docs': 'https://docs.example.com' }, [
    ingress(
      { rules: [{ host: 'h.example.com', http: { paths: [{ path: '/', backend }] } }] },
      {
        'link.argocd.argoproj.io/grafana': 'Grafana|https://grafana.example.com/d/1',
        'link.argocd.argoproj.io/evil': 'javascript:alert(1)',
        'argocd.argoproj.io/ignore-default-links': 'true',
      },
    ),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'lb', annotations: { 'link.argocd.argoproj.io/svc': 'http://svc.example.com' } },
      spec: { type: 'LoadBalancer' },
      status: { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } },
    },
  ]);
  assert.deepEqual(s.externalURLs, [
    'Grafana|https://grafana.example.com/d/1',
    'http://svc.example.com',
    'https://docs.example.com',
  ]);
});

test("images: Pods' containers and init containers, the pod templates of workloads and CronJobs, sorted once each; an Application child makes it an app of apps", () => {
  const containers = (...images: string[]) => images.map((image, i) => ({ name: `c${i}`, image }));
  const s = applicationSummary(undefined, [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: { initContainers: containers('init:1'), containers: containers('app:2') },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'd' },
      spec: { template: { spec: { containers: containers('app:2', 'side:3') } } },
    },
    {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'cj' },
      spec: { jobTemplate: { spec: { template: { spec: { containers: containers('cron:4') } } } } },
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' }, data: { image: 'not:me' } },
    { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'child' } },
  ]);
  assert.deepEqual(s.images, ['app:2', 'cron:4', 'init:1', 'side:3']);
  assert.equal(s.isAppOfApps, true);
  assert.deepEqual(applicationSummary(undefined, []), {});
});

test("OperationCompleted's message is Argo CD's, for either outcome, a partial sync and a multi-source one", () => {
  const op = { sync: { revision: 'HEAD' } };
  const base = { operation: op, phase: 'Running', startedAt: '2026-01-01T00:00:00Z' } as never;
  const withResult = (r: Record<string, unknown>, o: Record<string, unknown> = op) =>
    ({
      operation: o,
      phase: 'Running',
      startedAt: '2026-01-01T00:00:00Z',
      syncResult: { resources: [], ...r },
    }) as never;
  assert.equal(
    completedMessage(withResult({ revision: 'abc' }), { phase: 'Succeeded', message: 'ok' }),
    'Sync operation to abc succeeded',
  );
  assert.equal(
    completedMessage(withResult({ revision: 'abc' }), {
      phase: 'Failed',
      message: 'one or more objects failed to apply',
    }),
    'Sync operation to abc failed: one or more objects failed to apply',
  );
  assert.equal(
    completedMessage(
      withResult({ revisions: ['a1', 'b2'] }, { sync: { resources: [{ kind: 'ConfigMap', name: 'x' }] } }),
      {
        phase: 'Succeeded',
        message: '',
      },
    ),
    'Partial sync operation to a1,b2 succeeded',
  );
  assert.equal(
    completedMessage(base, { phase: 'Failed', message: 'Operation terminated' }),
    'Sync operation failed: Operation terminated',
  );
});

test("Argo CD's controller counts as running when one of its Pods is Ready and not being deleted", () => {
  const pod = (name: string, ready: string, deleting = false) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    status: { conditions: [{ type: 'Ready', status: ready }] },
  });
  assert.equal(podReady(pod('a', 'True')), true);
  assert.equal(podReady(pod('a', 'False')), false);
  assert.equal(podReady(pod('a', 'True', true)), false);
  assert.equal(conflictMessage('argocd', [pod('x', 'False')]), undefined);
  assert.match(conflictMessage('argocd', [pod('b', 'True'), pod('a', 'True')]) ?? '', /Ready Pod a, b labelled/);
});
