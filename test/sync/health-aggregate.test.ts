// The Application's health from its resources' (Argo CD's controller/health.go setApplicationHealth).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import type { AggregateInput, HealthStatus } from '../../src/sync/health/index.ts';
import { aggregateHealth, healthCheckErrors } from '../../src/sync/health/index.ts';

const live = (annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'x', annotations },
});

function r(
  name: string,
  health: HealthStatus | null,
  o: { live?: KubeObject | null; kind?: string; group?: string; namespace?: string; hook?: boolean } = {},
): AggregateInput {
  return {
    group: o.group ?? 'apps',
    kind: o.kind ?? 'Deployment',
    namespace: o.namespace ?? 'web',
    name,
    health,
    live: o.live === undefined ? live() : o.live,
    ...(o.hook ? { hook: true } : {}),
  };
}

test('the worst health wins and the message names the resources that made it so', () => {
  assert.deepEqual(aggregateHealth([r('a', { status: 'Healthy' }), r('b', { status: 'Progressing' })]), {
    status: 'Progressing',
    message: 'Caused by apps/Deployment:web/b',
  });
  assert.deepEqual(
    aggregateHealth([
      r('a', { status: 'Progressing' }),
      r('b', { status: 'Degraded' }),
      r('c', { status: 'Degraded' }, { group: '', kind: 'Service', namespace: '' }),
    ]),
    { status: 'Degraded', message: 'Caused by apps/Deployment:web/b, Service:c' },
  );
});

test('at most three causes are named, then "and N more"', () => {
  const many = ['a', 'b', 'c', 'd', 'e'].map((n) => r(n, { status: 'Degraded' }));
  assert.deepEqual(aggregateHealth(many), {
    status: 'Degraded',
    message: 'Caused by apps/Deployment:web/a, apps/Deployment:web/b, apps/Deployment:web/c and 2 more',
  });
});

test('all Healthy: no message', () => {
  assert.deepEqual(aggregateHealth([r('a', { status: 'Healthy' })]), { status: 'Healthy' });
  assert.deepEqual(aggregateHealth([]), { status: 'Healthy' });
});

test('argocd.argoproj.io/ignore-healthcheck: "true" leaves the resource out of the aggregate', () => {
  const ignored = live({ 'argocd.argoproj.io/ignore-healthcheck': 'true' });
  assert.deepEqual(
    aggregateHealth([r('a', { status: 'Healthy' }), r('b', { status: 'Degraded' }, { live: ignored })]),
    {
      status: 'Healthy',
    },
  );
  // Any other value is not "true".
  const notIgnored = live({ 'argocd.argoproj.io/ignore-healthcheck': 'yes' });
  assert.equal(aggregateHealth([r('b', { status: 'Degraded' }, { live: notIgnored })]).status, 'Degraded');
});

test('missing resources do not count unless none exists at all; hooks and kinds without health do not count', () => {
  assert.equal(
    aggregateHealth([r('a', { status: 'Healthy' }), r('b', { status: 'Missing' }, { live: null })]).status,
    'Healthy',
  );
  assert.deepEqual(aggregateHealth([r('b', { status: 'Missing' }, { live: null })]), { status: 'Missing' });
  assert.equal(
    aggregateHealth([r('a', { status: 'Healthy' }), r('h', { status: 'Degraded' }, { hook: true })]).status,
    'Healthy',
  );
  const hookLive: KubeObject = { ...live({ 'argocd.argoproj.io/hook': 'PostSync' }) };
  assert.equal(aggregateHealth([r('h', { status: 'Degraded' }, { live: hookLive })]).status, 'Healthy');
  assert.equal(aggregateHealth([r('cm', null, { group: '', kind: 'ConfigMap' })]).status, 'Healthy');
});

test('a child Application Missing or Unknown does not count; Degraded does', () => {
  const app = (status: 'Unknown' | 'Missing' | 'Degraded') =>
    r('child', { status }, { group: 'argoproj.io', kind: 'Application', namespace: 'argocd' });
  assert.equal(aggregateHealth([app('Unknown')]).status, 'Healthy');
  assert.equal(aggregateHealth([app('Missing')]).status, 'Healthy');
  assert.deepEqual(aggregateHealth([app('Degraded')]), {
    status: 'Degraded',
    message: 'Caused by argoproj.io/Application:argocd/child',
  });
});

test('a health with no status (a Lua check that returned nil) counts as nothing', () => {
  assert.deepEqual(aggregateHealth([r('a', { status: '' }), r('b', { status: 'Healthy' })]), { status: 'Healthy' });
});

test('a failed check becomes one comparison error in Argo CD words, with the count of the others', () => {
  const failed = (name: string): AggregateInput =>
    r(name, { status: 'Unknown', message: '<string>:1: boom', error: '<string>:1: boom' }, { kind: 'Certificate' });
  assert.equal(healthCheckErrors([r('ok', { status: 'Healthy' })]), null);
  assert.equal(
    healthCheckErrors([failed('a')]),
    'error setting app health: failed to get resource health for "Certificate" with name "a" in namespace "web": ' +
      'failed to get resource health for web/a: <string>:1: boom',
  );
  assert.equal(
    healthCheckErrors([failed('a'), failed('b'), failed('c')]),
    'error setting app health: see application-controller logs for 2 other errors; most recent error was: ' +
      'failed to get resource health for "Certificate" with name "a" in namespace "web": failed to get resource health for web/a: <string>:1: boom',
  );
  const ignored = { ...failed('i'), live: live({ 'argocd.argoproj.io/ignore-healthcheck': 'true' }) };
  assert.equal(healthCheckErrors([ignored]), null, 'an ignored resource reports no error');
});
