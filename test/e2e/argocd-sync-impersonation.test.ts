// Argo CD's own controller cases for syncing with impersonation (v3.6.1, controller/sync_test.go
// TestSyncWithImpersonate), written out as inputs and Argo CD's operation phase and message, and
// run through the real controller on a real control plane: each case an AppProject, an Application
// whose source renders no object (as Argo CD's fake manifests), and an operation `argocd app sync`
// would set. Argo CD's test checks that the message contains its text; so does this one.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  application,
  deployer,
  grantControllerRights,
  IN_CLUSTER,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';
import { createNamespace } from '../support/index.ts';

let cp: TestControlPlane;
let fx: Fixture;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  fx = await startFixture(cp, { 'empty/README.md': 'no manifests here\n' });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

interface Case {
  name: string;
  settings: Record<string, string>;
  /** The entry's namespace and ServiceAccount (Argo CD's setup(destinationNamespace, serviceAccountName)). */
  entry: { namespace: string; defaultServiceAccount: string };
  /** A ServiceAccount of that name exists in the destination namespace. */
  serviceAccount?: string;
  byName?: boolean;
  phase: 'Succeeded' | 'Error';
  message: string;
}

const ENABLED = { 'application.sync.impersonation.enabled': 'true' };
const NOT_ENFORCED = { ...ENABLED, 'application.sync.impersonation.enforced': 'false' };
/** Argo CD's FakeArgoCDNamespace and FakeDestNamespace, one destination namespace per case here. */
const ARGOCD_NS = 'argocd';

const cases: Case[] = [
  {
    name: 'sync with impersonation and no matching service account',
    settings: ENABLED,
    entry: { namespace: ARGOCD_NS, defaultServiceAccount: '' },
    phase: 'Error',
    message: `no matching service account found for destination server ${IN_CLUSTER} and namespace `,
  },
  {
    name: 'sync with impersonation and empty service account match',
    settings: ENABLED,
    entry: { namespace: 'DEST', defaultServiceAccount: '' },
    phase: 'Error',
    message: 'default service account contains invalid chars',
  },
  {
    name: 'sync with impersonation and matching sa',
    settings: ENABLED,
    entry: { namespace: 'DEST', defaultServiceAccount: 'test-sa' },
    serviceAccount: 'test-sa',
    phase: 'Succeeded',
    message: 'successfully synced (no more tasks)',
  },
  {
    name: 'sync without impersonation',
    settings: { 'application.sync.impersonation.enabled': 'false' },
    entry: { namespace: 'DEST', defaultServiceAccount: '' },
    phase: 'Succeeded',
    message: 'successfully synced (no more tasks)',
  },
  {
    name: 'sync with impersonation enabled, enforcement disabled, no matching SA',
    settings: NOT_ENFORCED,
    entry: { namespace: ARGOCD_NS, defaultServiceAccount: '' },
    phase: 'Succeeded',
    message: 'successfully synced (no more tasks)',
  },
  {
    name: 'sync with impersonation enabled, enforcement disabled, matching SA',
    settings: NOT_ENFORCED,
    entry: { namespace: 'DEST', defaultServiceAccount: 'test-sa' },
    serviceAccount: 'test-sa',
    phase: 'Succeeded',
    message: 'successfully synced (no more tasks)',
  },
  {
    name: 'app destination name instead of server URL',
    settings: ENABLED,
    entry: { namespace: 'DEST', defaultServiceAccount: 'test-sa' },
    serviceAccount: 'test-sa',
    byName: true,
    phase: 'Succeeded',
    message: 'successfully synced (no more tasks)',
  },
];

describe("Argo CD's TestSyncWithImpersonate, through the controller", () => {
  cases.forEach((c, i) => {
    test(`${c.name}: operation ${c.phase}, "${c.message}"`, async () => {
      const dest = `sync-case-${i}`;
      if (c.serviceAccount) await deployer(cp, dest, c.serviceAccount);
      else await createNamespace(cp.admin, dest);
      await setSettings(cp, c.settings);
      const name = `case-${i}`;
      const entryNamespace = c.entry.namespace === 'DEST' ? dest : c.entry.namespace;
      await applyRaw(
        cp.admin,
        project(name, {
          destinationServiceAccounts: [
            { server: IN_CLUSTER, namespace: entryNamespace, defaultServiceAccount: c.entry.defaultServiceAccount },
          ],
        }),
      );
      const app = application(name, fx.repo.url, {
        project: name,
        path: 'empty',
        destination: c.byName ? { name: 'in-cluster', namespace: dest } : { server: IN_CLUSTER, namespace: dest },
        automated: false,
      });
      await applyRaw(cp.admin, {
        ...app,
        operation: { sync: { revision: 'HEAD' }, initiatedBy: { username: 'alice' } },
      });
      const done = await waitForApp(cp, name, `operation ${c.phase}`, (a) =>
        ['Succeeded', 'Error', 'Failed'].includes(operationPhase(a) ?? ''),
      );
      const state = done.status?.['operationState'] as { phase: string; message: string };
      assert.equal(state.phase, c.phase, state.message);
      assert.ok(state.message.includes(c.message), `${state.message} contains ${c.message}`);
    });
  });
});
