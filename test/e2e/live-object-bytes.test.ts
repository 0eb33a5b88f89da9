// What the live-object watches hold is bounded (src/kube/store-budget.ts): a watch lists every
// object of its kind in its namespace, and whoever writes there decides how many and how large. On
// the real control plane, with a memory limit of 64 MiB (so the watches may hold 4 MiB together and
// 1 MiB each), a tenant namespace crowded with 1.2 MB of ConfigMaps is not kept: its watch ends,
// the controller says why, and its Application is compared and synced by reading its objects one by
// one, while another namespace's watch serves its refreshes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, startControlPlane } from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import {
  application,
  applySyncedApp,
  deployer,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  project,
  refreshApp,
  setSettings,
  startFixture,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';
import { connectControlCluster } from '../../src/kube/control.ts';
import { StoreBudget } from '../../src/kube/store-budget.ts';
import { StoreTooLargeError, Watch } from '../../src/kube/watch.ts';
import type { WatchHttpError } from '../../src/kube/watch.ts';

let cp: TestControlPlane;
let fx: Fixture;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true', 'timeout.reconciliation': '1h' });
  await applyRaw(
    cp.admin,
    project('bytes', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'deployer' }],
    }),
  );
  fx = await startFixture(cp, guestbookFiles(), { memoryLimitBytes: 64 * 2 ** 20 });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

const sa = (ns: string) => `system:serviceaccount:${ns}:deployer`;

const syncedApp = (name: string) =>
  applySyncedApp(
    cp,
    application(name, fx.repo.url, { project: 'bytes', destination: { server: IN_CLUSTER, namespace: name } }),
  );

/** The GETs of ConfigMaps in `ns` as its ServiceAccount during a refresh of `name`, after the watches settle. */
async function configMapGetsOfARefresh(name: string, ns: string): Promise<AuditRecord[]> {
  const gets = (r: AuditRecord) =>
    r.namespace === ns && r.impersonatedUser === sa(ns) && r.verb === 'get' && r.resource === 'configmaps';
  let last: AuditRecord[] = [];
  // The refreshes right after a sync may read while a watch catches up with its writes.
  for (let i = 0; i < 5; i++) {
    const seen = (await cp.readAudit()).length;
    await refreshApp(cp, name);
    await new Promise((r) => setTimeout(r, 1000));
    last = (await cp.readAudit()).slice(seen).filter(gets);
    if (last.length === 0) return last;
  }
  return last;
}

test('a namespace crowded past what one watch may hold is read object by object; another keeps its watch', async () => {
  await deployer(cp, 'crowded', 'deployer');
  await deployer(cp, 'quiet', 'deployer');
  // Not the Application's: objects anyone who may write in the namespace can make.
  for (let i = 0; i < 12; i++)
    await applyRaw(cp.admin, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `filler-${i}`, namespace: 'crowded' },
      data: { blob: 'x'.repeat(100_000) },
    });
  await syncedApp('crowded');
  await syncedApp('quiet');
  const said = fx.logs.filter(
    (l) => l.includes('live-object watch ended') && l.includes('/api/v1/namespaces/crowded/configmaps'),
  );
  assert.ok(said.length > 0, 'the controller says which watch ended and why');
  assert.match(said[0] ?? '', /its objects would hold 1\.\d MiB, more than it may keep/);
  assert.ok(
    !fx.logs.some((l) => l.includes('live-object watch ended') && l.includes('/namespaces/quiet/')),
    'the quiet namespace is kept',
  );
  // The crowded namespace's ConfigMap is read from the server on every refresh; the quiet one's from its watch.
  const crowdedGets = await configMapGetsOfARefresh('crowded', 'crowded');
  assert.deepEqual(
    crowdedGets.map((r) => r.requestURI.split('?')[0]),
    ['/api/v1/namespaces/crowded/configmaps/guestbook-config'],
  );
  assert.deepEqual(await configMapGetsOfARefresh('quiet', 'quiet'), []);
});

test('a list read the classic way (no WatchList) is counted as its page arrives, and a page past the bound ends the watch', async () => {
  // The crowded namespace's 1.2 MB of ConfigMaps, listed by pages of 500 as an older API server would.
  const control = await connectControlCluster(cp.admin);
  const listOf = async (bound: number) => {
    const budget = new StoreBudget({ totalBytes: bound * 4, perWatchBytes: bound });
    let fatal: WatchHttpError | undefined;
    const owner = {};
    const watch: Watch = new Watch(control.watchTransport(), {
      path: '/api/v1/namespaces/crowded/configmaps',
      kind: 'ConfigMap',
      apiVersion: 'v1',
      fatalStatuses: [413],
      bytes: { admit: (bytes: number): boolean => budget.hold(owner, bytes, () => {}) },
      onFatal: (err) => {
        fatal = err;
      },
    });
    watch.start();
    const end = Date.now() + 20_000;
    while (!watch.isSynced && !fatal && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    const out = { synced: watch.isSynced, objects: watch.store.size, used: budget.used, fatal };
    await watch.stop();
    return { ...out, after: budget.used };
  };
  try {
    const kept = await listOf(4 * 2 ** 20);
    assert.equal(kept.synced, true);
    assert.ok(kept.objects >= 13, `${kept.objects} ConfigMaps`);
    assert.ok(kept.used > 1_200_000 && kept.used < 1_400_000, `${kept.used} bytes counted`);
    assert.equal(kept.after, 0, 'a stopped watch holds nothing');
    const refused = await listOf(2 ** 20);
    assert.equal(refused.synced, false);
    assert.ok(refused.fatal instanceof StoreTooLargeError, String(refused.fatal));
    assert.equal(refused.objects, 0);
    assert.equal(refused.after, 0);
  } finally {
    await control.close();
  }
});
