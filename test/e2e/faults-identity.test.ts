// The ServiceAccount's rights taken away after the diff: its RoleBinding deleted before the sync,
// or between two waves of a running sync, and the ServiceAccount object deleted with or without its
// binding, before the sync or between two waves. Rights gone: a failed operation with a SyncError
// that names the ServiceAccount; every resource's result says whether it was applied, so no partial
// write goes unreported; the audit log agrees. Only the object gone: the API server would still
// authorise the name, so the controller checks the object (src/controller/sa-check.ts) and refuses
// to write as it. Without the controller's `get` on serviceaccounts: faults-sa-check.test.ts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, deleteRaw, getRaw, requestOk, startControlPlane, untilRefused } from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import {
  application,
  condition,
  deployer,
  getApp,
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
let fx: Fixture;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  for (const ns of ['revoked', 'midway', 'sa-gone', 'sa-only', 'sa-midway']) await deployer(cp, ns, 'deployer');
  await applyRaw(
    cp.admin,
    project('faults', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'deployer' }],
    }),
  );
  fx = await startFixture(cp, { ...guestbookFiles(), ...heldWaveFiles() });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

type Result = { kind: string; name: string; status: string; message?: string };
const sa = (ns: string) => `system:serviceaccount:${ns}:deployer`;
/** Deletes the ServiceAccount's RoleBinding, and returns once the API server refuses it the rights. */
async function revoke(ns: string): Promise<void> {
  await deleteRaw(cp.admin, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    name: 'deployer-all',
    namespace: ns,
  });
  // Else the next write as the ServiceAccount may still be allowed, if the server's RBAC cache
  // has not yet seen the deletion (later on a loaded machine): the wave after it would be applied.
  await untilRefused(cp.admin, { serviceAccount: 'deployer', namespace: ns }, 'patch', 'configmaps');
}
const realWrite = (ns: string) => (r: AuditRecord) =>
  r.namespace === ns &&
  ['create', 'patch', 'update', 'delete'].includes(r.verb) &&
  !r.dryRun &&
  r.user === cp.controllerUserName;
const missing = (ns: string) =>
  `ServiceAccount "deployer" not found in namespace "${ns}": refusing to sync as ${sa(ns)}`;
const deleteServiceAccount = (ns: string) =>
  deleteRaw(cp.admin, { apiVersion: 'v1', kind: 'ServiceAccount', name: 'deployer', namespace: ns });
/** When the API server received the deletion of the ServiceAccount (audit time, RFC 3339 with microseconds). */
async function deletedAt(ns: string): Promise<string> {
  const [rec] = await cp.waitForAudit(
    (r) => r.verb === 'delete' && r.resource === 'serviceaccounts' && r.namespace === ns && r.name === 'deployer',
  );
  assert.ok(rec?.time, 'the deletion is in the audit log');
  return rec.time;
}

