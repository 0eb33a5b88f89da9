// Managed objects kept by watches made as the ServiceAccount (src/kube/live-cache.ts): a live
// edit refreshes its Application at once (self-heal in seconds with a one-hour refresh interval);
// a refresh of a synced Application reads the cache and reuses its dry-runs, so it sends no GET and
// no dry-run; an identity that may not list or watch gets the GETs and dry-runs of before.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyRaw,
  createNamespace,
  getRaw,
  grantRole,
  requestOk,
  startControlPlane,
  untilRefused,
} from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import {
  application,
  applySyncedApp,
  deployer,
  getApp,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  operationPhase,
  project,
  refreshApp,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  // An hour: nothing in these tests may be found by the periodic refresh.
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true', 'timeout.reconciliation': '1h' });
  await applyRaw(
    cp.admin,
    project('live', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'deployer' }],
    }),
  );
  fx = await startFixture(cp, guestbookFiles());
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

const sa = (ns: string) => `system:serviceaccount:${ns}:deployer`;
const configMap = (ns: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', name: 'guestbook-config', namespace: ns });
const history = (a: { status?: Record<string, unknown> }) => ((a.status?.['history'] ?? []) as unknown[]).length;

async function syncedApp(name: string, selfHeal: boolean): Promise<void> {
  const app = application(name, fx.repo.url, {
    project: 'live',
    destination: { server: IN_CLUSTER, namespace: name },
  });
  if (selfHeal)
    (app['spec'] as { syncPolicy: { automated: Record<string, boolean> } }).syncPolicy.automated['selfHeal'] = true;
  await applySyncedApp(cp, app);
}

const refresh = (name: string, kind: 'normal' | 'hard' = 'normal') => refreshApp(cp, name, kind);

const readsAs = (ns: string) => (r: AuditRecord) =>
  r.namespace === ns && r.impersonatedUser === sa(ns) && (r.verb === 'get' || (r.verb === 'patch' && r.dryRun));

/**
 * Refreshes until a refresh, and the second after it, send no read to the destination: the
 * refreshes that follow a sync may still read while the watch catches up with the sync's writes,
 * which takes longer on a loaded machine than any fixed pause. If the watch never serves the
 * reads, this never settles and fails after 30 s.
 */
async function settle(name: string, ns: string): Promise<void> {
  const end = Date.now() + 30_000;
  for (;;) {
    const seen = (await cp.readAudit()).length;
    await refresh(name);
    await new Promise((r) => setTimeout(r, 1000));
    const reads = (await cp.readAudit()).slice(seen).filter(readsAs(ns));
    if (reads.length === 0) return;
    if (Date.now() > end)
      assert.fail(`refreshes of ${name} still read after 30 s: ${reads.map((r) => `${r.verb} ${r.requestURI}`)}`);
  }
}

test('a live edit of a managed object is seen by the watch and self-healed in seconds, not at the next refresh (1 h)', async () => {
  await deployer(cp, 'heal', 'deployer');
  await syncedApp('heal', true);
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: '/api/v1/namespaces/heal/configmaps/guestbook-config',
    body: { data: { greeting: 'drifted' } },
    contentType: 'application/merge-patch+json',
  });
  await until(
    'the ConfigMap corrected by a self-heal sync',
    async () =>
      ((await getRaw(cp.admin, configMap('heal'))) as { data?: Record<string, string> } | undefined)?.data?.[
        'greeting'
      ] === 'hello',
    30_000,
  );
  const healed = await waitForApp(
    cp,
    'heal',
    'second sync Succeeded',
    (a) => history(a) === 2 && operationPhase(a) === 'Succeeded',
  );
  assert.equal(history(healed), 2, 'exactly one self-heal sync');
  // The watch (which lists as its initial events: no LIST) was made as the ServiceAccount, like
  // every other read of the destination; it is still open, so only its start is in the audit log.
  const watches = (await cp.readAudit({ open: true })).filter(
    (r) => r.namespace === 'heal' && r.resource === 'configmaps' && (r.verb === 'list' || r.verb === 'watch'),
  );
  assert.ok(
    watches.some((r) => r.verb === 'watch' && r.requestURI.includes('sendInitialEvents=true')),
    'a watch of the ConfigMaps of namespace heal that lists them',
  );
  assert.deepEqual(
    watches.filter((r) => r.verb === 'list').map((r) => r.requestURI),
    [],
    'no separate LIST: the API server streams the list',
  );
  for (const w of watches) assert.equal(w.impersonatedUser, sa('heal'));
});

