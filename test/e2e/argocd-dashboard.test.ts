// Argo CD's metrics after a real sync on the test control plane, read from the controller's and the
// renderer's /metrics as Prometheus reads them; then Argo CD's own Grafana dashboard (examples/
// dashboard.json of the pinned release, extracted by scripts/argocd-dashboard, never committed):
// every metric its queries select, with every label they filter or group on, is served, but for
// the ones docs/metrics.md lists as not served, and that list is exact.
import { startRedis } from '../support/redis.ts';
import type { TestRedis } from '../support/redis.ts';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { applyRaw, requestOk } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import { customVariables, dashboardQueries, metricUses } from '../support/promql-metrics.ts';
import {
  EVERY_DESTINATION_AS_DEPLOYER,
  IN_CLUSTER,
  NS,
  application,
  guestbookFiles,
  operationPhase,
  startDeployersPlane,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

const root = new URL('../../', import.meta.url).pathname;

/** Labels Prometheus gives every series of a target (the operator's job, namespace, pod, ...). */
const TARGET_LABELS = new Set(['job', 'namespace', 'instance', 'pod', 'service', 'endpoint', 'container']);

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A Prometheus text exposition, strictly: a line that is neither a sample nor HELP/TYPE fails. */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

async function scrape(url: string): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(url);
  assert.equal(res.status, 200, url);
  const text = await res.text();
  return { text, samples: parse(text) };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function dashboardFile(): string {
  const given = process.env['IMPERSYNC_ARGOCD_DASHBOARD'];
  if (given) return given;
  const res = spawnSync('bash', [`${root}scripts/argocd-dashboard`], { encoding: 'utf8', timeout: 10 * 60_000 });
  const file = res.stdout.trim().split('\n').at(-1) ?? '';
  if (res.status !== 0 || file === '')
    throw new Error(
      `Argo CD's dashboard is needed and scripts/argocd-dashboard could not provide it (exit ${res.status}):\n${res.stderr}\n` +
        "Let it reach the Go module proxy (GOPROXY), or set IMPERSYNC_ARGOCD_DASHBOARD to a copy of Argo CD v3.6.1's examples/dashboard.json.",
    );
  return file;
}

/** The rows of docs/metrics.md's list of what the dashboard uses and impersync does not serve. */
function documentedGaps(): string[] {
  const doc = readFileSync(`${root}docs/metrics.md`, 'utf8');
  const start = doc.indexOf('<!-- dashboard-gaps -->');
  const end = doc.indexOf('<!-- /dashboard-gaps -->');
  assert.ok(start >= 0 && end > start, 'docs/metrics.md has the dashboard-gaps section');
  const out: string[] = [];
  for (const line of doc.slice(start, end).split('\n')) {
    const cell = /^\|\s*(`[^|]*?)\s*\|/.exec(line)?.[1];
    if (!cell) continue;
    const names = [...cell.matchAll(/`([^`]+)`/g)].map((x) => x[1] as string);
    const [metric, ...labels] = names;
    if (labels.length === 0) out.push(metric as string);
    else for (const l of labels) out.push(`${metric} by ${l}`);
  }
  return out.sort();
}

let cp: TestControlPlane;
let fx: Fixture;
// Argo CD's cache is written, so that the controller's Redis commands are counted too.
let redis: TestRedis;
let rendererPort: number;
const APP = 'dashboard';

before(async () => {
  redis = await startRedis();
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'metrics',
    projectSpec: { ...EVERY_DESTINATION_AS_DEPLOYER, orphanedResources: { warn: true } },
    namespaces: ['guestbook'],
  });
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-cmd-params-cm', namespace: NS },
    data: {
      'controller.metrics.application.labels': 'team,app.kubernetes.io/part-of',
      'controller.metrics.application.conditions': 'OrphanedResourceWarning,ComparisonError',
      'redis.server': redis.address,
    },
  });
  rendererPort = await freePort();
  fx = await startFixture(cp, guestbookFiles(), {
    rendererFlags: [`--metrics-listen=127.0.0.1:${rendererPort}`],
    // As `impersync run` has them: the process metrics, which the dashboard's controller panels read.
    defaultMetrics: true,
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
  await redis?.stop();
});

const controllerMetrics = () => scrape(`http://127.0.0.1:${fx.controller.health?.port}/metrics`);
const rendererMetrics = () => scrape(`http://127.0.0.1:${rendererPort}/metrics`);
const find = (samples: Sample[], name: string, labels: Record<string, string>) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

