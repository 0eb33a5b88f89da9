// The controller end to end on a real control plane: auto-sync as the project's ServiceAccount,
// enforced deny with no write at all, fallback when not enforced, the switch flipped while running,
// deletion cascading as the ServiceAccount.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, getRaw, requestOk, startControlPlane } from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import {
  application,
  condition,
  deleteApp,
  deployer,
  getApp,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  NS,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';
import type { EventSink } from '../../src/controller/events.ts';
import { until } from '../support/faults.ts';

let cp: TestControlPlane;
let fx: Fixture;
// Example 1's events as each finished recording, the "Initiated automated sync" slowed by 1.5 s:
// the operation worker's first event still comes after it.
const finished: string[] = [];
let slowInitiated = true;
const slowSink: EventSink = {
  record: async (o, _t, _r, m) => {
    if (o.name !== 'guestbook') return;
    if (slowInitiated && m.startsWith('Initiated automated sync')) await new Promise((r) => setTimeout(r, 1500));
    finished.push(m);
  },
};
const SA = 'system:serviceaccount:guestbook:generic-deployer';

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await deployer(cp, 'guestbook', 'generic-deployer');
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await applyRaw(
    cp.admin,
    project('my-project', {
      destinationServiceAccounts: [
        { server: IN_CLUSTER, namespace: 'guestbook', defaultServiceAccount: 'generic-deployer' },
      ],
    }),
  );
  fx = await startFixture(cp, guestbookFiles(), { events: [slowSink] });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('example 1: an automated Application syncs as the project ServiceAccount, every write impersonated', async () => {
  await applyRaw(cp.admin, application('guestbook', fx.repo.url, { project: 'my-project', finalizer: true }));
  const app = await waitForApp(
    cp,
    'guestbook',
    'Synced after a Succeeded sync',
    (a) =>
      operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced',
  );
  assert.match(condition(app, 'ImpersonationInfo') ?? '', new RegExp(`run as ${SA}`));
  assert.equal(app.status?.['sourceType'] as string, 'Directory');
  assert.equal((app.status?.['health'] as { status: string }).status, 'Healthy');
  assert.equal(((app.status?.['history'] ?? []) as unknown[]).length, 1);
  assert.equal(app['operation'], undefined, 'operation cleared when done');
  const cm = await getRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: 'guestbook-config',
    namespace: 'guestbook',
  });
  assert.ok(cm, 'the ConfigMap was applied');
  const writes = (await cp.readAudit()).filter(
    (r) =>
      r.namespace === 'guestbook' &&
      ['create', 'patch', 'update', 'delete'].includes(r.verb) &&
      r.user === cp.controllerUserName,
  );
  assert.ok(writes.length >= 2, `writes to guestbook by the controller: ${writes.length}`);
  for (const w of writes) assert.equal(w.impersonatedUser, SA, `${w.verb} ${w.requestURI} was not impersonated`);
  assert.ok(fx.events.events.some((e) => e.reason === 'OperationCompleted' && e.object.name === 'guestbook'));
  // Before anything touched the destination the Application was written once: the first comparison
  // with the automated sync's `operation` and its Running state (no patch of `operation` after it,
  // no Running write of its own).
  const audit = await cp.readAudit();
  const firstApply = audit.findIndex(
    (r) => r.namespace === 'guestbook' && r.verb === 'patch' && !r.dryRun && r.impersonatedUser === SA,
  );
  assert.ok(firstApply > 0, 'an apply in the audit log');
  const appWrites = audit
    .slice(0, firstApply)
    .filter(
      (r) =>
        r.user === cp.controllerUserName &&
        r.resource === 'applications' &&
        r.name === 'guestbook' &&
        ['update', 'patch'].includes(r.verb) &&
        (r.code ?? 0) < 400,
    );
  assert.equal(appWrites.length, 1, appWrites.map((r) => `${r.verb} ${r.subresource ?? ''}`).join(', '));
  // Argo CD's event for the automated sync, and the audit trail's naming who runs it: once each.
  const started = fx.events.events.filter((e) => e.reason === 'OperationStarted' && e.object.name === 'guestbook');
  assert.deepEqual(
    started.map((e) => e.message.replace(/'[0-9a-f]{40}'$/, "'<sha>'")),
    ["Initiated automated sync to '<sha>'", `Sync operation started as ${SA}`],
  );
  // In that order even when the first is slow to record: the worker waits for it.
  const mask = (m: string) => m.replace(/'[0-9a-f]{40}'$/, "'<sha>'");
  assert.deepEqual(finished.filter((m) => /^(Initiated automated sync|Sync operation started)/.test(m)).map(mask), [
    "Initiated automated sync to '<sha>'",
    `Sync operation started as ${SA}`,
  ]);
  slowInitiated = false;
  // The same two in the API server, written behind the workers and in the order recorded.
  const apiStarted = async () =>
    (
      (await requestOk(cp.admin, {
        method: 'GET',
        path: '/api/v1/namespaces/argocd/events?fieldSelector=involvedObject.name%3Dguestbook',
      })) as { items: Array<{ reason: string; message: string; metadata: { resourceVersion: string } }> }
    ).items
      .filter((e) => e.reason === 'OperationStarted')
      .sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion))
      .map((e) => mask(e.message));
  await until('the OperationStarted Events in the API server', async () => (await apiStarted()).length >= 2);
  assert.deepEqual(await apiStarted(), ["Initiated automated sync to '<sha>'", `Sync operation started as ${SA}`]);
});

