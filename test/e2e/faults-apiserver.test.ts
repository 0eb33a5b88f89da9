// Faults between the controller and the control cluster's API server: kube-apiserver stopped and
// started again in the middle of a sync (same port, same etcd data), and the connection cut and
// refused for a while by a proxy between them. The controller must finish what it started, with
// the right result, and miss nothing that changed while it could not see.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { applyRaw, getRaw, requestOk, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { controllerKubeconfigVia, startCuttableProxy, until } from '../support/faults.ts';
import type { CuttableProxy } from '../support/faults.ts';
import {
  application,
  deployer,
  grantControllerRights,
  guestbookFiles,
  heldWaveFiles,
  IN_CLUSTER,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let proxy: CuttableProxy;
let fx: Fixture;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  for (const ns of ['restart', 'cut', 'cut-new']) await deployer(cp, ns, 'deployer');
  await applyRaw(
    cp.admin,
    project('faults', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'deployer' }],
    }),
  );
  // The in-process controller reaches the API server only through the proxy.
  proxy = await startCuttableProxy(cp.server);
  const kc = new KubeConfig();
  kc.loadFromFile(await controllerKubeconfigVia(cp, proxy.server));
  // A wave may wait out an API server restart, which takes longer on a loaded machine.
  fx = await startFixture(
    { ...cp, controller: kc },
    { ...guestbookFiles(), ...heldWaveFiles() },
    { waitTimeoutMs: 120_000 },
  );
});

after(async () => {
  await fx?.stop();
  await proxy?.close();
  await cp?.stop();
});

/** What a cloud controller would write: the LoadBalancer's address, which makes it Healthy. */
async function giveAddress(namespace: string): Promise<void> {
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/api/v1/namespaces/${namespace}/services/lb/status`,
    body: { status: { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } } },
    contentType: 'application/merge-patch+json',
  });
}

test(
  'kube-apiserver stopped and restarted in the middle of a sync: the operation completes with the right result',
  { timeout: 120_000 },
  async () => {
    const app = application('restart', fx.repo.url, {
      project: 'faults',
      path: 'held',
      destination: { server: IN_CLUSTER, namespace: 'restart' },
      automated: false,
    });
    await applyRaw(cp.admin, { ...app, operation: { sync: {}, initiatedBy: { username: 'alice' } } });
    await waitForApp(cp, 'restart', 'Running, waiting for the LoadBalancer', (a) => operationPhase(a) === 'Running');
    await until(
      'wave 0 applied',
      async () =>
        (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'Service', name: 'lb', namespace: 'restart' })) !== undefined,
    );

    await cp.processes.apiServer.stop();
    // Long enough for the controller's polls and watches to fail at least once.
    await new Promise((r) => setTimeout(r, 3000));
    await cp.processes.apiServer.start();
    await giveAddress('restart');

    const done = await waitForApp(
      cp,
      'restart',
      'Succeeded',
      (a) => operationPhase(a) === 'Succeeded' && a['operation'] === undefined,
      60_000,
    );
    const state = done.status?.['operationState'] as {
      message: string;
      syncResult: { resources: Array<{ kind: string; name: string; status: string }> };
    };
    const results = Object.fromEntries(state.syncResult.resources.map((r) => [`${r.kind}/${r.name}`, r.status]));
    assert.deepEqual(results, { 'Service/lb': 'Synced', 'ConfigMap/later': 'Synced' }, state.message);
    assert.ok(
      await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'later', namespace: 'restart' }),
      'wave 1 applied after the restart',
    );
    assert.equal(((done.status?.['history'] ?? []) as unknown[]).length, 1, 'one sync, not two');
    assert.ok(
      fx.logs.some((l) => /watch interrupted/.test(l)),
      'the controller noticed the outage',
    );
    // Every write to the destination, before and after the outage, was made as the ServiceAccount.
    // A step's dry-runs may reach the restarted API server before its RBAC is loaded: it refuses
    // the impersonation itself (403 "cannot impersonate", no impersonated user in the record), and
    // nothing is done; the next step sends them again.
    const audit = await cp.readAudit();
    const refusedImpersonation = (r: (typeof audit)[number]) =>
      r.code === 403 && r.impersonatedUser === undefined && /cannot impersonate/.test(r.message ?? '');
    const writes = audit.filter(
      (r) =>
        r.namespace === 'restart' &&
        ['create', 'patch', 'update', 'delete'].includes(r.verb) &&
        r.user === cp.controllerUserName &&
        !refusedImpersonation(r),
    );
    assert.ok(writes.length >= 2);
    for (const w of writes)
      assert.equal(
        w.impersonatedUser,
        'system:serviceaccount:restart:deployer',
        `${w.code} ${w.requestURI}: ${w.message ?? ''}`,
      );
  },
);

test(
  'watch streams cut and refused for a while: the controller reconnects within seconds and misses no change made meanwhile',
  { timeout: 240_000 },
  async () => {
    await applyRaw(
      cp.admin,
      application('cut', fx.repo.url, { project: 'faults', destination: { server: IN_CLUSTER, namespace: 'cut' } }),
    );
    await waitForApp(cp, 'cut', 'first sync', (a) => operationPhase(a) === 'Succeeded');
    const before = proxy.connections();

    proxy.cut({ refuse: true });
    // Made while the controller cannot see: a new Application, and a change to an existing one.
    await applyRaw(
      cp.admin,
      application('cut-new', fx.repo.url, {
        project: 'faults',
        destination: { server: IN_CLUSTER, namespace: 'cut-new' },
      }),
    );
    await requestOk(cp.admin, {
      method: 'PATCH',
      path: '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/cut',
      body: { spec: { source: { path: 'held' } } },
      contentType: 'application/merge-patch+json',
    });
    await new Promise((r) => setTimeout(r, 2000));
    proxy.resume();

    // The watches are back within seconds (their backoff after a 2 s cut is a few seconds at most),
    // long before the next periodic refresh (120 s); what follows, a render, a comparison and a
    // sync, takes longer on a loaded machine, and the waits leave room for it.
    await waitForApp(
      cp,
      'cut-new',
      'the Application created during the cut synced',
      (a) => operationPhase(a) === 'Succeeded',
      45_000,
    );
    await waitForApp(
      cp,
      'cut',
      'the spec change made during the cut compared and being applied',
      (a) =>
        (a.status?.['sync'] as { comparedTo?: { source?: { path?: string } } } | undefined)?.comparedTo?.source
          ?.path === 'held' && operationPhase(a) === 'Running',
      45_000,
    );
    await until(
      'wave 0 of the new path applied',
      async () =>
        (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'Service', name: 'lb', namespace: 'cut' })) !== undefined,
    );
    assert.ok(proxy.connections() > before, 'the controller reconnected through the proxy');
    assert.ok(
      fx.logs.some((l) => /watch interrupted; reconnecting/.test(l)),
      'the cut was noticed and logged',
    );
    await giveAddress('cut');
    await waitForApp(
      cp,
      'cut',
      'the held sync completes',
      (a) => operationPhase(a) === 'Succeeded' && ((a.status?.['history'] ?? []) as unknown[]).length === 2,
      30_000,
    );
  },
);