test("after a sync: Argo CD's application, sync, reconcile, request, cluster and git metrics, with its labels", async () => {
  // An object no Application tracks, for the orphaned count; then the Application, automated.
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'stray', namespace: 'guestbook' },
    data: { a: '1' },
  });
  const app = application(APP, fx.repo.url, { project: 'metrics' }) as KubeObject & {
    metadata: { labels?: Record<string, string> };
  };
  app.metadata.labels = { team: 'shop-front', 'app.kubernetes.io/part-of': 'shop' };
  await applyRaw(cp.admin, app);
  await waitForApp(
    cp,
    APP,
    'synced, healthy, its sync Succeeded',
    (a) =>
      operationPhase(a) === 'Succeeded' &&
      (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced' &&
      (a.status?.['health'] as { status?: string } | undefined)?.status === 'Healthy',
    120_000,
  );
  // A live edit: a watch event on the destination, healed by the automated sync.
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: '/api/v1/namespaces/guestbook/configmaps/guestbook-config',
    contentType: 'application/merge-patch+json',
    body: { data: { greeting: 'edited' } },
  });
  const ours = { namespace: NS, name: APP, project: 'metrics' };
  let c = await controllerMetrics();
  await until(
    'the cluster event, the orphan count and the synced app in /metrics',
    async () => {
      c = await controllerMetrics();
      return (
        find(c.samples, 'argocd_cluster_events_total', { server: IN_CLUSTER, group: '', kind: 'ConfigMap' }).length >
          0 &&
        find(c.samples, 'argocd_app_orphaned_resources_count', ours).some((s) => s.value >= 1) &&
        find(c.samples, 'argocd_app_info', { ...ours, sync_status: 'Synced', health_status: 'Healthy' }).length === 1
      );
    },
    60_000,
  );
  const info = find(c.samples, 'argocd_app_info', ours);
  assert.equal(info.length, 1);
  assert.deepEqual(info[0]?.labels, {
    ...ours,
    autosync_enabled: 'true',
    repo: fx.repo.url.toLowerCase().replace(/\.git$/, ''),
    dest_server: IN_CLUSTER,
    dest_namespace: 'guestbook',
    sync_status: 'Synced',
    health_status: 'Healthy',
    hydrator_status: '',
    operation: '',
    phase: 'Succeeded',
  });
  assert.deepEqual(find(c.samples, 'argocd_app_labels', ours)[0]?.labels, {
    ...ours,
    label_team: 'shop-front',
    label_app_kubernetes_io_part_of: 'shop',
  });
  assert.equal(find(c.samples, 'argocd_app_condition', { ...ours, condition: 'OrphanedResourceWarning' })[0]?.value, 1);
  const synced = find(c.samples, 'argocd_app_sync_total', {
    ...ours,
    dest_server: IN_CLUSTER,
    phase: 'Succeeded',
    dry_run: 'false',
  });
  assert.ok((synced[0]?.value ?? 0) >= 1, 'argocd_app_sync_total');
  assert.equal(
    find(c.samples, 'argocd_app_sync_duration_seconds_total', { ...ours, dest_server: IN_CLUSTER }).length,
    1,
  );
  assert.ok(
    (find(c.samples, 'argocd_app_reconcile_count', { namespace: NS, dest_server: IN_CLUSTER })[0]?.value ?? 0) >= 1,
  );
  // The sync's server-side apply of the ConfigMap, as the project's ServiceAccount, counted for the Application.
  const patches = find(c.samples, 'argocd_app_k8s_request_total', {
    ...ours,
    server: IN_CLUSTER,
    verb: 'Patch',
    resource_kind: 'configmaps',
    resource_namespace: 'guestbook',
    dry_run: 'false',
  });
  assert.ok(
    patches.some((s) => s.labels['response_code'] === '200' || s.labels['response_code'] === '201'),
    JSON.stringify(find(c.samples, 'argocd_app_k8s_request_total', ours).map((s) => s.labels)),
  );
  const cluster = { server: IN_CLUSTER };
  assert.equal(find(c.samples, 'argocd_cluster_info', { ...cluster, name: 'in-cluster' })[0]?.value, 1);
  assert.match(find(c.samples, 'argocd_cluster_info', cluster)[0]?.labels['k8s_version'] ?? '', /^v1\.\d+\.\d+/);
  assert.equal(find(c.samples, 'argocd_cluster_connection_status', cluster)[0]?.value, 1);
  assert.ok((find(c.samples, 'argocd_cluster_api_resource_objects', cluster)[0]?.value ?? 0) >= 2);
  assert.ok((find(c.samples, 'argocd_cluster_api_resources', cluster)[0]?.value ?? 0) >= 1);
  assert.ok((find(c.samples, 'argocd_cluster_cache_age_seconds', cluster)[0]?.value ?? -1) >= 0);
  assert.equal(find(c.samples, 'workqueue_depth', { name: 'app_reconciliation_queue' }).length, 1);
  assert.equal(find(c.samples, 'workqueue_depth', { name: 'app_operation_processing_queue' }).length, 1);
  assert.equal(find(c.samples, 'process_cpu_seconds_total', {}).length, 1, "the controller's own");
  assert.equal(find(c.samples, 'impersync_process_cpu_seconds_total', {}).length, 1);
  // impersync's own are still there.
  assert.ok(find(c.samples, 'impersync_syncs_total', { phase: 'Succeeded' }).length === 1);

  const r = await rendererMetrics();
  for (const type of ['ls-remote', 'fetch']) {
    assert.ok((find(r.samples, 'argocd_git_request_total', { request_type: type })[0]?.value ?? 0) >= 1, type);
    assert.ok(
      find(r.samples, 'argocd_git_request_duration_seconds_bucket', { request_type: type, le: '+Inf' }).length >= 1,
    );
  }
});

