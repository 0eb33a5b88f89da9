// Signature verification's switches, end to end with a real gpg: a change of argocd-gpg-keys-cm
// refreshes the Applications whose projects verify signatures (no periodic refresh comes within
// the test: timeout.reconciliation is an hour), and ARGOCD_GPG_ENABLED=false turns verification
// off, as Argo CD's IsGPGEnabled does: an unsigned commit syncs where signatureKeys would refuse it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { applyRaw, listRaw, startControlPlane } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { TestRepo } from '../support/git.ts';
import { SIGNER, gpgKey as newGpgKey, signedCommit, type TestKey } from '../support/gpg.ts';
import {
  IN_CLUSTER,
  NS,
  condition,
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

const SA = 'deployer';
const NAMESPACES = ['gk-requeue', 'gk-off', 'gk-off-strict'];
const DSA = [{ server: IN_CLUSTER, namespace: 'gk-*', defaultServiceAccount: SA }];

let cp: TestControlPlane;
let fx: Fixture;
const repos: TestRepo[] = [];
const keys: TestKey[] = [];

const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;
const synced = (a: { status?: Record<string, unknown> }) =>
  operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced';

function app(name: string, repo: TestRepo, proj: string): KubeObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: NS },
    spec: {
      project: proj,
      source: { repoURL: repo.url, targetRevision: 'HEAD', path: 'app' },
      destination: { server: IN_CLUSTER, namespace: name },
      syncPolicy: { automated: { prune: true } },
    },
  } as unknown as KubeObject;
}

function gpgKeysCM(data: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-gpg-keys-cm', namespace: NS },
    data,
  } as unknown as KubeObject;
}

async function configMapsIn(namespace: string): Promise<string[]> {
  return (await listRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace }))
    .map((c) => c.metadata.name)
    .filter((n) => n !== 'kube-root-ca.crt')
    .sort();
}

async function newRepo(files: Record<string, string>): Promise<TestRepo> {
  const r = await TestRepo.create();
  repos.push(r);
  await r.commit(files);
  return r;
}

/** A commit of `files`, then an empty one signed with `key`. */
async function signedRepo(files: Record<string, string>, key: TestKey): Promise<TestRepo> {
  const repo = await newRepo(files);
  signedCommit(repo.dir, key);
  return repo;
}

/** A throwaway signing key, removed after the file's tests. */
function gpgKey(name: string): TestKey {
  const k = newGpgKey(name);
  keys.push(k);
  return k;
}

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  for (const ns of NAMESPACES) await deployer(cp, ns, SA);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true', 'timeout.reconciliation': '1h' });
  fx = await startFixture(cp, guestbookFiles());
});

after(async () => {
  await fx?.stop();
  delete process.env['ARGOCD_GPG_ENABLED'];
  for (const r of repos) await r.remove();
  for (const k of keys) k.remove();
  await cp?.stop();
});

test('a change of argocd-gpg-keys-cm refreshes the Applications whose project verifies signatures', async () => {
  const key = gpgKey('requeue');
  await applyRaw(cp.admin, gpgKeysCM({}));
  await applyRaw(
    cp.admin,
    project('gk-signed', { signatureKeys: [{ keyID: key.id }], destinationServiceAccounts: DSA }),
  );
  const repo = await signedRepo({ 'app/cm.yaml': cm('signed') }, key);
  await applyRaw(cp.admin, app('gk-requeue', repo, 'gk-signed'));
  // The key is not in the keyring yet: the commit cannot be verified.
  const a = await waitForApp(
    cp,
    'gk-requeue',
    'a ComparisonError',
    (x) => condition(x, 'ComparisonError') !== undefined,
  );
  assert.equal(
    condition(a, 'ComparisonError'),
    `GIT/GPG: Failed verifying revision ${repo.head()} by '${SIGNER.name} <${SIGNER.email}>': signed with key not in keyring (key_id=${key.id})`,
  );
  assert.deepEqual(await configMapsIn('gk-requeue'), []);
  // The admin adds it: the Application is refreshed now, not at the next periodic refresh an hour away.
  await applyRaw(cp.admin, gpgKeysCM({ [key.id]: key.armored }));
  const b = await waitForApp(cp, 'gk-requeue', 'synced', synced, 60_000);
  assert.equal(condition(b, 'ComparisonError'), undefined);
  assert.deepEqual(await configMapsIn('gk-requeue'), ['signed']);
});

test('ARGOCD_GPG_ENABLED=false: no signature is verified, an unsigned commit syncs where signatureKeys ask for one', async () => {
  const key = gpgKey('off');
  await fx.restart(async () => {
    process.env['ARGOCD_GPG_ENABLED'] = 'false';
  });
  assert.ok(
    fx.logs.some((l) => l.includes('ARGOCD_GPG_ENABLED is false: no commit signature is verified')),
    'the controller says at start that verification is off',
  );
  await applyRaw(cp.admin, project('gk-off', { signatureKeys: [{ keyID: key.id }], destinationServiceAccounts: DSA }));
  // sourceIntegrity's strict mode is not checked either.
  await applyRaw(
    cp.admin,
    project('gk-off-strict', {
      sourceIntegrity: { git: { policies: [{ repos: [{ url: '*' }], gpg: { mode: 'strict', keys: [key.id] } }] } },
      destinationServiceAccounts: DSA,
    }),
  );
  const unsigned = await newRepo({ 'app/cm.yaml': cm('unsigned') });
  await applyRaw(cp.admin, app('gk-off', unsigned, 'gk-off'));
  await applyRaw(cp.admin, app('gk-off-strict', unsigned, 'gk-off-strict'));
  for (const name of ['gk-off', 'gk-off-strict']) {
    const a = await waitForApp(
      cp,
      name,
      'synced or failed',
      (x) => synced(x) || condition(x, 'ComparisonError') !== undefined,
    );
    assert.equal(condition(a, 'ComparisonError'), undefined, name);
    assert.deepEqual(await configMapsIn(name), ['unsigned'], name);
  }
});
