// Argo CD's metrics as impersync computes them, pure parts: the request description of Argo CD's
// kubeclientmetrics, argocd_app_info's labels, the collectors with settings-given label names and
// tenant-given label values (escaped, never a metric name or a line of their own), the cluster
// gauges, the expiration, the argocd-cmd-params-cm keys and the renderer's git metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { resolveControllerParams } from '../../src/controller/cmd-params.ts';
import { describeRequest, currentPurpose, runFor, runShared } from '../../src/kube/request-context.ts';
import type { ClusterMetricSource } from '../../src/observability/argocd-collectors.ts';
import {
  appInfoLabels,
  appRepo,
  normalizeLabels,
  registerAppCollectors,
  registerClusterCollectors,
} from '../../src/observability/argocd-collectors.ts';
import { createMetrics, observeRedisRequest } from '../../src/observability/metrics.ts';
import { createRendererMetrics } from '../../src/renderer/metrics.ts';

/** Sample lines of an exposition: name, labels text, value. Throws on a line that is neither a sample nor a comment. */
function samples(text: string): { name: string; labels: string; value: number }[] {
  const out: { name: string; labels: string; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${JSON.stringify(line)}`);
    out.push({ name: m[1] as string, labels: m[2] ?? '', value: Number(m[3]) });
  }
  return out;
}

test("describeRequest: Argo CD's verbs, resource and namespace of each request", () => {
  const cases: [string, string, [string, string, string]][] = [
    ['GET', '/api/v1/namespaces/team/configmaps/cfg', ['Get', 'configmaps', 'team']],
    ['GET', '/api/v1/namespaces/team/configmaps', ['List', 'configmaps', 'team']],
    ['GET', '/apis/apps/v1/namespaces/team/deployments?watch=true&resourceVersion=1', ['Watch', 'deployments', 'team']],
    ['GET', '/apis/apps/v1/namespaces/team/deployments?watch=1', ['Watch', 'deployments', 'team']],
    [
      'PATCH',
      '/apis/apps/v1/namespaces/team/deployments/web?fieldManager=argocd-controller',
      ['Patch', 'deployments', 'team'],
    ],
    ['POST', '/api/v1/namespaces/team/pods', ['Create', 'pods', 'team']],
    ['DELETE', '/api/v1/namespaces/team/pods/p', ['Delete', 'pods', 'team']],
    ['PUT', '/api/v1/namespaces/team/pods/p/status', ['Update', 'pods', 'team']],
    ['GET', '/api/v1/namespaces/team', ['Get', 'namespaces', '']],
    ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles', ['List', 'clusterroles', '']],
    ['GET', '/version', ['List', '', '']],
    ['GET', '/api/v1/namespaces/%zz/pods/x', ['Get', 'pods', '%zz']],
  ];
  for (const [method, path, [verb, kind, ns]] of cases)
    assert.deepEqual(describeRequest(method, path), { verb, resourceKind: kind, resourceNamespace: ns }, path);
});

test('the request purpose follows the async chain; a shared watch started inside leaves it', async () => {
  const purpose = { namespace: 'argocd', name: 'a', project: 'p', dryRun: false };
  const seen: (string | undefined)[] = [];
  await runFor(purpose, async () => {
    await new Promise((r) => setTimeout(r, 1));
    seen.push(currentPurpose()?.name);
    runShared(() => seen.push(currentPurpose()?.name));
  });
  seen.push(currentPurpose()?.name);
  assert.deepEqual(seen, ['a', undefined, undefined]);
});

test("normalizeLabels is Argo CD's (its own test table)", () => {
  assert.deepEqual(
    normalizeLabels('prefix', [
      'already_normalized',
      'replace-dash',
      'replace$unallowed_char',
      'app.kubernetes.instance/test',
      '',
      '-starts-with_dash',
    ]),
    [
      'prefix_already_normalized',
      'prefix_replace_dash',
      'prefix_replace_unallowed_char',
      'prefix_app_kubernetes_instance_test',
      'prefix_',
      'prefix__starts_with_dash',
    ],
  );
});

test("argocd_app_info's labels: Argo CD's defaults, autosync, operation, phase and the normalised repository", () => {
  const bare = appInfoLabels({
    raw: { metadata: { namespace: 'argocd', name: 'a' }, spec: { source: { repoURL: 'https://G.example/Org/R.git' } } },
    destServer: '',
  });
  assert.deepEqual(bare, {
    namespace: 'argocd',
    name: 'a',
    project: 'default',
    autosync_enabled: 'false',
    repo: 'https://g.example/org/r',
    dest_server: '',
    dest_namespace: '',
    sync_status: 'Unknown',
    health_status: 'Unknown',
    hydrator_status: '',
    operation: '',
    phase: '',
  });
  const busy = appInfoLabels({
    raw: {
      metadata: { namespace: 'argocd', name: 'b' },
      spec: {
        project: 'team',
        sources: [{ repoURL: 'git@github.com:org/repo.git' }],
        destination: { namespace: 'web' },
        syncPolicy: { automated: {} },
      },
      operation: { sync: {} },
      status: {
        sync: { status: 'OutOfSync' },
        health: { status: 'Progressing' },
        operationState: { phase: 'Running' },
      },
    },
    destServer: 'https://kubernetes.default.svc',
  });
  assert.equal(busy.autosync_enabled, 'true');
  assert.equal(busy.operation, 'sync');
  assert.equal(busy.phase, 'Running');
  assert.equal(busy.repo, 'git@github.com/org/repo');
  assert.equal(busy.dest_server, 'https://kubernetes.default.svc');
  const disabled = appInfoLabels({
    raw: { metadata: { name: 'c', deletionTimestamp: 'x' }, spec: { syncPolicy: { automated: { enabled: false } } } },
    destServer: '',
  });
  assert.equal(disabled.autosync_enabled, 'false');
  assert.equal(disabled.operation, 'delete');
});

test('attack: a password in an Application repoURL does not reach the metrics', () => {
  // Argo CD would show the URL as written; the password is hidden here (a token in https://<token>@ too).
  assert.equal(
    appRepo({ source: { repoURL: 'https://user:s3cret@git.example/r.git' } }),
    'https://user:***@git.example/r',
  );
  assert.equal(appRepo({ source: { repoURL: 'https://s3cret@git.example/r.git' } }), 'https://***@git.example/r');
});

test('attack: tenant label values, names and conditions stay label values; settings give the label names', async () => {
  const registry = new Registry();
  const warnings: string[] = [];
  registerAppCollectors(registry, {
    apps: () => [
      {
        raw: {
          metadata: {
            namespace: 'argocd',
            name: 'x"} evil_metric 1\n',
            labels: { team: 'a"b\\c\nevil_metric{a="b"} 1', 'app.kubernetes.io/part-of': 'shop' },
          },
          spec: { project: 'p', source: { repoURL: 'https://h/r"\nevil_metric 1' } },
          status: {
            conditions: [
              { type: 'SyncError', message: 'boom' },
              { type: 'SyncError', message: 'again' },
              { type: 'ComparisonError', message: 'not asked for' },
            ],
          },
        },
        destServer: 'https://kubernetes.default.svc',
      },
    ],
    appLabels: ['team', 'app.kubernetes.io/part-of', 'app-kubernetes-io/part-of', 'missing'],
    appConditions: ['SyncError', 'OrphanedResourceWarning'],
    warn: (m) => warnings.push(m),
  });
  const text = await registry.metrics();
  const all = samples(text);
  assert.deepEqual([...new Set(all.map((s) => s.name))].sort(), [
    'argocd_app_condition',
    'argocd_app_info',
    'argocd_app_labels',
  ]);
  assert.ok(!text.split('\n').some((l) => l.startsWith('evil_metric')), text);
  const labels = all.find((s) => s.name === 'argocd_app_labels');
  assert.ok(labels?.labels.includes('label_team="a\\"b\\\\c\\nevil_metric{a=\\"b\\"} 1"'), labels?.labels);
  assert.ok(labels?.labels.includes('label_app_kubernetes_io_part_of="shop"'));
  assert.ok(labels?.labels.includes('label_missing=""'));
  assert.deepEqual(warnings, [
    "metrics label 'app-kubernetes-io/part-of' is left out: its Prometheus name 'label_app_kubernetes_io_part_of' is already taken",
  ]);
  const conditions = all.filter((s) => s.name === 'argocd_app_condition');
  assert.equal(conditions.length, 1, 'only the asked-for types that are present');
  assert.ok(conditions[0]?.labels.includes('condition="SyncError"'));
  assert.equal(conditions[0]?.value, 2);
});

test('argocd_app_labels and argocd_app_condition exist only when asked for; the Applications are read at each scrape', async () => {
  const registry = new Registry();
  let apps = [{ raw: { metadata: { namespace: 'argocd', name: 'a' }, spec: {} }, destServer: '' }];
  registerAppCollectors(registry, { apps: () => apps });
  const first = samples(await registry.metrics());
  assert.deepEqual(
    first.map((s) => s.name),
    ['argocd_app_info'],
  );
  apps = [];
  assert.deepEqual(samples(await registry.metrics()), [], 'a deleted Application leaves no series');
});

test('the cluster gauges: one series each per destination; cache age -1 without watches; labels when asked for', async () => {
  const registry = new Registry();
  const now = 1_000_000;
  registerClusterCollectors(registry, {
    now: () => now,
    clusters: async (): Promise<ClusterMetricSource[]> => [
      {
        server: 'https://a',
        name: 'a',
        k8sVersion: 'v1.34.3',
        resourcesCount: 7,
        apisCount: 2,
        cacheSince: now - 90_500,
        connected: true,
        labels: { env: 'prod' },
      },
      {
        server: 'https://b',
        name: 'b',
        k8sVersion: '',
        resourcesCount: 0,
        apisCount: 0,
        cacheSince: undefined,
        connected: false,
        labels: {},
      },
    ],
    clusterLabels: ['env'],
  });
  const all = samples(await registry.metrics());
  const value = (name: string, server: string) =>
    all.find((s) => s.name === name && s.labels.includes(`server="${server}"`))?.value;
  assert.equal(value('argocd_cluster_info', 'https://a'), 1);
  assert.equal(value('argocd_cluster_api_resource_objects', 'https://a'), 7);
  assert.equal(value('argocd_cluster_api_resources', 'https://a'), 2);
  assert.equal(value('argocd_cluster_cache_age_seconds', 'https://a'), 90);
  assert.equal(value('argocd_cluster_cache_age_seconds', 'https://b'), -1);
  assert.equal(value('argocd_cluster_connection_status', 'https://a'), 1);
  assert.equal(value('argocd_cluster_connection_status', 'https://b'), 0);
  assert.ok(
    all.some(
      (s) => s.name === 'argocd_cluster_labels' && s.labels === '{server="https://a",name="a",label_env="prod"}',
    ),
  );
  assert.ok(all.some((s) => s.name === 'argocd_cluster_info' && s.labels.includes('k8s_version="v1.34.3"')));
});

test("Argo CD's counters and histograms: its names, label names and buckets; expiration clears them", async () => {
  const m = createMetrics();
  const app = { namespace: 'argocd', name: 'a', project: 'p' };
  m.argocd.appSync.inc({ ...app, dest_server: 's', phase: 'Succeeded', dry_run: 'false' });
  m.argocd.appSyncDuration.inc({ ...app, dest_server: 's' }, 3);
  m.argocd.reconcile.observe({ namespace: 'argocd', dest_server: 's' }, 3);
  m.argocd.orphanedResources.set(app, 2);
  observeRedisRequest(m.argocd, 'GET', false, 0.02);
  const text = await m.registry.metrics();
  assert.match(text, /^# TYPE argocd_app_reconcile histogram$/m);
  const buckets = [...text.matchAll(/^argocd_app_reconcile_bucket\{le="([^"]+)"/gm)].map((x) => x[1]);
  assert.deepEqual(buckets, ['0.25', '0.5', '1', '2', '4', '8', '16', '+Inf']);
  assert.match(
    text,
    /^argocd_app_sync_total\{namespace="argocd",name="a",project="p",dest_server="s",phase="Succeeded",dry_run="false"\} 1$/m,
  );
  assert.match(
    text,
    /^argocd_app_sync_duration_seconds_total\{namespace="argocd",name="a",project="p",dest_server="s"\} 3$/m,
  );
  assert.match(
    text,
    /^argocd_redis_request_total\{hostname="[^"]+",initiator="argocd-application-controller",command="GET",failed="false"\} 1$/m,
  );
  assert.match(text, /^argocd_info\{version="[^"]+"\} 1$/m);
  m.argocd.expire();
  const after = await m.registry.metrics();
  for (const name of ['argocd_app_sync_total{', 'argocd_app_reconcile_bucket{', 'argocd_app_orphaned_resources_count{'])
    assert.ok(!after.includes(name), name);
  assert.match(after, /^argocd_info\{/m, 'the version stays');
});

test('argocd-cmd-params-cm: the metrics keys are read as Argo CD reads them', () => {
  const p = resolveControllerParams({
    data: {
      'controller.metrics.cache.expiration': '24h0m0s',
      'controller.metrics.application.labels': 'team, app.kubernetes.io/part-of,',
      'controller.metrics.application.conditions': 'SyncError,OrphanedResourceWarning',
    },
    env: { ARGOCD_APPLICATION_CONTROLLER_METRICS_CLUSTER_LABELS: 'env' },
  });
  assert.deepEqual(p.metrics, {
    cacheExpirationMs: 86_400_000,
    applicationLabels: ['team', 'app.kubernetes.io/part-of'],
    applicationConditions: ['SyncError', 'OrphanedResourceWarning'],
    clusterLabels: ['env'],
  });
  assert.deepEqual(
    p.warnings.filter((w) => w.includes('metrics')),
    [],
  );
  assert.equal(
    resolveControllerParams({ data: { 'controller.metrics.cache.expiration': '2d' }, env: {} }).metrics
      .cacheExpirationMs,
    2 * 86_400_000,
  );
  const bad = resolveControllerParams({ data: { 'controller.metrics.cache.expiration': 'soon' }, env: {} });
  assert.equal(bad.metrics.cacheExpirationMs, 0);
  assert.deepEqual(bad.warnings, [
    "Could not parse 'soon' as a duration from environment ARGOCD_APPLICATION_CONTROLLER_METRICS_CACHE_EXPIRATION (argocd-cmd-params-cm controller.metrics.cache.expiration)",
  ]);
});

test("the renderer's git metrics: counted when a request starts, timed when it ends, with Argo CD's buckets", async () => {
  const m = createRendererMetrics();
  const done = m.onGitRequest('https://***@git.example/r', 'ls-remote');
  let text = await m.registry.metrics();
  assert.match(
    text,
    /^argocd_git_request_total\{repo="https:\/\/\*\*\*@git.example\/r",request_type="ls-remote"\} 1$/m,
  );
  assert.ok(!text.includes('argocd_git_request_duration_seconds_count{'), 'not timed before it ends');
  done();
  m.onGitRequest('https://***@git.example/r', 'fetch')();
  text = await m.registry.metrics();
  const buckets = [
    ...text.matchAll(/^argocd_git_request_duration_seconds_bucket\{le="([^"]+)",repo="[^"]+",request_type="fetch"\}/gm),
  ].map((x) => x[1]);
  assert.deepEqual(buckets, ['0.1', '0.25', '0.5', '1', '2', '4', '10', '20', '+Inf']);
});

test('impersync renderer --metrics-listen must be host:port', async () => {
  const { main } = await import('../../src/cli/renderer.ts');
  const written: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    for (const bad of ['8084', 'unix:/tmp/x', 'host:port', '0.0.0.0:8084; rm -rf /'])
      assert.equal(await main(['--listen=127.0.0.1:0', '--token-stdin', `--metrics-listen=${bad}`]), 2, bad);
  } finally {
    process.stderr.write = write;
  }
  assert.ok(
    written.every((w) => w.includes('--metrics-listen must be host:port')),
    written.join(''),
  );
  assert.equal(written.length, 4);
});

test("a deleted Application's series go; another Application's stay", async () => {
  const m = createMetrics();
  for (const name of ['gone', 'kept']) {
    const app = { namespace: 'argocd', name, project: 'p' };
    m.argocd.appSync.inc({ ...app, dest_server: 's', phase: 'Succeeded', dry_run: 'false' });
    m.argocd.appSyncDuration.inc({ ...app, dest_server: 's' }, 1);
    m.argocd.orphanedResources.set(app, 0);
    m.argocd.appK8sRequests.inc({
      ...app,
      server: 's',
      response_code: '200',
      verb: 'Get',
      resource_kind: 'pods',
      resource_namespace: 'x',
      dry_run: 'false',
    });
  }
  await m.argocd.forgetApp('argocd', 'gone');
  const text = await m.registry.metrics();
  assert.ok(!text.includes('name="gone"'), text);
  assert.equal(text.match(/name="kept"/g)?.length, 4);
});