test('attack: repository URLs with a password and exposition syntax become escaped label values without the password', async () => {
  // One the renderer cannot parse as a URL (the controller's argocd_app_info still names it), one
  // it tries (and fails to reach): the renderer's git metrics name that one.
  const hostile = 'https://user:s3cret-token@127.0.0.1:1/r.git" } 1\nevil_metric{a="b"} 1\n# TYPE evil_metric gauge';
  const tried = 'https://user:s3cret-token@127.0.0.1:1/tried.git';
  await applyRaw(cp.admin, application('hostile', hostile, { project: 'metrics', automated: false }));
  await applyRaw(cp.admin, application('tried', tried, { project: 'metrics', automated: false }));
  let c = await controllerMetrics();
  let r = await rendererMetrics();
  await until(
    "both Applications in argocd_app_info, and the renderer's ls-remote of the one it tried",
    async () => {
      c = await controllerMetrics();
      r = await rendererMetrics();
      return (
        find(c.samples, 'argocd_app_info', { name: 'hostile' }).length === 1 &&
        find(c.samples, 'argocd_app_info', { name: 'tried' }).length === 1 &&
        r.samples.some((s) => s.name === 'argocd_git_request_total' && s.labels['repo']?.includes('tried'))
      );
    },
    60_000,
  );
  for (const text of [c.text, r.text]) {
    assert.ok(!text.includes('s3cret-token'), 'the password is not shown');
    assert.ok(!text.split('\n').some((l) => l.startsWith('evil_metric') || l.includes('TYPE evil_metric')), text);
  }
  const repo = find(c.samples, 'argocd_app_info', { name: 'hostile' })[0]?.labels['repo'] ?? '';
  assert.ok(repo.startsWith('https://user:***@127.0.0.1:1/r.git" } 1\nevil_metric'), repo);
  const git = r.samples.find((s) => s.name === 'argocd_git_request_total' && s.labels['repo']?.includes('tried'));
  assert.equal(git?.labels['repo'], 'https://user:***@127.0.0.1:1/tried.git');
  for (const name of ['hostile', 'tried'])
    await requestOk(cp.admin, {
      method: 'DELETE',
      path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/${name}`,
    });
});

test("Argo CD's dashboard: every metric and label its queries use is served, but the documented ones", async () => {
  const dashboard = JSON.parse(readFileSync(dashboardFile(), 'utf8')) as Parameters<typeof dashboardQueries>[0];
  const vars = customVariables(dashboard);
  const queries = dashboardQueries(dashboard);
  assert.ok(queries.length >= 40, `${queries.length} queries`);
  const served = [...(await controllerMetrics()).samples, ...(await rendererMetrics()).samples];
  const gaps = new Set<string>();
  const checked = new Set<string>();
  for (const q of queries)
    for (const use of metricUses(q, vars)) {
      const found = served.filter((s) => s.name === use.metric);
      if (found.length === 0) {
        gaps.add(use.metric);
        continue;
      }
      for (const label of use.labels) {
        checked.add(`${use.metric} by ${label}`);
        if (!TARGET_LABELS.has(label) && !found.some((s) => label in s.labels)) gaps.add(`${use.metric} by ${label}`);
      }
    }
  assert.deepEqual([...gaps].sort(), documentedGaps(), 'docs/metrics.md lists exactly what is not served');
  // The check did look at Argo CD's own labels (and not only the target's).
  for (const used of [
    'argocd_app_info by dest_server',
    'argocd_app_info by health_status',
    'argocd_app_sync_total by phase',
    'argocd_app_k8s_request_total by resource_kind',
    'argocd_git_request_total by request_type',
    'argocd_cluster_events_total by server',
  ])
    assert.ok(checked.has(used), used);
});
