// An operation never holds a worker while it waits (issue 12): with two operation workers, three
// Applications whose second wave waits on a Deployment that never becomes healthy (no node to run
// its pod) stay Running, each waiting, while a fourth Application, another tenant's, syncs.
// Before operations advanced step by step, the three would hold both workers for the whole wave
// timeout (set to ten minutes here), and the fourth would not start within it. The same for
// Force=true's delete and create: two Applications whose old ConfigMap a finalizer keeps from
// going wait for its deletion, Running, while a third syncs; once it goes, they create it again.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, getRaw, requestOk, startControlPlane } from '../support/index.ts';
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

/** An immutable ConfigMap with Force=true: a change of its data deletes it and creates it again. */
const immutable = (a: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: imm\n  annotations:\n    argocd.argoproj.io/sync-options: Force=true\nimmutable: true\ndata: {a: "${a}"}\n`;

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
    { ...guestbookFiles(), ...stuckFiles, 'held/imm.yaml': immutable('1') },
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

test('with 2 operation workers, two syncs waiting for Force=true to delete a held ConfigMap do not delay a third', async () => {
  const held = ['held-a', 'held-b'];
  const operation = { sync: { revision: 'HEAD', prune: true }, initiatedBy: { username: 'alice' } };
  const manifest = (name: string) =>
    application(name, fx.repo.url, {
      project: name,
      path: 'held',
      automated: false,
      destination: { server: IN_CLUSTER, namespace: name },
    });
  const message = (a: { status?: Record<string, unknown> }) =>
    (a.status?.['operationState'] as { message?: string } | undefined)?.message ?? '';
  const imm = (ns: string) =>
    getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'imm', namespace: ns }) as Promise<
      { data?: Record<string, string>; metadata: { uid?: string; deletionTimestamp?: string } } | undefined
    >;
  const finalizers = (ns: string, list: string[] | null) =>
    requestOk(cp.admin, {
      method: 'PATCH',
      path: `/api/v1/namespaces/${ns}/configmaps/imm`,
      body: { metadata: { finalizers: list } },
      contentType: 'application/merge-patch+json',
    });
  for (const name of held) {
    await tenant(name);
    await applyRaw(cp.admin, { ...manifest(name), operation });
    await waitForApp(cp, name, 'created', (a) => operationPhase(a) === 'Succeeded');
    // A finalizer no one removes (until the test does): the delete leaves the old object Terminating.
    await finalizers(name, ['example.com/hold']);
  }
  const before = new Map<string, string | undefined>();
  for (const name of held) before.set(name, (await imm(name))?.metadata.uid);

  await fx.repo.commit({ 'held/imm.yaml': immutable('2') });
  for (const name of held) await applyRaw(cp.admin, { ...manifest(name), operation });
  for (const name of held)
    await waitForApp(
      cp,
      name,
      'Running, waiting for the old ConfigMap to go',
      (a) => operationPhase(a) === 'Running' && message(a).includes('waiting for deletion of /ConfigMap/imm'),
    );

  await tenant('quiet-2');
  await applyRaw(
    cp.admin,
    application('quiet-2', fx.repo.url, {
      project: 'quiet-2',
      destination: { server: IN_CLUSTER, namespace: 'quiet-2' },
    }),
  );
  await waitForApp(
    cp,
    'quiet-2',
    'Succeeded and Synced',
    (a) => operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string })?.status === 'Synced',
  );

  // The two still wait; their old ConfigMaps are Terminating, not yet created again.
  for (const name of held) {
    const app = await waitForApp(cp, name, 'still Running', () => true);
    assert.equal(operationPhase(app), 'Running', name);
    assert.match(message(app), /waiting for deletion of \/ConfigMap\/imm/);
    const old = await imm(name);
    assert.equal(old?.metadata.uid, before.get(name));
    assert.ok(old?.metadata.deletionTimestamp, `${name}: the old ConfigMap is being deleted`);
    assert.equal(old?.data?.['a'], '1');
  }

  for (const name of held) await finalizers(name, null);
  for (const name of held) {
    const app = await waitForApp(cp, name, 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
    const resources = (app.status?.['operationState'] as { syncResult?: { resources?: Array<{ message: string }> } })
      .syncResult?.resources;
    assert.deepEqual(
      resources?.map((r) => r.message),
      ['configmap/imm serverside-applied'],
    );
    const now = await imm(name);
    assert.equal(now?.data?.['a'], '2');
    assert.notEqual(now?.metadata.uid, before.get(name));
  }
  // One delete each, sent once by the ServiceAccount, not at every step.
  const deletes = (await cp.readAudit()).filter(
    (r) => r.verb === 'delete' && held.includes(r.namespace ?? '') && r.name === 'imm' && !r.dryRun,
  );
  assert.deepEqual(deletes.map((r) => `${r.namespace} ${r.impersonatedUser}`).sort(), [
    'held-a system:serviceaccount:held-a:deployer',
    'held-b system:serviceaccount:held-b:deployer',
  ]);
});
