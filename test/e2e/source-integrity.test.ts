// AppProject signatureKeys and sourceIntegrity (Argo CD's YAML: `repos: [{url: <glob>}]`), end to
// end on a real control plane with the controller, its child renderer and a real gpg, asserted
// against Argo CD v3.6.1's exact condition messages: a commit by an allowed key syncs (also by a
// signing subkey of the listed key); an unsigned commit, and ones signed by a key the project does
// not allow, by a key missing from argocd-gpg-keys-cm and by a revoked key, are refused and nothing
// of them applied; a `!` glob takes a repository out of a policy, and two policies matching one
// repository are an error; an annotated tag as targetRevision is verified as the tag (a signed tag
// of an unsigned commit syncs, an unsigned tag of a signed commit is refused); with several
// sources the failing one is named; local manifests are refused where a revision is verified;
// strict mode verifies the history back to a seal commit and names its problems as Argo CD does;
// signatureKeys beside a sourceIntegrity.git that does not cover a repository judge its signed
// commits with Argo CD's legacy messages.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { applyRaw, listRaw, startControlPlane } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { TestRepo, git } from '../support/git.ts';
import { SIGNER, annotatedTag, gpgKey, revoke, signedCommit, type TestKey } from '../support/gpg.ts';
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
const NAMESPACES = [
  'si-legacy-good',
  'si-legacy-unsigned',
  'si-legacy-other',
  'si-good',
  'si-subkey',
  'si-unknown',
  'si-revoked',
  'si-excluded',
  'si-multiple',
  'si-tag-signed',
  'si-tag-unsigned',
  'si-multi-source',
  'si-local',
  'si-strict-sealed',
  'si-strict-history',
  'si-strict-tag',
  'si-both-covered',
  'si-both-other',
  'si-both-unknown',
  'si-both-unsigned',
];
const DSA = [{ server: IN_CLUSTER, namespace: 'si-*', defaultServiceAccount: SA }];
/** The identity of TestRepo's commits: the author an unsigned commit's message names. */
const TEST_AUTHOR = 'impersync test <test@impersync.invalid>';

let cp: TestControlPlane;
let fx: Fixture;
const repos: TestRepo[] = [];
const keys: TestKey[] = [];

const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;
const synced = (a: { status?: Record<string, unknown> }) =>
  operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced';
const settled = (a: { status?: Record<string, unknown> }) => synced(a) || condition(a, 'ComparisonError') !== undefined;

function app(name: string, proj: string, source: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: NS },
    spec: {
      project: proj,
      ...(Array.isArray(source['sources']) ? source : { source }),
      destination: { server: IN_CLUSTER, namespace: name },
      syncPolicy: { automated: { prune: true } },
    },
  } as unknown as KubeObject;
}
const at = (repo: TestRepo, targetRevision = 'HEAD') => ({ repoURL: repo.url, targetRevision, path: 'app' });

async function configMapsIn(namespace: string): Promise<string[]> {
  return (await listRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace }))
    .map((c) => c.metadata.name)
    .filter((n) => n !== 'kube-root-ca.crt')
    .sort();
}

/** A repository whose `app/` holds one ConfigMap, its last commit signed by `key` (unsigned without). */
async function repoSignedBy(name: string, key: TestKey | undefined): Promise<TestRepo> {
  const repo = await TestRepo.create();
  repos.push(repo);
  await repo.commit({ 'app/cm.yaml': cm(name) });
  if (key) signedCommit(repo.dir, key);
  return repo;
}

function newKey(name: string, opts: { signingSubkey?: boolean } = {}): TestKey {
  const k = gpgKey(name, opts);
  keys.push(k);
  return k;
}

/** The ComparisonError once the Application has one (or has synced, which fails the assertion). */
async function refusal(name: string): Promise<string | undefined> {
  const a = await waitForApp(cp, name, 'synced or a ComparisonError', settled);
  return condition(a, 'ComparisonError');
}

async function syncs(name: string, want: string[]): Promise<void> {
  const a = await waitForApp(cp, name, 'synced or a ComparisonError', settled);
  assert.equal(condition(a, 'ComparisonError'), undefined);
  assert.deepEqual(await configMapsIn(name), want);
}

const failed = (rev: string, by: string, why: string, id: string) =>
  `GIT/GPG: Failed verifying revision ${rev} by '${by}': ${why} (key_id=${id})`;

let allowed: TestKey;
let other: TestKey;
let unknown: TestKey;
let revoked: TestKey;
let withSubkey: TestKey;

