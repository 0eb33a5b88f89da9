// Every request the controller makes for an Application names it, its project and the revision in
// the impersonated user's extras, which the API server writes to the audit log
// (docs/impersonation.md §11): writes, dry-runs and reads, from the first comparison through a new
// commit to the deletion of its resources. Without the right to send them the controller says so
// once and goes on without them (so do `impersync diff` and `explain --check-rights`, on stderr), or,
// when argocd-cm requires them, refuses to send anything.
// (The same check runs over the whole e2e suite when each control plane stops: support/attribution.ts.)
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { run as diffRun } from '../../src/cli/diff.ts';
import { run as explainRun } from '../../src/cli/explain.ts';
import { LIVE_WATCH_USER_AGENT } from '../../src/kube/client.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import { applyRaw, getRaw, requestOk, startControlPlane } from '../support/index.ts';
import { captureIO } from '../support/cli.ts';
import { until } from '../support/faults.ts';
import {
  IN_CLUSTER,
  NS,
  application,
  condition,
  deleteApp,
  deployer,
  grantControllerRights,
  guestbookFiles,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;
/** When the last test withdrew the right to impersonate the extras: what follows goes without them. */
let withdrawnAt: number | undefined;

const ENABLED = { 'application.sync.impersonation.enabled': 'true' };

before(async () => {
  cp = await startControlPlane({
    attributionExempt: (r) => withdrawnAt !== undefined && Date.parse(r.time ?? '') >= withdrawnAt,
  });
  await grantControllerRights(cp);
  await setSettings(cp, ENABLED);
  for (const ns of ['attr-a', 'attr-req', 'attr-opt']) await deployer(cp, ns, 'deployer');
  await applyRaw(
    cp.admin,
    project('attr', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'attr-*', defaultServiceAccount: 'deployer' }],
    }),
  );
  fx = await startFixture(cp, guestbookFiles());
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

const asDeployer = (ns: string) => (r: AuditRecord) =>
  r.namespace === ns &&
  r.user === cp.controllerUserName &&
  r.impersonatedUser === `system:serviceaccount:${ns}:deployer` &&
  r.userAgent === 'impersync';

/** Whether the API server lets the controller impersonate impersync's extras (a SubjectAccessReview). */
async function mayImpersonateExtras(): Promise<boolean> {
  const answer = (await requestOk(cp.admin, {
    method: 'POST',
    path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: cp.controllerUserName,
        resourceAttributes: {
          verb: 'impersonate',
          group: 'authentication.k8s.io',
          resource: 'userextras',
          subresource: 'impersync.io/application',
        },
      },
    },
  })) as { status?: { allowed?: boolean } };
  return answer.status?.allowed === true;
}

function extrasOf(r: AuditRecord): Record<string, string[]> {
  return r.impersonatedExtra;
}

const revisionOf = (app: { status?: Record<string, unknown> }) =>
  (app.status?.['sync'] as { revision?: string } | undefined)?.revision;

