// The argocd.argoproj.io/manifest-generate-paths annotation on the real control plane, with a real
// Git server on loopback: a commit that changes no file under the annotation's paths keeps the
// previous commit's manifests (the sync status shows the new revision), even when a file outside
// them changes what would be rendered, as Argo CD's UpdateRevisionForPaths; a commit under them
// renders again, and the automated sync applies both changes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { applyRaw, getRaw, requestOk, startControlPlane } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { TestRepo } from '../support/git.ts';
import {
  IN_CLUSTER,
  NS,
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
let repo: TestRepo;

const cm = (name: string, value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, {
    'application.sync.impersonation.enabled': 'true',
    'timeout.reconciliation': '2s',
    'timeout.reconciliation.jitter': '0s',
  });
  fx = await startFixture(cp, guestbookFiles());
  await deployer(cp, 'paths', 'deployer');
  await applyRaw(
    cp.admin,
    project('paths', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'paths', defaultServiceAccount: 'deployer' }],
    }),
  );
  repo = await TestRepo.create();
  // The app folder builds with a base outside it: a change there changes what `app` renders.
  await repo.commit({
    'app/kustomization.yaml': 'resources:\n- ../shared\n- own.yaml\n',
    'app/own.yaml': cm('own', 'one'),
    'shared/kustomization.yaml': 'resources:\n- shared.yaml\n',
    'shared/shared.yaml': cm('shared', 'one'),
    'README.md': 'first\n',
  });
});

after(async () => {
  await fx?.stop();
  await repo?.remove();
  await cp?.stop();
});

async function value(name: string): Promise<string | undefined> {
  const o = await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name, namespace: 'paths' });
  return (o as { data?: Record<string, string> } | undefined)?.data?.['value'];
}

const sync = (a: { status?: Record<string, unknown> }) =>
  a.status?.['sync'] as { status?: string; revision?: string } | undefined;

/**
 * The operation that synced `revision` has Succeeded. The comparison at a new revision is written
 * before the automated operation it starts, so status.sync alone can show the new revision while
 * operationState is still the previous sync's.
 */
const syncedTo = (a: { status?: Record<string, unknown> }, revision: string) =>
  operationPhase(a) === 'Succeeded' &&
  (a.status?.['operationState'] as { syncResult?: { revision?: string } } | undefined)?.syncResult?.revision ===
    revision;

test('manifest-generate-paths: a commit outside the paths keeps the previous manifests under the new revision; one inside renders again', async () => {
  const app: KubeObject = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'paths', namespace: NS, annotations: { 'argocd.argoproj.io/manifest-generate-paths': '.' } },
    spec: {
      project: 'paths',
      source: { repoURL: repo.url, targetRevision: 'HEAD', path: 'app' },
      destination: { server: IN_CLUSTER, namespace: 'paths' },
      syncPolicy: { automated: { prune: true } },
    },
  } as unknown as KubeObject;
  await applyRaw(cp.admin, app);
  const first = repo.head();
  await waitForApp(cp, 'paths', 'first sync', (a) => syncedTo(a, first));
  assert.equal(await value('shared'), 'one');

  // Outside `app`: the README and the base it builds with.
  const outside = await repo.commit({ 'shared/shared.yaml': cm('shared', 'two'), 'README.md': 'second\n' });
  const kept = await waitForApp(cp, 'paths', 'the new revision compared', (a) => sync(a)?.revision === outside);
  assert.equal(sync(kept)?.status, 'Synced', "the previous commit's manifests match what is live");
  // Several refreshes later, still the previous manifests: nothing was synced.
  await new Promise((r) => setTimeout(r, 6_000));
  assert.equal(await value('shared'), 'one', 'a change outside the paths is not rendered (as in Argo CD)');
  assert.equal(sync(await waitForApp(cp, 'paths', 'still', () => true))?.status, 'Synced');

  // Inside `app`: rendered again at the new commit, the base's change with it, and synced.
  const inside = await repo.commit({ 'app/own.yaml': cm('own', 'two') });
  await waitForApp(cp, 'paths', 'synced to the commit inside the paths', (a) => syncedTo(a, inside), 60_000);
  assert.equal(await value('own'), 'two');
  assert.equal(await value('shared'), 'two');
});

test('without the annotation, the same commit outside the path renders again', async () => {
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/paths`,
    body: { metadata: { annotations: { 'argocd.argoproj.io/manifest-generate-paths': null } } },
    contentType: 'application/merge-patch+json',
  });
  const outside = await repo.commit({ 'shared/shared.yaml': cm('shared', 'three') });
  await waitForApp(cp, 'paths', 'synced to the commit outside the path', (a) => syncedTo(a, outside), 60_000);
  assert.equal(await value('shared'), 'three');
});
