// argocd-cmd-params-cm on a real control plane, as Argo CD's application controller reads it: its
// application.namespaces (an Application in a namespace listed only there is reconciled; a change
// is logged as needing a restart, and a restart takes it), the self-heal backoff (a live edit that
// never converges is healed at growing intervals, read from the audit log), the sync timeout
// (Argo CD's "Operation terminated, triggered by controller sync timeout") and the wave delay.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, createNamespace, getRaw, grantRole, startControlPlane } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import {
  NS,
  application,
  condition,
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
let fx: Fixture;

const PARAMS = {
  'application.namespaces': 'cm-team-*',
  // Heals wait 0, 2 s, 8 s, 32 s: steps far enough apart for their order to survive a loaded machine.
  'controller.self.heal.backoff.timeout.seconds': '2',
  'controller.self.heal.backoff.factor': '4',
  'controller.self.heal.backoff.cap.seconds': '300',
  'controller.sync.timeout.seconds': '15',
  'controller.sync.wave.delay.seconds': '3',
  'controller.diff.server.side': 'false',
};

function cmdParams(data: Record<string, string>): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-cmd-params-cm', namespace: NS }, data };
}

const logged = (text: string) => fx.logs.filter((l) => l.includes(text));

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  // Apps in any namespace: the controller lists Applications cluster-wide.
  await grantRole(cp.admin, {
    name: 'impersync-apps-anywhere',
    to: 'controller',
    rules: [
      { apiGroups: ['argoproj.io'], resources: ['applications'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
      { apiGroups: ['argoproj.io'], resources: ['applications/status'], verbs: ['get', 'update', 'patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ],
  });
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await applyRaw(cp.admin, cmdParams(PARAMS));
  const files = {
    ...guestbookFiles(),
    ...heldWaveFiles(),
    'waves/first.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n  annotations:\n    argocd.argoproj.io/sync-wave: "0"\ndata:\n  a: "1"\n',
    'waves/second.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\n  annotations:\n    argocd.argoproj.io/sync-wave: "1"\ndata:\n  a: "1"\n',
  };
  // No flag for the namespaces: they come from the ConfigMap alone. A wave may wait far longer than
  // the sync timeout, so that only the sync timeout can end the held sync.
  fx = await startFixture(cp, files, { waitTimeoutMs: 120_000 });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

async function tenant(name: string): Promise<void> {
  await deployer(cp, name, 'deployer');
  await applyRaw(
    cp.admin,
    project(name, {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: name, defaultServiceAccount: 'deployer' }],
    }),
  );
}

test('a key not acted on is named at start: controller.diff.server.side false', () => {
  assert.equal(
    logged(
      "ARGOCD_APPLICATION_CONTROLLER_SERVER_SIDE_DIFF (argocd-cmd-params-cm controller.diff.server.side) is 'false' and not acted on",
    ).length,
    1,
  );
});

test('self-heal backoff: a live edit that never converges is healed at growing intervals, counted', async () => {
  await tenant('heal');
  const app = application('heal', fx.repo.url, {
    project: 'heal',
    destination: { server: IN_CLUSTER, namespace: 'heal' },
  });
  (app['spec'] as { syncPolicy: { automated: Record<string, boolean> } }).syncPolicy.automated['selfHeal'] = true;
  await applyRaw(cp.admin, app);
  await waitForApp(cp, 'heal', 'first sync', (a) => operationPhase(a) === 'Succeeded');
  const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'guestbook-config', namespace: 'heal' };
  // Another writer that undoes every heal: the object never converges.
  let drifting = true;
  const drifter = (async () => {
    while (drifting) {
      const cm = (await getRaw(cp.admin, ref)) as { data?: Record<string, string> } | undefined;
      if (cm?.data?.['greeting'] === 'hello')
        await applyRaw(
          cp.admin,
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'guestbook-config', namespace: 'heal' },
            data: { greeting: 'drift' },
          },
          { force: true },
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const attempts = (a: { status?: Record<string, unknown> }) =>
    (a.status?.['operationState'] as { operation?: { sync?: { autoHealAttemptsCount?: number } } } | undefined)
      ?.operation?.sync?.autoHealAttemptsCount ?? 0;
  try {
    await waitForApp(
      cp,
      'heal',
      'four self-heal syncs',
      (a) => attempts(a) >= 4 && operationPhase(a) === 'Succeeded',
      180_000,
    );
  } finally {
    drifting = false;
    await drifter;
  }
  // The heals, as the API server saw them: the ServiceAccount's applies of the ConfigMap after the first sync.
  const applies = (await cp.readAudit())
    .filter(
      (r) =>
        r.impersonatedUser === 'system:serviceaccount:heal:deployer' &&
        r.verb === 'patch' &&
        !r.dryRun &&
        r.resource === 'configmaps' &&
        r.name === 'guestbook-config' &&
        r.stage === 'ResponseComplete',
    )
    .map((r) => Date.parse(String(r.time)));
  assert.ok(applies.length >= 5, `the first sync and four heals: ${applies.length} applies`);
  const heals = applies.slice(1, 5);
  const gaps = heals.slice(1).map((t, i) => t - (heals[i] as number));
  // Each heal waits the backoff's next step after the last sync finished (after its apply): 2 s, 8 s, 32 s.
  assert.ok(gaps[0]! >= 2000 && gaps[1]! >= 8000 && gaps[2]! >= 32_000, `gaps between heals: ${gaps.join(', ')} ms`);
  assert.ok(gaps[0]! < gaps[1]! && gaps[1]! < gaps[2]!, `the gaps grow: ${gaps.join(', ')} ms`);
  assert.ok(logged('Skipping auto-sync: already attempted sync to [').length > 0, "Argo CD's skip line is logged");
});

test("the sync timeout terminates a sync with Argo CD's message", async () => {
  await tenant('slow');
  const app = application('slow', fx.repo.url, {
    project: 'slow',
    path: 'held',
    destination: { server: IN_CLUSTER, namespace: 'slow' },
    automated: false,
  });
  await applyRaw(cp.admin, { ...app, operation: { sync: {}, initiatedBy: { username: 'alice' } } });
  // The LoadBalancer Service of wave 0 never gets an address: only the timeout ends the sync.
  const ended = await waitForApp(
    cp,
    'slow',
    'Failed by the sync timeout',
    (a) => operationPhase(a) === 'Failed',
    120_000,
  );
  const state = ended.status?.['operationState'] as { message: string; startedAt: string; finishedAt: string };
  assert.equal(state.message, 'Operation terminated, triggered by controller sync timeout');
  assert.equal(condition(ended, 'SyncError'), 'Operation terminated, triggered by controller sync timeout');
  assert.ok(Date.parse(state.finishedAt) - Date.parse(state.startedAt) >= 15_000, 'not before the timeout');
  assert.equal(logged('Terminating in-progress operation due to timeout. Started at: ').length, 1);
  // Wave 1 was never applied.
  assert.equal(
    await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'later', namespace: 'slow' }),
    undefined,
  );
});

test('the wave delay: the next wave is applied no sooner than controller.sync.wave.delay.seconds after one', async () => {
  await tenant('waves');
  const app = application('waves', fx.repo.url, {
    project: 'waves',
    path: 'waves',
    destination: { server: IN_CLUSTER, namespace: 'waves' },
    automated: false,
  });
  await applyRaw(cp.admin, { ...app, operation: { sync: {}, initiatedBy: { username: 'alice' } } });
  await waitForApp(cp, 'waves', 'synced', (a) => operationPhase(a) === 'Succeeded', 60_000);
  const at = (name: string) =>
    cp
      .readAudit()
      .then((all) =>
        all
          .filter(
            (r) =>
              r.impersonatedUser === 'system:serviceaccount:waves:deployer' &&
              r.verb === 'patch' &&
              !r.dryRun &&
              r.name === name &&
              r.stage === 'ResponseComplete',
          )
          .map((r) => Date.parse(String(r.time))),
      );
  const [first, second] = [await at('first'), await at('second')];
  assert.equal(first.length, 1);
  assert.equal(second.length, 1);
  // ConfigMaps have no health: without the delay wave 1 follows wave 0 in the same step, within milliseconds.
  assert.ok(second[0]! - first[0]! >= 3000, `wave 1 applied ${second[0]! - first[0]!} ms after wave 0`);
});

test('application.namespaces from argocd-cmd-params-cm alone: reconciled; a change is logged and taken at restart', async () => {
  await deployer(cp, 'ns-target', 'deployer');
  await applyRaw(
    cp.admin,
    project('teams', {
      sourceNamespaces: ['cm-team-*', 'later-*'],
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'ns-target', defaultServiceAccount: 'deployer' }],
    }),
  );
  const appIn = async (ns: string) => {
    await createNamespace(cp.admin, ns);
    const app = application('app', fx.repo.url, {
      project: 'teams',
      destination: { server: IN_CLUSTER, namespace: 'ns-target' },
    });
    app.metadata.namespace = ns;
    await applyRaw(cp.admin, app);
  };
  const phaseIn = async (ns: string) =>
    operationPhase(
      ((await getRaw(cp.admin, {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Application',
        name: 'app',
        namespace: ns,
      })) ?? {}) as { status?: Record<string, unknown> },
    );
  await appIn('cm-team-a');
  await until('the Application in cm-team-a synced', async () => (await phaseIn('cm-team-a')) === 'Succeeded', 90_000);

  await applyRaw(cp.admin, cmdParams({ ...PARAMS, 'application.namespaces': 'cm-team-*, later-*' }), { force: true });
  await until('the change logged', async () => logged('argocd-cmd-params-cm changed').length > 0, 30_000);
  const line = JSON.parse(logged('argocd-cmd-params-cm changed')[0] as string) as { keys: string[]; msg: string };
  assert.deepEqual(line.keys, ['application.namespaces']);
  assert.match(line.msg, /restart the controller for the change to take effect/);
  await appIn('later-b');
  // As in Argo CD, not before a restart.
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(await phaseIn('later-b'), undefined);
  await fx.restart();
  await until(
    'the Application in later-b synced after the restart',
    async () => (await phaseIn('later-b')) === 'Succeeded',
    90_000,
  );
});
