// The ServiceAccount existence check when the controller may not read ServiceAccounts (a custom
// install that grants only `impersonate`): the check is refused, logged once at info, and the sync
// proceeds as before, as the impersonated name. With `get` granted only for listed ServiceAccounts
// (resourceNames, the install's narrower shape), the check works for those. The default shape
// (`get` on every ServiceAccount) is test/e2e/faults-identity.test.ts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, deleteRaw, grantImpersonation, requestOk, startControlPlane } from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import {
  application,
  condition,
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
  await grantControllerRights(cp, undefined, { getServiceAccounts: false });
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  for (const ns of ['no-get', 'no-get-2', 'narrow']) await deployer(cp, ns, 'deployer');
  // The narrower shape: impersonate and get for the listed ServiceAccount only, in its namespace.
  await grantImpersonation(cp.admin, {
    name: 'impersync-narrow',
    serviceAccounts: [{ namespace: 'narrow', name: 'deployer' }],
    verbs: ['impersonate', 'get'],
  });
  await applyRaw(
    cp.admin,
    project('tenants', {
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
const realWrite = (ns: string) => (r: AuditRecord) =>
  r.namespace === ns &&
  ['create', 'patch', 'update', 'delete'].includes(r.verb) &&
  !r.dryRun &&
  r.user === cp.controllerUserName;
const saCheck = (ns: string) => (r: AuditRecord) =>
  r.user === cp.controllerUserName &&
  r.impersonatedUser === undefined &&
  r.verb === 'get' &&
  r.resource === 'serviceaccounts' &&
  r.namespace === ns;

async function syncAfterDeletingServiceAccount(
  ns: string,
): Promise<Record<string, unknown> & { status?: Record<string, unknown> }> {
  await applyRaw(
    cp.admin,
    application(ns, fx.repo.url, {
      project: 'tenants',
      destination: { server: IN_CLUSTER, namespace: ns },
      automated: false,
    }),
  );
  await waitForApp(
    cp,
    ns,
    'OutOfSync',
    (a) => (a.status?.['sync'] as { status?: string } | undefined)?.status === 'OutOfSync',
  );
  await deleteRaw(cp.admin, { apiVersion: 'v1', kind: 'ServiceAccount', name: 'deployer', namespace: ns });
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/${ns}`,
    body: { operation: { sync: {}, initiatedBy: { username: 'alice' } } },
    contentType: 'application/merge-patch+json',
  });
  return waitForApp(
    cp,
    ns,
    'operation ended',
    (a) => ['Succeeded', 'Failed', 'Error'].includes(operationPhase(a) ?? ''),
    30_000,
  );
}

const cannotCheck =
  /cannot check that ServiceAccount "deployer" exists in namespace "no-get(-2)?" \(403 Forbidden: .*\); syncing without the check/;

test(
  'controller without get on serviceaccounts: the check is refused, logged once at info, and the sync proceeds as the impersonated name',
  { timeout: 90_000 },
  async () => {
    for (const ns of ['no-get', 'no-get-2']) {
      const done = await syncAfterDeletingServiceAccount(ns);
      const message = (done.status?.['operationState'] as { message: string }).message;
      // As before the check existed: the API server authorises the name through RBAC alone.
      assert.equal(operationPhase(done), 'Succeeded', message);
      assert.ok(message.includes(sa(ns)), message);
      const audit = await cp.readAudit();
      assert.ok(
        audit.some((r) => saCheck(ns)(r) && r.code === 403),
        'the check was made, and refused',
      );
      const writes = audit.filter(realWrite(ns));
      assert.ok(writes.length >= 2);
      for (const w of writes) assert.equal(w.impersonatedUser, sa(ns), `${w.verb} ${w.requestURI}`);
    }
    const lines = fx.logs
      .map((l) => JSON.parse(l) as { level?: string; msg?: string })
      .filter((l) => cannotCheck.test(l.msg ?? ''));
    assert.equal(
      lines.length,
      1,
      `one info line for the missing permission, not one per sync:\n${JSON.stringify(lines)}`,
    );
    assert.equal(lines[0]?.level, 'info');
  },
);

test(
  'get granted only for the listed ServiceAccount (resourceNames): the check works there and refuses the deleted one',
  { timeout: 90_000 },
  async () => {
    const done = await syncAfterDeletingServiceAccount('narrow');
    const expected = `ServiceAccount "deployer" not found in namespace "narrow": refusing to sync as ${sa('narrow')}`;
    assert.equal(operationPhase(done), 'Failed');
    assert.equal((done.status?.['operationState'] as { message: string }).message, expected);
    assert.equal(condition(done, 'SyncError'), expected);
    const audit = await cp.readAudit();
    assert.ok(
      audit.some((r) => saCheck('narrow')(r) && r.code === 404),
      'the check was allowed by name and answered 404',
    );
    assert.deepEqual(
      audit.filter(realWrite('narrow')).map((w) => `${w.code} ${w.verb} ${w.requestURI}`),
      [],
    );
  },
);