test('no update loop: a Synced Application is not written again until something changes', async () => {
  await waitForApp(
    cp,
    'guestbook',
    'Synced',
    (a) => (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced' && a['operation'] === undefined,
  );
  const appWrite = (r: AuditRecord) =>
    r.resource === 'applications' && r.name === 'guestbook' && ['update', 'patch'].includes(r.verb);
  // Work still in flight when the wait above returned may write once more, later on a loaded
  // machine: settle first, until no write has come for 1.5 s and over several polls (a stalled
  // process counts as one poll, not as quiet). An update loop never settles.
  const settleBy = Date.now() + 30_000;
  let written = (await cp.readAudit()).filter(appWrite).length;
  let quietSince = Date.now();
  let quietPolls = 0;
  while (quietPolls < 6 || Date.now() - quietSince < 1500) {
    if (Date.now() > settleBy) assert.fail(`the Application was still written to after 30 s: ${written} writes`);
    await new Promise((r) => setTimeout(r, 250));
    const now = (await cp.readAudit()).filter(appWrite).length;
    if (now === written) quietPolls++;
    else [written, quietSince, quietPolls] = [now, Date.now(), 0];
  }
  const before = (await cp.readAudit()).length;
  await new Promise((r) => setTimeout(r, 3000));
  const writes = (await cp.readAudit()).slice(before).filter(appWrite);
  assert.deepEqual(
    writes.map((r) => `${r.verb} ${r.subresource ?? ''}`),
    [],
  );
});

test('enforced with no match: operation Error with the exact message and no write to the destination', async () => {
  await applyRaw(
    cp.admin,
    application('nomatch', fx.repo.url, {
      project: 'my-project',
      destination: { server: IN_CLUSTER, namespace: 'elsewhere' },
      automated: false,
    }),
  );
  await applyRaw(cp.admin, {
    ...application('nomatch', fx.repo.url, {
      project: 'my-project',
      destination: { server: IN_CLUSTER, namespace: 'elsewhere' },
      automated: false,
    }),
    operation: { sync: { revision: 'HEAD' }, initiatedBy: { username: 'alice' } },
  });
  // The operation's Error and the refresh's ComparisonError are written by two queues, in either
  // order: wait for both.
  const app = await waitForApp(
    cp,
    'nomatch',
    'operation Error and ComparisonError',
    (a) => operationPhase(a) === 'Error' && condition(a, 'ComparisonError') !== undefined,
  );
  const expected = `no matching service account found for destination server ${IN_CLUSTER} and namespace elsewhere`;
  assert.equal((app.status?.['operationState'] as { message: string }).message, expected);
  assert.equal(condition(app, 'ComparisonError'), expected);
  const toElsewhere = (await cp.readAudit()).filter((r) => r.namespace === 'elsewhere');
  assert.deepEqual(
    toElsewhere.map((r) => `${r.verb} ${r.requestURI}`),
    [],
    'no request at all to the destination namespace',
  );
});

test('not enforced: the sync runs as the controller identity and says so; switching back takes effect without restart', async () => {
  await deployer(cp, 'open', 'unused');
  // The controller itself needs rights there for a fallback sync (the fallback RBAC shape).
  const { grantRole } = await import('../support/index.ts');
  await grantRole(cp.admin, {
    name: 'controller-open',
    namespace: 'open',
    to: 'controller',
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  await setSettings(cp, {
    'application.sync.impersonation.enabled': 'true',
    'application.sync.impersonation.enforced': 'false',
  });
  await applyRaw(
    cp.admin,
    application('fallback', fx.repo.url, {
      project: 'my-project',
      destination: { server: IN_CLUSTER, namespace: 'open' },
    }),
  );
  const app = await waitForApp(
    cp,
    'fallback',
    'Succeeded, identity condition',
    (a) => operationPhase(a) === 'Succeeded' && (condition(a, 'ImpersonationInfo') ?? '').includes('falling back'),
  );
  const fallbackLine = `no matching service account found for impersonation (project: my-project, server: ${IN_CLUSTER}, namespace: open), falling back to controller service account`;
  assert.match(condition(app, 'ImpersonationInfo') ?? '', new RegExp(fallbackLine.replace(/[()]/g, '\\$&')));
  assert.ok(fx.events.events.some((e) => e.reason === 'ImpersonationFallback' && e.message === fallbackLine));
  assert.ok(
    fx.logs.some((l) => l.includes(fallbackLine)),
    'the info log line',
  );
  const writes = (await cp.readAudit()).filter(
    (r) => r.namespace === 'open' && r.verb === 'patch' && r.user === cp.controllerUserName,
  );
  assert.ok(writes.length > 0);
  for (const w of writes) assert.equal(w.impersonatedUser, undefined);

  // Enforced again, live: the next reconcile of the same Application is refused.
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  const refused = await waitForApp(cp, 'fallback', 'ComparisonError after enforcing', (a) =>
    (condition(a, 'ComparisonError') ?? '').startsWith('no matching service account'),
  );
  assert.match(
    condition(refused, 'ImpersonationInfo') ?? '',
    /^refused: no matching service account found for destination server/,
  );
});

test('impersonation switched off: the §10 warning appears and the controller credential is used', async () => {
  await setSettings(cp, {});
  const app = await waitForApp(
    cp,
    'guestbook',
    'ImpersonationWarning',
    (a) => condition(a, 'ImpersonationWarning') !== undefined,
  );
  assert.match(
    condition(app, 'ImpersonationWarning') ?? '',
    /AppProject 'my-project' has 1 destinationServiceAccounts entry, but sync impersonation is disabled/,
  );
  assert.match(condition(app, 'ImpersonationInfo') ?? '', /disabled/);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await waitForApp(
    cp,
    'guestbook',
    'impersonating again',
    (a) => (condition(a, 'ImpersonationInfo') ?? '').includes(SA) && condition(a, 'ImpersonationWarning') === undefined,
  );
});

test('a project limit violated blocks the sync: nothing is written', async () => {
  await deployer(cp, 'limited', 'deployer');
  await applyRaw(
    cp.admin,
    project('limited', {
      namespaceResourceBlacklist: [{ group: '', kind: 'ConfigMap' }],
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'limited', defaultServiceAccount: 'deployer' }],
    }),
  );
  await applyRaw(cp.admin, {
    ...application('limited', fx.repo.url, {
      project: 'limited',
      destination: { server: IN_CLUSTER, namespace: 'limited' },
      automated: false,
    }),
    operation: { sync: {}, initiatedBy: { username: 'alice' } },
  });
  const app = await waitForApp(
    cp,
    'limited',
    'operation Failed and ComparisonError',
    (a) => operationPhase(a) === 'Failed' && condition(a, 'ComparisonError') !== undefined,
  );
  assert.match(
    (app.status?.['operationState'] as { message: string }).message,
    /ConfigMap limited\/guestbook-config: .*not permitted in project limited/,
  );
  assert.match(condition(app, 'ComparisonError') ?? '', /not permitted/);
  const writes = (await cp.readAudit()).filter(
    (r) =>
      r.namespace === 'limited' &&
      ['create', 'patch', 'update', 'delete'].includes(r.verb) &&
      !r.dryRun &&
      r.user === cp.controllerUserName,
  );
  assert.deepEqual(
    writes.map((r) => r.requestURI),
    [],
  );
});

test('deletion with the resources finalizer deletes the resources as the ServiceAccount', async () => {
  const since = (await cp.readAudit()).length;
  await deleteApp(cp, 'guestbook');
  const end = Date.now() + 60_000;
  while (
    await getRaw(cp.admin, {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      name: 'guestbook',
      namespace: NS,
    })
  ) {
    if (Date.now() > end) throw new Error('Application not deleted');
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(
    await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'guestbook-config', namespace: 'guestbook' }),
    undefined,
  );
  const deletes = (await cp.readAudit())
    .slice(since)
    .filter((r) => r.verb === 'delete' && r.namespace === 'guestbook' && r.user === cp.controllerUserName);
  assert.ok(deletes.length >= 2, `deletes: ${deletes.length}`);
  for (const d of deletes) {
    assert.equal(d.user, cp.controllerUserName);
    assert.equal(d.impersonatedUser, SA);
  }
  assert.ok(fx.events.events.some((e) => e.reason === 'ResourcesDeleted' && e.object.name === 'guestbook'));
});