before(async () => {
  allowed = newKey('allowed');
  other = newKey('other');
  unknown = newKey('unknown');
  revoked = newKey('revoked');
  withSubkey = newKey('subkey', { signingSubkey: true });
  cp = await startControlPlane();
  await grantControllerRights(cp);
  for (const ns of NAMESPACES) await deployer(cp, ns, SA);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  fx = await startFixture(cp, guestbookFiles());
});

after(async () => {
  await fx?.stop();
  for (const r of repos) await r.remove();
  for (const k of keys) k.remove();
  await cp?.stop();
});

/** argocd-gpg-keys-cm with the keys given (`unknown` is never in it). */
async function keyring(entries: Array<[TestKey, string]>): Promise<void> {
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-gpg-keys-cm', namespace: NS },
    data: Object.fromEntries(entries.map(([k, armored]) => [k.id, armored])),
  } as unknown as KubeObject);
}

test("signatureKeys: an allowed key's commit syncs; unsigned and unallowed ones get Argo CD's GIT/GPG messages", async () => {
  await keyring([
    [allowed, allowed.armored],
    [other, other.armored],
  ]);
  await applyRaw(
    cp.admin,
    project('si-legacy', { signatureKeys: [{ keyID: allowed.id }], destinationServiceAccounts: DSA }),
  );
  const good = await repoSignedBy('legacy-good', allowed);
  const unsigned = await repoSignedBy('legacy-unsigned', undefined);
  const byOther = await repoSignedBy('legacy-other', other);
  await applyRaw(cp.admin, app('si-legacy-good', 'si-legacy', at(good)));
  await applyRaw(cp.admin, app('si-legacy-unsigned', 'si-legacy', at(unsigned)));
  await applyRaw(cp.admin, app('si-legacy-other', 'si-legacy', at(byOther)));
  await syncs('si-legacy-good', ['legacy-good']);
  // Argo CD v3.6.1 turns signatureKeys into a head policy for `*`: the messages are its GIT/GPG ones.
  assert.equal(await refusal('si-legacy-unsigned'), failed(unsigned.head(), TEST_AUTHOR, 'unsigned', ''));
  assert.equal(
    await refusal('si-legacy-other'),
    failed(byOther.head(), `${SIGNER.name} <${SIGNER.email}>`, 'signed with unallowed key', other.id),
  );
  assert.deepEqual(await configMapsIn('si-legacy-unsigned'), []);
  assert.deepEqual(await configMapsIn('si-legacy-other'), []);
});

test("sourceIntegrity in Argo CD's YAML: unknown and revoked keys refused, a subkey counts for its primary, `!` excludes, two matching policies are an error", async () => {
  const good = await repoSignedBy('good', allowed);
  const bySubkey = await repoSignedBy('subkey', withSubkey);
  const byUnknown = await repoSignedBy('unknown', unknown);
  // Signed before the owner revoked the key; the keyring has the revocation.
  const byRevoked = await repoSignedBy('revoked', revoked);
  const revokedArmored = revoke(revoked);
  const excluded = await repoSignedBy('excluded', undefined);
  const twice = await repoSignedBy('twice', allowed);
  await keyring([
    [allowed, allowed.armored],
    [revoked, revokedArmored],
    [withSubkey, withSubkey.armored],
  ]);
  await applyRaw(
    cp.admin,
    project('si-integrity', {
      sourceIntegrity: {
        git: {
          policies: [
            {
              repos: [{ url: '*' }, { url: `!${excluded.url}` }],
              gpg: { mode: 'head', keys: [allowed.id, revoked.id, unknown.id, withSubkey.id] },
            },
            { repos: [{ url: twice.url }], gpg: { mode: 'head', keys: [allowed.id] } },
          ],
        },
      },
      destinationServiceAccounts: DSA,
    }),
  );
  await applyRaw(cp.admin, app('si-good', 'si-integrity', at(good)));
  await applyRaw(cp.admin, app('si-subkey', 'si-integrity', at(bySubkey)));
  await applyRaw(cp.admin, app('si-unknown', 'si-integrity', at(byUnknown)));
  await applyRaw(cp.admin, app('si-revoked', 'si-integrity', at(byRevoked)));
  await applyRaw(cp.admin, app('si-excluded', 'si-integrity', at(excluded)));
  await applyRaw(cp.admin, app('si-multiple', 'si-integrity', at(twice)));
  await syncs('si-good', ['good']);
  await syncs('si-subkey', ['subkey']);
  const signer = `${SIGNER.name} <${SIGNER.email}>`;
  assert.equal(
    await refusal('si-unknown'),
    failed(byUnknown.head(), signer, 'signed with key not in keyring', unknown.id),
  );
  assert.equal(await refusal('si-revoked'), failed(byRevoked.head(), signer, 'signed with revoked key', revoked.id));
  // Out of the only policy that matches it: nothing to verify, the unsigned commit syncs.
  await syncs('si-excluded', ['excluded']);
  assert.equal(
    await refusal('si-multiple'),
    `failed to render desired manifests: multiple (2) git source integrity policies found for repo URL: ${twice.url}`,
  );
  for (const ns of ['si-unknown', 'si-revoked', 'si-multiple']) assert.deepEqual(await configMapsIn(ns), []);
});