test('a refresh of a synced Application reads the cache and reuses its dry-runs: no GET, no dry-run as the ServiceAccount', async () => {
  await deployer(cp, 'rest', 'deployer');
  await syncedApp('rest', false);
  // The first comparison's dry-run is reused by the sync's own comparison, and the apply's answer by
  // the comparison after it: one dry-run per object unless the watch was still catching up.
  const dryRuns = (await cp.readAudit()).filter(
    (r) => r.namespace === 'rest' && r.verb === 'patch' && r.dryRun && r.impersonatedUser === sa('rest'),
  );
  for (const name of ['guestbook-config', 'guestbook-ui']) {
    const n = dryRuns.filter((r) => r.name === name).length;
    assert.ok(n >= 1 && n <= 2, `${name}: ${n} dry-runs from creation to Synced (expected 1, at most 2)`);
  }
  await settle('rest', 'rest');
  const seen = (await cp.readAudit()).length;
  for (let i = 0; i < 3; i++) await refresh('rest');
  await new Promise((r) => setTimeout(r, 1000));
  const reads = (await cp.readAudit()).slice(seen).filter(readsAs('rest'));
  assert.deepEqual(
    reads.map((r) => `${r.verb} ${r.requestURI}`),
    [],
    'three refreshes, no request to the destination',
  );
  const app = await getApp(cp, 'rest');
  assert.equal((app.status?.['sync'] as { status?: string }).status, 'Synced');
  assert.equal(history(app), 1);
});

test('a hard refresh asks the API server again as the ServiceAccount: every dry-run and read, so a revoked right shows', async () => {
  await deployer(cp, 'hard', 'deployer');
  await syncedApp('hard', false);
  await settle('hard', 'hard');
  const seen = (await cp.readAudit()).length;
  await refresh('hard', 'hard');
  await new Promise((r) => setTimeout(r, 1000));
  const reads = (await cp.readAudit()).slice(seen).filter(readsAs('hard'));
  const names = (verb: string) =>
    reads
      .filter((r) => r.verb === verb)
      .map((r) => r.name)
      .sort();
  assert.deepEqual(names('get'), ['guestbook-config', 'guestbook-ui'], 'each live object read from the API server');
  assert.deepEqual(names('patch'), ['guestbook-config', 'guestbook-ui'], 'each dry-run sent again');
  // The open watch and the remembered dry-runs would still say Synced; a hard refresh asks.
  await requestOk(cp.admin, {
    method: 'DELETE',
    path: '/apis/rbac.authorization.k8s.io/v1/namespaces/hard/rolebindings/deployer-all',
  });
  // The refusal comes once the API server's RBAC cache has seen the deletion, a moment after it.
  await untilRefused(cp.admin, { serviceAccount: 'deployer', namespace: 'hard' }, 'get', 'configmaps');
  await refresh('hard', 'hard');
  const app = await getApp(cp, 'hard');
  assert.equal((app.status?.['sync'] as { status?: string }).status, 'Unknown');
  const conditions = (app.status?.['conditions'] ?? []) as Array<{ type: string; message: string }>;
  // Every right it lost, at once (docs/impersonation.md §12); the objects existed at the last
  // comparison, so creating them is not asked about.
  assert.deepEqual(
    conditions.filter((c) => c.type === 'ComparisonError').map((c) => c.message),
    ['ServiceAccount hard:deployer may not: get, patch configmaps in hard; get, patch services in hard'],
  );
});

test('an identity that may not list or watch is compared with GETs and dry-runs, as before', async () => {
  await createNamespace(cp.admin, 'nolist');
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'deployer', namespace: 'nolist' },
  });
  await grantRole(cp.admin, {
    name: 'deployer-nolist',
    namespace: 'nolist',
    to: { serviceAccount: 'deployer', namespace: 'nolist' },
    rules: [
      { apiGroups: [''], resources: ['configmaps', 'services'], verbs: ['get', 'create', 'update', 'patch', 'delete'] },
    ],
  });
  await syncedApp('nolist', false);
  const refused = (await cp.readAudit()).filter(
    (r) => r.namespace === 'nolist' && (r.verb === 'list' || r.verb === 'watch') && r.impersonatedUser === sa('nolist'),
  );
  assert.ok(
    refused.length > 0 && refused.every((r) => r.code === 403),
    'the watch (and its list) was tried as the ServiceAccount and refused',
  );
  await refresh('nolist'); // settles the refreshes that follow the sync
  await new Promise((r) => setTimeout(r, 1000));
  const seen = (await cp.readAudit()).length;
  await refresh('nolist');
  await new Promise((r) => setTimeout(r, 1000));
  const reads = (await cp.readAudit()).slice(seen).filter(readsAs('nolist'));
  const names = (verb: string) =>
    reads
      .filter((r) => r.verb === verb)
      .map((r) => r.name)
      .sort();
  assert.deepEqual(names('get'), ['guestbook-config', 'guestbook-ui']);
  assert.deepEqual(names('patch'), ['guestbook-config', 'guestbook-ui']);
  assert.equal(((await getApp(cp, 'nolist')).status?.['sync'] as { status?: string }).status, 'Synced');
});
