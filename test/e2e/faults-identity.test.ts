// The ServiceAccount's rights taken away after the diff: its RoleBinding deleted before the sync,
// or between two waves of a running sync, and the ServiceAccount object deleted with or without its
// binding. Rights gone: a failed operation with a SyncError that names the ServiceAccount; every
// resource's result says whether it was applied, so no partial write goes unreported; the audit
// log agrees. Only the object gone: still that identity, never another.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, deleteRaw, getRaw, requestOk, startControlPlane } from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import {
  application, condition, deployer, getApp, grantControllerRights, guestbookFiles, heldWaveFiles, IN_CLUSTER, operationPhase, project, setSettings, startFixture, waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  for (const ns of ['revoked', 'midway', 'sa-gone']) await deployer(cp, ns, 'deployer');
  await applyRaw(cp.admin, project('faults', { destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'deployer' }] }));
  fx = await startFixture(cp, { ...guestbookFiles(), ...heldWaveFiles() });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

type Result = { kind: string; name: string; status: string; message?: string };
const sa = (ns: string) => `system:serviceaccount:${ns}:deployer`;
const revoke = (ns: string) => deleteRaw(cp.admin, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', name: 'deployer-all', namespace: ns });
const realWrite = (ns: string) => (r: AuditRecord) => r.namespace === ns && ['create', 'patch', 'update', 'delete'].includes(r.verb) && !r.dryRun && r.user === cp.controllerUserName;

async function startOperation(name: string, path: string): Promise<void> {
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/${name}`,
    body: { operation: { sync: {}, initiatedBy: { username: 'alice' } }, spec: { source: { path } } },
    contentType: 'application/merge-patch+json',
  });
}

function resultsOf(app: { status?: Record<string, unknown> }): Result[] {
  return ((app.status?.['operationState'] as { syncResult?: { resources?: Result[] } } | undefined)?.syncResult?.resources ?? []);
}

test('Role revoked between diff and sync: the operation fails naming the ServiceAccount, nothing written, every resource reported', { timeout: 90_000 }, async () => {
  await applyRaw(cp.admin, application('revoked', fx.repo.fileURL, { project: 'faults', destination: { server: IN_CLUSTER, namespace: 'revoked' }, automated: false }));
  // The diff, made as the ServiceAccount while it still had its rights.
  await waitForApp(cp, 'revoked', 'OutOfSync', (a) => (a.status?.['sync'] as { status?: string } | undefined)?.status === 'OutOfSync');
  await cp.waitForAudit((r) => r.namespace === 'revoked' && r.dryRun === true && r.impersonatedUser === sa('revoked'));
  await revoke('revoked');
  await startOperation('revoked', 'app');

  const done = await waitForApp(cp, 'revoked', 'operation ended', (a) => ['Failed', 'Error'].includes(operationPhase(a) ?? ''), 30_000);
  const message = (done.status?.['operationState'] as { message: string }).message;
  assert.ok(message.includes(sa('revoked')), `the operation message names the ServiceAccount: ${message}`);
  assert.ok((condition(done, 'SyncError') ?? '').includes(sa('revoked')), `SyncError: ${condition(done, 'SyncError')}`);
  assert.doesNotMatch(message, /undefined|\[object /);
  const writes = (await cp.readAudit()).filter(realWrite('revoked'));
  assert.ok(writes.every((w) => w.code === 403), `no write got through: ${writes.map((w) => `${w.code} ${w.verb} ${w.requestURI}`).join(', ')}`);
  for (const w of writes) assert.equal(w.impersonatedUser, sa('revoked'));
  assert.equal(await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'guestbook-config', namespace: 'revoked' }), undefined);
  // Whatever the engine attempted is reported as failed, never as Synced.
  for (const r of resultsOf(done)) assert.notEqual(r.status, 'Synced', `${r.kind}/${r.name} reported Synced but nothing was written`);
  assert.equal(((done.status?.['history'] ?? []) as unknown[]).length, 0);
});

test('Role revoked between two waves: wave 0 reported applied, wave 1 not, the failure names the ServiceAccount', { timeout: 90_000 }, async () => {
  await applyRaw(cp.admin, application('midway', fx.repo.fileURL, { project: 'faults', destination: { server: IN_CLUSTER, namespace: 'midway' }, automated: false }));
  await startOperation('midway', 'held');
  await waitForApp(cp, 'midway', 'Running', (a) => operationPhase(a) === 'Running');
  await until('wave 0 applied', async () => (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'Service', name: 'lb', namespace: 'midway' })) !== undefined);
  await revoke('midway');
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: '/api/v1/namespaces/midway/services/lb/status',
    body: { status: { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } } },
    contentType: 'application/merge-patch+json',
  });

  const done = await waitForApp(cp, 'midway', 'operation ended', (a) => ['Failed', 'Error'].includes(operationPhase(a) ?? ''), 45_000);
  const message = (done.status?.['operationState'] as { message: string }).message;
  assert.ok(message.includes(sa('midway')), `the operation message names the ServiceAccount: ${message}`);
  assert.ok((condition(done, 'SyncError') ?? '').includes(sa('midway')));
  // What was applied is reported as such; the ConfigMap was not written and is not reported Synced.
  const results = Object.fromEntries(resultsOf(done).map((r) => [`${r.kind}/${r.name}`, r]));
  assert.equal(results['Service/lb']?.status, 'Synced', JSON.stringify(resultsOf(done)));
  assert.notEqual(results['ConfigMap/later']?.status, 'Synced');
  const audit = (await cp.readAudit()).filter(realWrite('midway'));
  assert.ok(audit.some((r) => r.resource === 'services' && r.name === 'lb' && r.code !== undefined && r.code < 300), 'the Service write is in the audit log');
  assert.ok(audit.filter((r) => r.resource === 'configmaps').every((r) => r.code === 403), 'no ConfigMap write got through');
  assert.equal(await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'later', namespace: 'midway' }), undefined);
});

test('ServiceAccount deleted together with its binding between diff and sync: the operation fails naming it, nothing written', { timeout: 90_000 }, async () => {
  await applyRaw(cp.admin, application('sa-gone', fx.repo.fileURL, { project: 'faults', destination: { server: IN_CLUSTER, namespace: 'sa-gone' }, automated: false }));
  await waitForApp(cp, 'sa-gone', 'OutOfSync', (a) => (a.status?.['sync'] as { status?: string } | undefined)?.status === 'OutOfSync');
  await deleteRaw(cp.admin, { apiVersion: 'v1', kind: 'ServiceAccount', name: 'deployer', namespace: 'sa-gone' });
  await revoke('sa-gone');
  await startOperation('sa-gone', 'app');
  const done = await waitForApp(cp, 'sa-gone', 'operation ended', (a) => ['Failed', 'Error'].includes(operationPhase(a) ?? ''), 30_000);
  const message = (done.status?.['operationState'] as { message: string }).message;
  assert.ok(message.includes(sa('sa-gone')), message);
  assert.ok((await cp.readAudit()).filter(realWrite('sa-gone')).every((w) => w.code === 403));
  // The controller keeps reconciling: the Application is compared again and says why.
  const later = await getApp(cp, 'sa-gone');
  assert.equal(later['operation'], undefined, 'the failed operation is not retried without a retry policy');
});

test('ServiceAccount object deleted alone (its RoleBinding kept): Kubernetes still authorizes the impersonated name, so the sync proceeds as that name', { timeout: 90_000 }, async () => {
  await deployer(cp, 'sa-only', 'deployer');
  await applyRaw(cp.admin, application('sa-only', fx.repo.fileURL, { project: 'faults', destination: { server: IN_CLUSTER, namespace: 'sa-only' }, automated: false }));
  await waitForApp(cp, 'sa-only', 'OutOfSync', (a) => (a.status?.['sync'] as { status?: string } | undefined)?.status === 'OutOfSync');
  await deleteRaw(cp.admin, { apiVersion: 'v1', kind: 'ServiceAccount', name: 'deployer', namespace: 'sa-only' });
  await startOperation('sa-only', 'app');
  const done = await waitForApp(cp, 'sa-only', 'operation ended', (a) => ['Succeeded', 'Failed', 'Error'].includes(operationPhase(a) ?? ''), 30_000);
  const message = (done.status?.['operationState'] as { message: string }).message;
  // Impersonating a ServiceAccount name needs no ServiceAccount object (the API server checks only
  // the controller's impersonate right and RBAC for the name), as in Argo CD: revoke the binding to
  // stop it. What must hold is that the identity never silently changes.
  assert.equal(operationPhase(done), 'Succeeded', message);
  assert.ok(message.includes(sa('sa-only')), message);
  const writes = (await cp.readAudit()).filter(realWrite('sa-only'));
  assert.ok(writes.length >= 2);
  for (const w of writes) assert.equal(w.impersonatedUser, sa('sa-only'), `${w.verb} ${w.requestURI}`);
});