test('an annotated tag as targetRevision verifies the tag, not the commit, and its message names the tag and its tagger', async () => {
  await keyring([[allowed, allowed.armored]]);
  await applyRaw(
    cp.admin,
    project('si-tags', {
      sourceIntegrity: { git: { policies: [{ repos: [{ url: '*' }], gpg: { mode: 'head', keys: [allowed.id] } }] } },
      destinationServiceAccounts: DSA,
    }),
  );
  const repo = await repoSignedBy('tagged', undefined);
  annotatedTag(repo.dir, 'v1-signed', allowed); // of an unsigned commit
  signedCommit(repo.dir, allowed);
  await applyRaw(cp.admin, app('si-tag-signed', 'si-tags', at(repo, 'v1-signed')));
  await syncs('si-tag-signed', ['tagged']);
  // A tag made since the renderer fetched the commit it names: the tag is fetched to be verified.
  annotatedTag(repo.dir, 'v2-unsigned', undefined); // of a commit the allowed key signed
  // Asked to refresh, so that the tag is listed anew (refs listed within the interval are reused).
  const unsignedApp = app('si-tag-unsigned', 'si-tags', at(repo, 'v2-unsigned')) as unknown as {
    metadata: Record<string, unknown>;
  };
  unsignedApp.metadata['annotations'] = { 'argocd.argoproj.io/refresh': 'normal' };
  await applyRaw(cp.admin, unsignedApp as unknown as KubeObject);
  assert.equal(
    await refusal('si-tag-unsigned'),
    failed('v2-unsigned', `${SIGNER.name} "<${SIGNER.email}>"`, 'unsigned', ''),
  );
  assert.deepEqual(await configMapsIn('si-tag-unsigned'), []);
});

test('several sources: the failing one is named in the message; local manifests are refused where a revision is verified', async () => {
  await keyring([[allowed, allowed.armored]]);
  await applyRaw(
    cp.admin,
    project('si-multi', { signatureKeys: [{ keyID: allowed.id }], destinationServiceAccounts: DSA }),
  );
  const good = await repoSignedBy('multi-good', allowed);
  const unsigned = await repoSignedBy('multi-unsigned', undefined);
  await applyRaw(
    cp.admin,
    app('si-multi-source', 'si-multi', { sources: [at(good), { ...at(unsigned), name: 'second' }] }),
  );
  assert.equal(
    await refusal('si-multi-source'),
    `GIT/GPG: source second: Failed verifying revision ${unsigned.head()} by '${TEST_AUTHOR}': unsigned (key_id=)`,
  );
  assert.deepEqual(await configMapsIn('si-multi-source'), []);

  const local = app('si-local', 'si-multi', at(good)) as unknown as { spec: Record<string, unknown> };
  await applyRaw(cp.admin, {
    ...local,
    spec: { ...local.spec, syncPolicy: {} },
    operation: { sync: { revision: 'HEAD', manifests: [cm('from-local')] }, initiatedBy: { username: 'alice' } },
  } as unknown as KubeObject);
  const l = await waitForApp(cp, 'si-local', 'the operation failed', (x) =>
    ['Error', 'Failed'].includes(operationPhase(x) ?? ''),
  );
  assert.match(
    (l.status?.['operationState'] as { message?: string }).message ?? '',
    /Cannot use local manifests when source integrity is enforced/,
  );
  assert.deepEqual(await configMapsIn('si-local'), []);
});

