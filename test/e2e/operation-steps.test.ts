// An operation never holds a worker while it waits (issue 12): with two operation workers, three
// Applications whose second wave waits on a Deployment that never becomes healthy (no node to run
// its pod) stay Running, each waiting, while a fourth Application, another tenant's, syncs.
// Before operations advanced step by step, the three would hold both workers for the whole wave
// timeout (set to ten minutes here), and the fourth would not start within it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, getRaw, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
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

const stuckFiles = {
  'stuck/deploy.yaml':
    'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: never-ready\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: never-ready}\n  template:\n    metadata:\n      labels: {app: never-ready}\n    spec:\n      containers:\n      - name: c\n        image: registry.invalid/none:1\n',
  'stuck/later.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: later\n  annotations:\n    argocd.argoproj.io/sync-wave: "1"\ndata: {a: "1"}\n',
};

async function tenant(name: string): Promise<void> {
  await deployer(cp, name, 'deployer');
  await applyRaw(
    cp.admin,
    project(name, {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: name, defaultServiceAccount: 'deployer' }],
    }),
  );
}

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  fx = await startFixture(
    cp,
    { ...guestbookFiles(), ...stuckFiles },
    { operationProcessors: 2, waitTimeoutMs: 600_000 },
  );
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('with 2 operation workers, three syncs waiting on an unhealthy Deployment do not delay a fourth sync', async () => {
  const stuck = ['stuck-a', 'stuck-b', 'stuck-c'];
  for (const name of stuck) {
    await tenant(name);
    await applyRaw(
      cp.admin,
      application(name, fx.repo.url, {
        project: name,
        path: 'stuck',
        destination: { server: IN_CLUSTER, namespace: name },
      }),
    );
  }
  for (const name of stuck)
    await waitForApp(
      cp,
      name,
      'Running, waiting for the Deployment',
      (a) =>
        operationPhase(a) === 'Running' &&
        ((a.status?.['operationState'] as { message?: string }).message ?? '').includes(
          'waiting for healthy state of apps/Deployment/never-ready',
        ),
    );

  await tenant('quiet');
  await applyRaw(
    cp.admin,
    application('quiet', fx.repo.url, { project: 'quiet', destination: { server: IN_CLUSTER, namespace: 'quiet' } }),
  );
  const synced = await waitForApp(
    cp,
    'quiet',
    'Succeeded and Synced',
    (a) => operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string })?.status === 'Synced',
  );
  assert.match((synced.status?.['operationState'] as { message: string }).message, /successfully synced/);
  assert.ok(
    await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'guestbook-config', namespace: 'quiet' }),
  );

  // The three still wait, their second wave not applied: they were set aside, not failed.
  for (const name of stuck) {
    const app = await waitForApp(cp, name, 'still Running', () => true);
    assert.equal(operationPhase(app), 'Running', name);
    assert.equal(
      await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'later', namespace: name }),
      undefined,
    );
  }
});