test('health and metrics: ready once synced; reconciles, syncs, identity decisions and API requests counted', async () => {
  const port = fx.controller.health?.port;
  assert.ok(port);
  assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  assert.match(text, /impersync_reconcile_duration_seconds_count\{result="ok"\} [1-9]/);
  assert.match(text, /impersync_syncs_total\{phase="Succeeded"\} [1-9]/);
  assert.match(text, /impersync_identity_decisions_total\{outcome="impersonate"\} [1-9]/);
  assert.match(text, /impersync_api_requests_total\{code="200",identity="controller"\} [1-9]/);
  assert.match(text, /impersync_api_requests_total\{code="200",identity="serviceaccount"\} [1-9]/);
});

test('a restart in the middle of an operation resumes it and never runs it twice', async () => {
  const op = { sync: { revision: 'HEAD' }, initiatedBy: { username: 'alice' } };
  const startedAt = '2026-01-01T00:00:00Z';
  await fx.restart(async () => {
    await applyRaw(cp.admin, {
      ...application('resume', fx.repo.url, { project: 'my-project', automated: false }),
      operation: op,
    });
    const app = await getApp(cp, 'resume');
    // What a controller that died after recording Running (spec: state before acting) left behind.
    await requestOk(cp.admin, {
      method: 'PUT',
      path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/resume`,
      body: {
        ...app,
        status: {
          operationState: { operation: op, phase: 'Running', message: 'Operation started', startedAt, retryCount: 0 },
        },
      },
    });
  });
  const done = await waitForApp(
    cp,
    'resume',
    'Succeeded',
    (a) => operationPhase(a) === 'Succeeded' && a['operation'] === undefined,
  );
  const state = done.status?.['operationState'] as { startedAt: string; finishedAt: string };
  assert.equal(state.startedAt, startedAt, 'the Running operation was continued, not restarted');
  assert.equal(((done.status?.['history'] ?? []) as unknown[]).length, 1);

  // Finished but `operation` not cleared before the restart: cleared, not run again.
  const finishedAt = state.finishedAt;
  await fx.restart(async () => {
    await applyRaw(cp.admin, {
      ...application('resume', fx.repo.url, { project: 'my-project', automated: false }),
      operation: op,
    });
    const app = await getApp(cp, 'resume');
    const generation = (app['metadata'] as { generation: number }).generation;
    await requestOk(cp.admin, {
      method: 'PUT',
      path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/resume`,
      body: {
        ...app,
        // Status is an ordinary field of the Application (no status subresource): this write itself
        // makes the generation one more, the one the state must carry to count as of this operation.
        status: {
          ...app.status,
          operationState: { ...(app.status?.['operationState'] as object), generation: generation + 1 },
        },
      },
    });
  });
  const cleared = await waitForApp(cp, 'resume', 'operation cleared', (a) => a['operation'] === undefined);
  assert.equal((cleared.status?.['operationState'] as { finishedAt: string }).finishedAt, finishedAt);
  assert.equal(((cleared.status?.['history'] ?? []) as unknown[]).length, 1, 'not synced a second time');
});