async function startOperation(name: string, path: string): Promise<void> {
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/${name}`,
    body: { operation: { sync: {}, initiatedBy: { username: 'alice' } }, spec: { source: { path } } },
    contentType: 'application/merge-patch+json',
  });
}

function resultsOf(app: { status?: Record<string, unknown> }): Result[] {
  return (
    (app.status?.['operationState'] as { syncResult?: { resources?: Result[] } } | undefined)?.syncResult?.resources ??
    []
  );
}

test(
  'Role revoked between diff and sync: the operation fails naming the ServiceAccount, nothing written, every resource reported',
  { timeout: 90_000 },
  async () => {
    await applyRaw(
      cp.admin,
      application('revoked', fx.repo.url, {
        project: 'faults',
        destination: { server: IN_CLUSTER, namespace: 'revoked' },
        automated: false,
      }),
    );
    // The diff, made as the ServiceAccount while it still had its rights.
    await waitForApp(
      cp,
      'revoked',
      'OutOfSync',
      (a) => (a.status?.['sync'] as { status?: string } | undefined)?.status === 'OutOfSync',
    );
    await cp.waitForAudit(
      (r) => r.namespace === 'revoked' && r.dryRun === true && r.impersonatedUser === sa('revoked'),
    );
    await revoke('revoked');
    await startOperation('revoked', 'app');

    const done = await waitForApp(
      cp,
      'revoked',
      'operation ended',
      (a) => ['Failed', 'Error'].includes(operationPhase(a) ?? ''),
      30_000,
    );
    const message = (done.status?.['operationState'] as { message: string }).message;
    assert.ok(message.includes(sa('revoked')), `the operation message names the ServiceAccount: ${message}`);
    assert.ok(
      (condition(done, 'SyncError') ?? '').includes(sa('revoked')),
      `SyncError: ${condition(done, 'SyncError')}`,
    );
    assert.doesNotMatch(message, /undefined|\[object /);
    const writes = (await cp.readAudit()).filter(realWrite('revoked'));
    assert.ok(
      writes.every((w) => w.code === 403),
      `no write got through: ${writes.map((w) => `${w.code} ${w.verb} ${w.requestURI}`).join(', ')}`,
    );
    for (const w of writes) assert.equal(w.impersonatedUser, sa('revoked'));
    assert.equal(
      await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'guestbook-config', namespace: 'revoked' }),
      undefined,
    );
    // Whatever the engine attempted is reported as failed, never as Synced.
    for (const r of resultsOf(done))
      assert.notEqual(r.status, 'Synced', `${r.kind}/${r.name} reported Synced but nothing was written`);
    assert.equal(((done.status?.['history'] ?? []) as unknown[]).length, 0);
  },
);

test(
  'Role revoked between two waves: wave 0 reported applied, wave 1 not, the failure names the ServiceAccount',
  { timeout: 90_000 },
  async () => {
    await applyRaw(
      cp.admin,
      application('midway', fx.repo.url, {
        project: 'faults',
        destination: { server: IN_CLUSTER, namespace: 'midway' },
        automated: false,
      }),
    );
    await startOperation('midway', 'held');
    await waitForApp(cp, 'midway', 'Running', (a) => operationPhase(a) === 'Running');
    await until(
      'wave 0 applied',
      async () =>
        (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'Service', name: 'lb', namespace: 'midway' })) !== undefined,
    );
    await revoke('midway');
    await requestOk(cp.admin, {
      method: 'PATCH',
      path: '/api/v1/namespaces/midway/services/lb/status',
      body: { status: { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } } },
      contentType: 'application/merge-patch+json',
    });

    const done = await waitForApp(
      cp,
      'midway',
      'operation ended',
      (a) => ['Failed', 'Error'].includes(operationPhase(a) ?? ''),
      45_000,
    );
    // Either wave 1's apply is refused ("... as system:serviceaccount:midway:deployer"), or, when
    // Argo CD's pause after wave 0 ends after the revocation, reading wave 0's health is, and the
    // wait for it times out with the rights message ("ServiceAccount midway:deployer may not: ...").
    // Both name the ServiceAccount; neither writes wave 1.
    const named = (text: string) => text.includes(sa('midway')) || text.includes('ServiceAccount midway:deployer ');
    const message = (done.status?.['operationState'] as { message: string }).message;
    assert.ok(named(message), `the operation message names the ServiceAccount: ${message}`);
    assert.ok(named(condition(done, 'SyncError') ?? ''));
    // What was applied is reported as such; the ConfigMap was not written and is not reported Synced.
    const results = Object.fromEntries(resultsOf(done).map((r) => [`${r.kind}/${r.name}`, r]));
    assert.equal(results['Service/lb']?.status, 'Synced', JSON.stringify(resultsOf(done)));
    assert.notEqual(results['ConfigMap/later']?.status, 'Synced');
    const audit = (await cp.readAudit()).filter(realWrite('midway'));
    assert.ok(
      audit.some((r) => r.resource === 'services' && r.name === 'lb' && r.code !== undefined && r.code < 300),
      'the Service write is in the audit log',
    );
    assert.ok(
      audit.filter((r) => r.resource === 'configmaps').every((r) => r.code === 403),
      'no ConfigMap write got through',
    );
    assert.equal(
      await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'later', namespace: 'midway' }),
      undefined,
    );
  },
);

test(
  'ServiceAccount deleted together with its binding between diff and sync: the operation fails naming it, nothing written',
  { timeout: 90_000 },
  async () => {
    await applyRaw(
      cp.admin,
      application('sa-gone', fx.repo.url, {
        project: 'faults',
        destination: { server: IN_CLUSTER, namespace: 'sa-gone' },
        automated: false,
      }),
    );
    await waitForApp(
      cp,
      'sa-gone',
      'OutOfSync',
      (a) => (a.status?.['sync'] as { status?: string } | undefined)?.status === 'OutOfSync',
    );
    await deleteServiceAccount('sa-gone');
    await revoke('sa-gone');
    await startOperation('sa-gone', 'app');
    const done = await waitForApp(
      cp,
      'sa-gone',
      'operation ended',
      (a) => ['Failed', 'Error'].includes(operationPhase(a) ?? ''),
      30_000,
    );
    const message = (done.status?.['operationState'] as { message: string }).message;
    assert.equal(message, missing('sa-gone'));
    // The check stopped it before the first write: not even a refused attempt.
    assert.deepEqual(
      (await cp.readAudit()).filter(realWrite('sa-gone')).map((w) => `${w.code} ${w.verb} ${w.requestURI}`),
      [],
    );
    // The controller keeps reconciling: the Application is compared again and says why.
    const later = await getApp(cp, 'sa-gone');
    assert.equal(later['operation'], undefined, 'the failed operation is not retried without a retry policy');
  },
);

test(
  'ServiceAccount object deleted alone (its RoleBinding kept) after a sync: the next sync fails naming it, and nothing is written as that name any more',
  { timeout: 90_000 },
  async () => {
    await applyRaw(
      cp.admin,
      application('sa-only', fx.repo.url, {
        project: 'faults',
        destination: { server: IN_CLUSTER, namespace: 'sa-only' },
        automated: false,
      }),
    );
    await startOperation('sa-only', 'app');
    await waitForApp(cp, 'sa-only', 'first sync Succeeded', (a) => operationPhase(a) === 'Succeeded', 30_000);
    assert.ok(
      (await cp.readAudit())
        .filter(realWrite('sa-only'))
        .some((w) => w.impersonatedUser === sa('sa-only') && w.code !== undefined && w.code < 300),
      'the first sync wrote as the ServiceAccount',
    );

    // The API server would still authorise the name (RBAC alone): the controller checks the object.
    await deleteServiceAccount('sa-only');
    const since = await deletedAt('sa-only');
    await startOperation('sa-only', 'app');
    const done = await waitForApp(cp, 'sa-only', 'second sync Failed', (a) => operationPhase(a) === 'Failed', 30_000);
    const message = (done.status?.['operationState'] as { message: string }).message;
    assert.equal(message, missing('sa-only'));
    assert.equal(condition(done, 'SyncError'), missing('sa-only'));
    assert.ok(
      fx.events.events.some(
        (e) => e.reason === 'ServiceAccountNotFound' && e.message === missing('sa-only') && e.object.name === 'sa-only',
      ),
      'a Warning event says why',
    );
    // The controller records the event after its status write (which the wait above saw): poll for it.
    const failedEvent = () =>
      fx.events.events.some(
        (e) => e.reason === 'OperationCompleted' && e.type === 'Warning' && e.message.includes(missing('sa-only')),
      );
    for (const end = Date.now() + 10_000; !failedEvent() && Date.now() < end;)
      await new Promise((r) => setTimeout(r, 100));
    assert.ok(failedEvent());
    const audit = await cp.readAudit();
    // The check itself: the controller's own GET of the ServiceAccount, answered 404.
    assert.ok(
      audit.some(
        (r) =>
          r.user === cp.controllerUserName &&
          r.impersonatedUser === undefined &&
          r.verb === 'get' &&
          r.resource === 'serviceaccounts' &&
          r.namespace === 'sa-only' &&
          r.code === 404 &&
          (r.time ?? '') > since,
      ),
    );
    const after = audit.filter(realWrite('sa-only')).filter((w) => (w.time ?? '') > since);
    assert.deepEqual(
      after.map((w) => `${w.code} ${w.verb} ${w.requestURI} as ${w.impersonatedUser ?? 'the controller'}`),
      [],
      'no write after the deletion',
    );
    assert.equal(((done.status?.['history'] ?? []) as unknown[]).length, 1, 'only the first sync is in history');
  },
);

test(
  'ServiceAccount object deleted between two waves: wave 0 reported applied, wave 1 never sent, the failure names it',
  { timeout: 90_000 },
  async () => {
    await applyRaw(
      cp.admin,
      application('sa-midway', fx.repo.url, {
        project: 'faults',
        destination: { server: IN_CLUSTER, namespace: 'sa-midway' },
        automated: false,
      }),
    );
    await startOperation('sa-midway', 'held');
    await waitForApp(cp, 'sa-midway', 'Running', (a) => operationPhase(a) === 'Running');
    await until(
      'wave 0 applied',
      async () =>
        (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'Service', name: 'lb', namespace: 'sa-midway' })) !==
        undefined,
    );
    await deleteServiceAccount('sa-midway');
    const since = await deletedAt('sa-midway');
    await requestOk(cp.admin, {
      method: 'PATCH',
      path: '/api/v1/namespaces/sa-midway/services/lb/status',
      body: { status: { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } } },
      contentType: 'application/merge-patch+json',
    });

    const done = await waitForApp(
      cp,
      'sa-midway',
      'operation ended',
      (a) => ['Failed', 'Error'].includes(operationPhase(a) ?? ''),
      45_000,
    );
    assert.equal(operationPhase(done), 'Failed');
    assert.equal((done.status?.['operationState'] as { message: string }).message, missing('sa-midway'));
    assert.equal(condition(done, 'SyncError'), missing('sa-midway'));
    // What was applied is reported as such; the ConfigMap was never sent, and is not reported Synced.
    const results = Object.fromEntries(resultsOf(done).map((r) => [`${r.kind}/${r.name}`, r]));
    assert.equal(results['Service/lb']?.status, 'Synced', JSON.stringify(resultsOf(done)));
    assert.notEqual(results['ConfigMap/later']?.status, 'Synced');
    const writes = (await cp.readAudit()).filter(realWrite('sa-midway'));
    assert.ok(
      writes.some((r) => r.resource === 'services' && r.name === 'lb' && r.code !== undefined && r.code < 300),
      'the Service write is in the audit log',
    );
    assert.deepEqual(
      writes.filter((w) => (w.time ?? '') > since).map((w) => `${w.code} ${w.verb} ${w.requestURI}`),
      [],
      'nothing sent after the deletion',
    );
    assert.equal(
      await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'later', namespace: 'sa-midway' }),
      undefined,
    );
  },
);