test('strict: the history back to a seal commit is verified, one problem per key or unsigned commit, the tag first', async () => {
  await keyring([
    [allowed, allowed.armored],
    [other, other.armored],
  ]);
  await applyRaw(
    cp.admin,
    project('si-strict', {
      sourceIntegrity: {
        git: { policies: [{ repos: [{ url: '*' }], gpg: { mode: 'strict', keys: [allowed.id] } }] },
      },
      destinationServiceAccounts: DSA,
    }),
  );
  // An unsigned root, then a seal commit the allowed key signed: what precedes it is not verified.
  const sealed = await repoSignedBy('strict-sealed', undefined);
  signedCommit(sealed.dir, allowed, 'seal\n\nArgocd-gpg-seal: reviewed history');
  signedCommit(sealed.dir, allowed, 'after the seal');
  // No seal: the unsigned commits and the other key's, newest first; the other key named once.
  const history = await repoSignedBy('strict-history', undefined);
  const root = history.head();
  signedCommit(history.dir, other, 'by other');
  const byOther = signedCommit(history.dir, other, 'by other again');
  git(history.dir, 'commit', '--quiet', '--allow-empty', '-m', 'unsigned');
  const unsignedSha = history.head();
  signedCommit(history.dir, allowed, 'head');
  annotatedTag(history.dir, 'v1-unsigned', undefined);
  await applyRaw(cp.admin, app('si-strict-sealed', 'si-strict', at(sealed)));
  await applyRaw(cp.admin, app('si-strict-history', 'si-strict', at(history)));
  await applyRaw(cp.admin, app('si-strict-tag', 'si-strict', at(history, 'v1-unsigned')));
  await syncs('si-strict-sealed', ['strict-sealed']);
  const signer = `${SIGNER.name} <${SIGNER.email}>`;
  const historyProblems = [
    failed(unsignedSha, TEST_AUTHOR, 'unsigned', ''),
    failed(byOther, signer, 'signed with unallowed key', other.id),
    failed(root, TEST_AUTHOR, 'unsigned', ''),
  ];
  assert.equal(await refusal('si-strict-history'), historyProblems.join('\n'));
  assert.equal(
    await refusal('si-strict-tag'),
    [failed('v1-unsigned', `${SIGNER.name} "<${SIGNER.email}>"`, 'unsigned', ''), ...historyProblems].join('\n'),
  );
  for (const ns of ['si-strict-history', 'si-strict-tag']) assert.deepEqual(await configMapsIn(ns), []);
});

test("signatureKeys beside a sourceIntegrity.git that does not cover the repository: Argo CD's legacy check of a signed commit", async () => {
  await keyring([
    [allowed, allowed.armored],
    [other, other.armored],
  ]);
  const covered = await repoSignedBy('both-covered', undefined);
  await applyRaw(
    cp.admin,
    project('si-both', {
      signatureKeys: [{ keyID: allowed.id }],
      sourceIntegrity: {
        git: { policies: [{ repos: [{ url: covered.url }], gpg: { mode: 'head', keys: [allowed.id] } }] },
      },
      destinationServiceAccounts: DSA,
    }),
  );
  const byOther = await repoSignedBy('both-other', other);
  const byUnknown = await repoSignedBy('both-unknown', unknown);
  const unsigned = await repoSignedBy('both-unsigned', undefined);
  await applyRaw(cp.admin, app('si-both-covered', 'si-both', at(covered)));
  await applyRaw(cp.admin, app('si-both-other', 'si-both', at(byOther)));
  await applyRaw(cp.admin, app('si-both-unknown', 'si-both', at(byUnknown)));
  await applyRaw(cp.admin, app('si-both-unsigned', 'si-both', at(unsigned)));
  // The repository a policy covers: that policy's check, signatureKeys ignored.
  assert.equal(await refusal('si-both-covered'), failed(covered.head(), TEST_AUTHOR, 'unsigned', ''));
  assert.equal(
    await refusal('si-both-other'),
    `Found good signature made with EDDSA key ${other.id}, but this key is not allowed in AppProject`,
  );
  assert.equal(
    await refusal('si-both-unknown'),
    `Found signature made with EDDSA key ${unknown.id}, but verification result was invalid: 'gpg: Can't check signature: No public key'`,
  );
  // An unsigned commit has no verify-commit output to judge: it syncs, as in Argo CD.
  await syncs('si-both-unsigned', ['both-unsigned']);
  for (const ns of ['si-both-covered', 'si-both-other', 'si-both-unknown'])
    assert.deepEqual(await configMapsIn(ns), []);
});

test("the AppProject CRD takes Argo CD's sourceIntegrity shape and refuses plain-string repos, as Argo CD's does", async () => {
  const spec = (repos: unknown[]) => ({
    sourceIntegrity: { git: { policies: [{ repos, gpg: { mode: 'head', keys: [allowed.id] } }] } },
  });
  await applyRaw(cp.admin, project('si-shape', spec([{ url: '*' }])));
  await assert.rejects(applyRaw(cp.admin, project('si-shape-strings', spec(['*']))), /sourceIntegrity/);
});
