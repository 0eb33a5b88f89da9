// Every missing right at once, on a real API server (docs/impersonation.md §12): an Application
// whose ServiceAccount lacks three rights gets one condition and one event naming all three, in
// place of one Forbidden at a time; `impersync explain --check-rights` prints the same before the
// first sync; the sync names them too; once granted, the Application syncs. The reviews are made
// as the ServiceAccount, naming the Application like every other request.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { run as explainRun } from '../../src/cli/explain.ts';
import type { TestControlPlane } from '../support/index.ts';
import { captureIO } from '../support/cli.ts';
import {
  applyRaw,
  createNamespace,
  createServiceAccount,
  grantRole,
  requestOk,
  startControlPlane,
} from '../support/index.ts';
import {
  IN_CLUSTER,
  NS,
  application,
  condition,
  grantControllerRights,
  guestbookFiles,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

const TENANT = 'rights-dev';
const SA = `system:serviceaccount:${TENANT}:deployer`;
// The guestbook is a ConfigMap and a Service. The deployer may create both and read the ConfigMap,
// but not patch it, and may neither read nor patch the Service: three rights missing.
const EXPECTED = `ServiceAccount ${TENANT}:deployer may not: patch configmaps in ${TENANT}; get, patch services in ${TENANT}`;

let cp: TestControlPlane;
let fx: Fixture;

async function grantDeployer(rules: Array<{ resources: string[]; verbs: string[] }>): Promise<void> {
  await grantRole(cp.admin, {
    name: 'deployer',
    namespace: TENANT,
    to: { serviceAccount: 'deployer', namespace: TENANT },
    rules: rules.map((r) => ({ apiGroups: [''], ...r })),
  });
}

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await createNamespace(cp.admin, TENANT);
  await createServiceAccount(cp.admin, TENANT, 'deployer');
  await grantDeployer([
    { resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create'] },
    { resources: ['services'], verbs: ['list', 'watch', 'create'] },
  ]);
  await applyRaw(
    cp.admin,
    project('rights', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'rights-*', defaultServiceAccount: 'deployer' }],
    }),
  );
  fx = await startFixture(cp, guestbookFiles());
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('three rights missing: explain --check-rights names them before the first sync, the comparison in one condition and one event, the sync too', async () => {
  await applyRaw(
    cp.admin,
    application('rights-dev', fx.repo.url, {
      project: 'rights',
      destination: { server: IN_CLUSTER, namespace: TENANT },
      automated: false,
    }),
  );

  // Before anything is synced: the same message, asked live as the ServiceAccount.
  const c = captureIO();
  const code = await explainRun(
    ['--kubeconfig', cp.controllerKubeconfigPath, '--app', `${NS}/rights-dev`, '--check-rights'],
    c.io,
  );
  assert.equal(code, 1, c.err());
  assert.ok(c.out().includes(`MISSING RIGHTS: ${EXPECTED}\n`), c.out());
  assert.match(
    c.out(),
    new RegExp(`revision ${fx.repo.head()} needs, asked live as ServiceAccount ${TENANT}:deployer`),
  );
  const j = captureIO();
  assert.equal(
    await explainRun(
      ['--kubeconfig', cp.controllerKubeconfigPath, '--app', `${NS}/rights-dev`, '--check-rights', '-o', 'json'],
      j.io,
    ),
    1,
  );
  const rights = (JSON.parse(j.out()) as { rights: { message: string; missing: unknown[]; needed: number } }).rights;
  assert.equal(rights.message, EXPECTED);
  assert.deepEqual(rights.missing, [
    { namespace: TENANT, resource: 'configmaps', verbs: ['patch'] },
    { namespace: TENANT, resource: 'services', verbs: ['get', 'patch'] },
  ]);

  // The controller's comparison: one ComparisonError naming all three, one event.
  const compared = await waitForApp(cp, 'rights-dev', 'the missing rights named', (a) =>
    ((a.status?.['conditions'] ?? []) as Array<{ message: string }>).some((x) => x.message === EXPECTED),
  );
  const comparisonErrors = ((compared.status?.['conditions'] ?? []) as Array<{ type: string; message: string }>).filter(
    (x) => x.type === 'ComparisonError',
  );
  assert.deepEqual(
    comparisonErrors.map((x) => x.message),
    [EXPECTED],
    'one condition, in place of the Forbiddens',
  );
  const events = fx.events.events.filter((e) => e.object.name === 'rights-dev' && e.reason === 'MissingRights');
  assert.deepEqual(
    events.map((e) => [e.type, e.message]),
    [['Warning', EXPECTED]],
  );
  assert.ok(
    !fx.events.events.some((e) => e.object.name === 'rights-dev' && e.reason === 'ComparisonError'),
    'no event per Forbidden',
  );
  // Asked as the ServiceAccount, naming the Application like every request made for it.
  const reviews = (await cp.readAudit()).filter(
    (r) => r.resource === 'selfsubjectaccessreviews' && r.impersonatedUser === SA,
  );
  assert.ok(reviews.length >= 3);
  for (const r of reviews) assert.deepEqual(r.impersonatedExtra['impersync.io/application'], [`${NS}/rights-dev`]);

  // The sync: refused, and it says all of it too.
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/rights-dev`,
    body: { operation: { sync: {}, initiatedBy: { username: 'alice' } } },
    contentType: 'application/merge-patch+json',
  });
  const failed = await waitForApp(cp, 'rights-dev', 'the sync Failed', (a) => operationPhase(a) === 'Failed');
  assert.ok((condition(failed, 'SyncError') ?? '').startsWith(`${EXPECTED}; `), condition(failed, 'SyncError'));

  // Granted: the next sync goes through.
  await grantDeployer([
    { resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
    { resources: ['services'], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
  ]);
  const ok = captureIO();
  assert.equal(
    await explainRun(
      ['--kubeconfig', cp.controllerKubeconfigPath, '--app', `${NS}/rights-dev`, '--check-rights'],
      ok.io,
    ),
    0,
    ok.out() + ok.err(),
  );
  assert.match(ok.out(), /all 6 granted/);
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/rights-dev`,
    body: { operation: { sync: {}, initiatedBy: { username: 'alice' } } },
    contentType: 'application/merge-patch+json',
  });
  await waitForApp(cp, 'rights-dev', 'Succeeded and no longer refused', (a) => operationPhase(a) === 'Succeeded');
});

test('explain --check-rights is live only', async () => {
  const c = captureIO();
  assert.equal(await explainRun(['-f', 'examples/argocd-cm.yaml', '--check-rights'], c.io), 2);
  assert.match(c.err(), /--check-rights asks a live cluster/);
});