test('deletion honours enforced: refused deletion is a DeletionError and a Warning event, nothing deleted, then it completes', async () => {
  await deployer(cp, 'keep', 'keeper');
  const entries = [{ server: IN_CLUSTER, namespace: 'keep', defaultServiceAccount: 'keeper' }];
  await applyRaw(cp.admin, project('keep', { destinationServiceAccounts: entries }));
  await applyRaw(
    cp.admin,
    application('keep', fx.repo.url, {
      project: 'keep',
      destination: { server: IN_CLUSTER, namespace: 'keep' },
      finalizer: true,
    }),
  );
  await waitForApp(cp, 'keep', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
  await applyRaw(cp.admin, project('keep', { destinationServiceAccounts: [] }));
  await deleteApp(cp, 'keep');
  const expected = `no matching service account found for destination server ${IN_CLUSTER} and namespace keep`;
  const refused = await waitForApp(cp, 'keep', 'DeletionError', (a) => condition(a, 'DeletionError') === expected);
  assert.ok(
    (refused['metadata'] as { finalizers?: string[] }).finalizers?.includes('resources-finalizer.argocd.argoproj.io'),
  );
  assert.ok(
    fx.events.events.some(
      (e) =>
        e.object.name === 'keep' &&
        e.type === 'Warning' &&
        e.reason === 'StatusRefreshed' &&
        e.message === `Unable to delete application resources: ${expected}`,
    ),
  );
  const cmRef = { apiVersion: 'v1', kind: 'ConfigMap', name: 'guestbook-config', namespace: 'keep' };
  assert.ok(await getRaw(cp.admin, cmRef), 'nothing deleted with the controller credential');
  assert.deepEqual(
    (await cp.readAudit())
      .filter((r) => r.namespace === 'keep' && r.verb === 'delete' && r.user === cp.controllerUserName)
      .map((r) => r.requestURI),
    [],
  );

  await applyRaw(cp.admin, project('keep', { destinationServiceAccounts: entries }));
  const end = Date.now() + 60_000;
  while (
    await getRaw(cp.admin, { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', name: 'keep', namespace: NS })
  ) {
    if (Date.now() > end) throw new Error('Application keep not deleted after the project allowed it again');
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(await getRaw(cp.admin, cmRef), undefined);
  for (const d of (await cp.readAudit()).filter(
    (r) => r.namespace === 'keep' && r.verb === 'delete' && r.user === cp.controllerUserName,
  )) {
    assert.equal(d.impersonatedUser, 'system:serviceaccount:keep:keeper');
  }
});
