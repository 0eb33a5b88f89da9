// The install's Redis options for Argo CD's cache, rendered with the real helm and kustomize: off
// by default; Argo CD's argocd-redis (address and its `auth` password); a Redis of the install's
// own, locked down and reachable only by the controller and argocd-server.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../support/index.ts';
import { find, helmTemplate, kustomizeBuild, kustomizeOverlay, runTool, chartDir, kubeVersion } from './render.ts';

type Container = {
  args?: string[];
  env?: Array<{ name: string; valueFrom?: unknown }>;
  securityContext?: Record<string, unknown>;
};
const controller = (objs: KubeObject[], name: string) =>
  (find(objs, 'Deployment', name)['spec'] as { template: { spec: { containers: Container[] } } }).template.spec
    .containers[0] as Container;
const redisArgs = (c: Container) => (c.args ?? []).filter((a) => /^--(redis|sentinel)/.test(a));

test('the chart: no Redis by default; an external one with its password; a Redis of its own, locked down', () => {
  assert.deepEqual(redisArgs(controller(helmTemplate(), 'impersync')), []);
  const external = helmTemplate({
    set: ['redis.address=argocd-redis.argocd.svc:6379', 'redis.passwordSecret.name=argocd-redis'],
  });
  const c = controller(external, 'impersync');
  assert.deepEqual(redisArgs(c), ['--redis=argocd-redis.argocd.svc:6379', '--redis-compress=gzip', '--redisdb=0']);
  assert.deepEqual(c.env?.find((e) => e.name === 'REDIS_PASSWORD')?.valueFrom, {
    secretKeyRef: { name: 'argocd-redis', key: 'auth', optional: true },
  });
  const sentinels = helmTemplate({
    setJson: ['redis.sentinels=["a:26379","b:26379"]'],
    set: ['redis.sentinelMaster=argocd'],
  });
  assert.deepEqual(redisArgs(controller(sentinels, 'impersync')), [
    '--sentinel=a:26379',
    '--sentinel=b:26379',
    '--sentinelmaster=argocd',
    '--redis-compress=gzip',
    '--redisdb=0',
  ]);
  const own = helmTemplate({ set: ['redis.deploy=true'] });
  assert.deepEqual(redisArgs(controller(own, 'impersync')).slice(0, 1), ['--redis=impersync-redis:6379']);
  const redis = controller(own, 'impersync-redis');
  assert.equal(redis.securityContext?.['readOnlyRootFilesystem'], true);
  assert.deepEqual(redis.securityContext?.['capabilities'], { drop: ['ALL'] });
  assert.ok(find(own, 'Service', 'impersync-redis'));
  assert.ok(find(own, 'NetworkPolicy', 'impersync-redis'));
  // A bad address is refused by the chart's schema.
  const bad = runTool('helm', [
    'template',
    'x',
    chartDir,
    '--kube-version',
    kubeVersion,
    '--set',
    'redis.address=no-port',
  ]);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /redis/);
});

test("kustomize components: argocd-redis points at Argo CD's Redis; redis adds a Redis of its own and nothing else", () => {
  const key = (o: KubeObject) => `${o.kind}/${o.metadata.name}`;
  const base = kustomizeBuild('deploy/install');
  assert.deepEqual(redisArgs(controller(base, 'impersync-controller')), []);
  const argo = kustomizeOverlay(['deploy/install'], ['deploy/install/components/argocd-redis']);
  assert.deepEqual(
    argo.map(key).filter((k) => !base.map(key).includes(k)),
    [],
  );
  const c = controller(argo, 'impersync-controller');
  assert.deepEqual(redisArgs(c), ['--redis=argocd-redis:6379']);
  assert.ok(c.env?.some((e) => e.name === 'REDIS_PASSWORD'));
  const own = kustomizeOverlay(['deploy/install'], ['deploy/install/components/redis']);
  assert.deepEqual(
    own
      .map(key)
      .filter((k) => !base.map(key).includes(k))
      .sort(),
    ['Deployment/impersync-redis', 'NetworkPolicy/impersync-redis', 'Service/impersync-redis'],
  );
  assert.deepEqual(redisArgs(controller(own, 'impersync-controller')), ['--redis=impersync-redis:6379']);
});