test('writes, dry-runs and reads made for an Application name it, its project and the commit, through a new commit and the deletion', async () => {
  await applyRaw(
    cp.admin,
    application('attr-a', fx.repo.url, {
      project: 'attr',
      destination: { server: IN_CLUSTER, namespace: 'attr-a' },
      finalizer: true,
    }),
  );
  const first = await waitForApp(
    cp,
    'attr-a',
    'Succeeded and Synced',
    (a) => operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string }).status === 'Synced',
  );
  const rev1 = revisionOf(first);
  assert.equal(rev1, fx.repo.head());
  // As whom revision rev1 was applied, from the Application alone.
  const applied = first.status?.['operationState'] as { syncResult?: { identity?: string; revision?: string } };
  assert.deepEqual(
    [applied.syncResult?.revision, applied.syncResult?.identity],
    [rev1, 'system:serviceaccount:attr-a:deployer'],
  );
  const history = (first.status?.['history'] ?? []) as Array<{ revision: string; identity?: string }>;
  assert.deepEqual(
    history.map((h) => [h.revision, h.identity]),
    [[rev1, 'system:serviceaccount:attr-a:deployer']],
  );
  const made = (await cp.readAudit()).filter(asDeployer('attr-a'));
  const writes = made.filter((r) => r.verb === 'patch' && !r.dryRun);
  const dryRuns = made.filter((r) => r.verb === 'patch' && r.dryRun);
  // Reads mostly come from the shared watch of the namespace (which names no Application), so a GET
  // is not always sent; each one that is names the Application like the rest.
  assert.ok(writes.length >= 2 && dryRuns.length >= 2, JSON.stringify(made.map((r) => r.verb)));
  for (const r of made)
    assert.deepEqual(
      extrasOf(r),
      {
        'impersync.io/application': ['argocd/attr-a'],
        'impersync.io/project': ['attr'],
        'impersync.io/revision': [rev1],
      },
      `${r.verb} ${r.requestURI}`,
    );
  // The live-object watches serve every Application acting as this ServiceAccount: they name none.
  const shared = (await cp.readAudit({ open: true })).filter(
    (r) => r.namespace === 'attr-a' && r.userAgent === LIVE_WATCH_USER_AGENT && r.impersonatedUser !== undefined,
  );
  assert.ok(shared.some((r) => r.verb === 'watch'));
  for (const r of shared) assert.deepEqual(extrasOf(r), {}, `${r.verb} ${r.requestURI}`);

  // A new commit: what is compared and synced from then on names it.
  const since = Date.now();
  const rev2 = await fx.repo.commit({
    'app/configmap.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guestbook-config\ndata:\n  greeting: hello again\n',
  });
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/attr-a`,
    body: { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'normal' } } },
    contentType: 'application/merge-patch+json',
  });
  await waitForApp(
    cp,
    'attr-a',
    `synced to ${rev2}`,
    (a) =>
      revisionOf(a) === rev2 &&
      (a.status?.['operationState'] as { syncResult?: { revision?: string } } | undefined)?.syncResult?.revision ===
        rev2 &&
      operationPhase(a) === 'Succeeded',
  );
  const later = (await cp.readAudit())
    .filter(asDeployer('attr-a'))
    .filter((r) => Date.parse(r.time ?? '') >= since && r.verb === 'patch' && !r.dryRun);
  assert.ok(later.length >= 1, 'the change was applied');
  for (const r of later) assert.deepEqual(extrasOf(r)['impersync.io/revision'], [rev2], r.requestURI);

  // The resources finalizer deletes them as the ServiceAccount, naming the revision they are at.
  await deleteApp(cp, 'attr-a');
  const end = Date.now() + 30_000;
  while (
    await getRaw(cp.admin, { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', name: 'attr-a', namespace: NS })
  ) {
    if (Date.now() > end) throw new Error('attr-a not deleted');
    await new Promise((r) => setTimeout(r, 200));
  }
  const deletes = (await cp.readAudit()).filter(asDeployer('attr-a')).filter((r) => r.verb === 'delete');
  assert.ok(deletes.length >= 2, `deletes: ${deletes.length}`);
  for (const r of deletes)
    assert.deepEqual(
      extrasOf(r),
      {
        'impersync.io/application': ['argocd/attr-a'],
        'impersync.io/project': ['attr'],
        'impersync.io/revision': [rev2],
      },
      r.requestURI,
    );
});

test('without the right to impersonate the extras: required, nothing is sent as the ServiceAccount and the comparison says why; optional, said once and synced without them', async () => {
  // Withdraw the right the harness granted as the install does (test/support/rbac.ts grantImpersonation).
  assert.ok(await mayImpersonateExtras(), 'the harness lets the controller impersonate the extras');
  withdrawnAt = Date.now() - 1000;
  await requestOk(cp.admin, {
    method: 'DELETE',
    path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/impersync-impersonate-extras',
  });
  await setSettings(cp, { ...ENABLED, 'impersync.impersonation.requireExtras': 'true' });
  // The Application comes once both have taken effect, however late on a loaded machine: the API
  // server refuses the extras (its RBAC cache has seen the deletion) and the controller's watch of
  // argocd-cm has the setting. Else its first requests could still go out with the extras allowed,
  // or as if they were optional.
  await until('the extras refused to the controller', async () => !(await mayImpersonateExtras()));
  await until('the controller to read requireExtras', () => {
    const settings = fx.controller.cache.settingsConfigMap();
    return !(settings instanceof Error) && settings?.data?.['impersync.impersonation.requireExtras'] === 'true';
  });
  await applyRaw(
    cp.admin,
    application('attr-req', fx.repo.url, {
      project: 'attr',
      destination: { server: IN_CLUSTER, namespace: 'attr-req' },
    }),
  );
  const refused = await waitForApp(cp, 'attr-req', 'a ComparisonError naming the extras', (a) =>
    (condition(a, 'ComparisonError') ?? '').includes('userextras/impersync.io/application'),
  );
  assert.match(condition(refused, 'ComparisonError') ?? '', /impersync\.impersonation\.requireExtras: "true"/);
  assert.equal((refused.status?.['sync'] as { status?: string }).status, 'Unknown');
  assert.equal(operationPhase(refused), undefined, 'no sync started');
  // Refused at impersonation: nothing made for the Application reached the destination (only the
  // shared watches' lists, which name no Application in either mode, ran as the ServiceAccount).
  const asSA = (await cp.readAudit()).filter(
    (r) => r.namespace === 'attr-req' && r.impersonatedUser === 'system:serviceaccount:attr-req:deployer',
  );
  assert.deepEqual(
    asSA.filter((r) => r.userAgent !== LIVE_WATCH_USER_AGENT).map((r) => `${r.verb} ${r.requestURI}`),
    [],
  );
  const tried = (await cp.readAudit()).filter(
    (r) => r.namespace === 'attr-req' && r.user === cp.controllerUserName && r.userAgent === 'impersync',
  );
  assert.ok(tried.length >= 2 && tried.every((r) => r.code === 403), JSON.stringify(tried.map((r) => r.code)));

  // Not required: the same controller goes on without them.
  await setSettings(cp, ENABLED);
  await applyRaw(
    cp.admin,
    application('attr-opt', fx.repo.url, {
      project: 'attr',
      destination: { server: IN_CLUSTER, namespace: 'attr-opt' },
    }),
  );
  await waitForApp(cp, 'attr-opt', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
  const writes = (await cp.readAudit()).filter(asDeployer('attr-opt')).filter((r) => r.verb === 'patch' && !r.dryRun);
  assert.ok(writes.length >= 2);
  for (const r of writes) assert.deepEqual(extrasOf(r), {}, r.requestURI);
  const told = fx.logs.filter((l) => l.includes("may not impersonate impersync's user extras"));
  assert.equal(told.length, 1, told.join('\n'));

  // The commands that act as the identity with the same credential go on too, and say so once.
  const warning = `warning: the kubeconfig's user may not impersonate impersync's user extras on ${IN_CLUSTER}:`;
  const e = captureIO();
  const explained = await explainRun(
    ['--kubeconfig', cp.controllerKubeconfigPath, '--app', `${NS}/attr-opt`, '--check-rights'],
    e.io,
  );
  assert.equal(explained, 0, e.out() + e.err());
  assert.equal(
    e
      .err()
      .split('\n')
      .filter((l) => l.startsWith(warning)).length,
    1,
    e.err(),
  );
  const d = captureIO();
  assert.equal(await diffRun(['attr-opt', '--kubeconfig', cp.controllerKubeconfigPath], d.io), 0, d.out() + d.err());
  assert.equal(
    d
      .err()
      .split('\n')
      .filter((l) => l.startsWith(warning)).length,
    1,
    d.err(),
  );
});
