// A Redis that cannot be reached never holds up the controller (issue 27): with --redis naming a
// port where nothing listens, an Application syncs and reports its status as without Redis, and
// the failed writes of Argo CD's cache are logged and counted.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { applyRaw, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { freeLoopbackPorts } from '../../src/controlplane/ports.ts';
import {
  application,
  deployer,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  operationPhase,
  project,
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
  await deployer(cp, 'guestbook', 'deployer');
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await applyRaw(
    cp.admin,
    project('default', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'guestbook', defaultServiceAccount: 'deployer' }],
    }),
  );
  const [port] = await freeLoopbackPorts(1);
  fx = await startFixture(cp, guestbookFiles(), { redis: { redis: `127.0.0.1:${port}` } });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('with its Redis down, an Application still syncs; the failed cache writes are counted and logged', async () => {
  await applyRaw(cp.admin, application('guestbook', fx.repo.url));
  await waitForApp(
    cp,
    'guestbook',
    'synced',
    (a) => operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string })?.status === 'Synced',
  );
  const end = Date.now() + 60_000;
  let text = '';
  while (Date.now() < end) {
    text = await fx.controller.metrics.registry.getSingleMetricAsString('impersync_argocd_cache_writes_total');
    if (/result="error"\} [1-9]/.test(text)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.match(text, /result="error"\} [1-9]/);
  assert.ok(
    fx.logs.some((l) => l.includes('Redis refused or cannot be reached')),
    'the failure is logged',
  );
});
