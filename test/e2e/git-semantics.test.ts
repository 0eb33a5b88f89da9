// Sources rendered as Argo CD renders them, end to end on a real control plane with the controller
// and its child renderer: a source parameter file that makes a folder a Helm source gets its chart
// dependencies; `operation.sync.manifests` (`argocd app sync --local`) are applied instead of the
// repository's, and one that does not parse is Argo CD's "Failed to load local manifests"; Git
// submodules are checked out (a relative URL resolved against the superproject's), a submodule
// URL outside the project's sourceRepos or on the renderer's disk is refused before any request
// to it, and ARGOCD_GIT_MODULES_ENABLED=false turns them off. (Signed revisions:
// source-integrity.test.ts.)
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { applyRaw, listRaw, startControlPlane } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { TestRepo, git, startGitHttpServer, type GitHttpServer } from '../support/git.ts';
import os from 'node:os';
import path from 'node:path';
import { chartArchive, startHelmRepo, type HelmRepoServer } from '../support/helm.ts';
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
const NAMESPACES = ['gs-helm', 'gs-local', 'gs-sub', 'gs-sub-refused', 'gs-sub-off', 'gs-sub-creds'];

let cp: TestControlPlane;
let fx: Fixture;
let charts: HelmRepoServer;
let recorder: GitHttpServer;
const repos: TestRepo[] = [];

async function newRepo(files: Record<string, string>): Promise<TestRepo> {
  const r = await TestRepo.create();
  repos.push(r);
  await r.commit(files);
  return r;
}

function app(name: string, namespace: string, spec: Record<string, unknown>, proj = 'gs'): KubeObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: NS },
    spec: {
      project: proj,
      destination: { server: IN_CLUSTER, namespace },
      syncPolicy: { automated: { prune: true } },
      ...spec,
    },
  } as unknown as KubeObject;
}

const synced = (a: { status?: Record<string, unknown> }) =>
  operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced';

const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;

/** A repository whose `app/` holds own.yaml and, at each path, a submodule (gitlink + .gitmodules). */
async function withSubmodules(links: Array<{ at: string; url: string; sha: string }>): Promise<TestRepo> {
  const gitmodules = links.map((l) => `[submodule "${l.at}"]\n\tpath = ${l.at}\n\turl = ${l.url}\n`).join('');
  const repo = await newRepo({ 'app/own.yaml': cm('own'), '.gitmodules': gitmodules });
  for (const l of links) git(repo.dir, 'update-index', '--add', '--cacheinfo', `160000,${l.sha},${l.at}`);
  git(repo.dir, 'commit', '--quiet', '-m', 'submodules');
  return repo;
}

async function configMapsIn(namespace: string): Promise<string[]> {
  const list = await listRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace });
  return list
    .map((c) => c.metadata.name)
    .filter((n) => n !== 'kube-root-ca.crt')
    .sort();
}

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  for (const ns of NAMESPACES) await deployer(cp, ns, SA);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  const dsa = [{ server: IN_CLUSTER, namespace: 'gs-*', defaultServiceAccount: SA }];
  await applyRaw(cp.admin, project('gs', { destinationServiceAccounts: dsa }));
  charts = await startHelmRepo({ plain: true });
  recorder = await startGitHttpServer(os.tmpdir());
  charts.setCharts([{ name: 'lib', version: '2.1.0', archive: chartArchive('lib', '2.1.0') }]);
  fx = await startFixture(cp, guestbookFiles(), { rendererLogs: true });
});

after(async () => {
  await fx?.stop();
  await charts?.close();
  await recorder?.close();
  delete process.env['ARGOCD_GIT_MODULES_ENABLED'];
  for (const r of repos) await r.remove();
  await cp?.stop();
});

test('a source parameter file that makes a folder a Helm source gets its chart dependencies', async () => {
  // Chart.yaml and kustomization.yaml: discovery says Kustomize; the file's `helm` block says Helm.
  const repo = await newRepo({
    'both/Chart.yaml': `apiVersion: v2\nname: umbrella\nversion: 1.0.0\ndependencies:\n- name: lib\n  version: 2.1.0\n  repository: ${charts.url}\n`,
    'both/templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: umbrella\n',
    'both/kustomization.yaml': 'resources: []\n',
    'both/.argocd-source.yaml': 'helm:\n  releaseName: fromfile\n',
  });
  await applyRaw(
    cp.admin,
    app('gs-helm', 'gs-helm', { source: { repoURL: repo.url, targetRevision: 'HEAD', path: 'both' } }),
  );
  const a = await waitForApp(
    cp,
    'gs-helm',
    'synced or failed',
    (x) => synced(x) || condition(x, 'ComparisonError') !== undefined,
  );
  assert.equal(condition(a, 'ComparisonError'), undefined);
  assert.deepEqual(await configMapsIn('gs-helm'), ['lib-fromfile', 'umbrella']);
});

test("local manifests (argocd app sync --local) are applied instead of the repository's, and stay the target state", async () => {
  const repo = await newRepo({ 'app/git.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\n' });
  const spec = { source: { repoURL: repo.url, targetRevision: 'HEAD', path: 'app' }, syncPolicy: {} };
  const local = [
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'from-local' }, data: { a: '1' } }),
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-local-yaml\n',
  ];
  const op = (manifests: string[]) => ({
    operation: { sync: { revision: 'HEAD', manifests }, initiatedBy: { username: 'alice' } },
  });
  await applyRaw(cp.admin, { ...app('gs-local', 'gs-local', spec), ...op(local) } as unknown as KubeObject);
  const a = await waitForApp(cp, 'gs-local', 'synced', synced);
  assert.deepEqual(await configMapsIn('gs-local'), ['from-local', 'from-local-yaml']);
  // Argo CD compares with the last operation's manifests while it is the last operation: Synced.
  assert.equal((a.status?.['sync'] as { status?: string }).status, 'Synced');

  // An entry that is not one object fails the operation, with Argo CD's message; nothing applied.
  await applyRaw(cp.admin, {
    ...app('gs-local', 'gs-local', spec),
    ...op(['kind: [unclosed']),
  } as unknown as KubeObject);
  const failed = await waitForApp(cp, 'gs-local', 'the operation failed', (x) =>
    ['Error', 'Failed'].includes(operationPhase(x) ?? ''),
  );
  const message = (failed.status?.['operationState'] as { message?: string }).message ?? '';
  assert.match(message, /Failed to load local manifests: operation\.sync\.manifests\[0\]/);
  assert.deepEqual(await configMapsIn('gs-local'), ['from-local', 'from-local-yaml']);
});

let subRepo: TestRepo | undefined;
const inApp = (name: string, namespace: string, repo: TestRepo, proj = 'gs') =>
  app(
    name,
    namespace,
    { source: { repoURL: repo.url, targetRevision: 'HEAD', path: 'app', directory: { recurse: true } } },
    proj,
  );

test("a submodule's objects are synced: checked out at the commit the superproject pins, its relative URL resolved", async () => {
  const inner = await newRepo({ 'nested/inner.yaml': cm('from-inner-submodule') });
  const sub = await newRepo({ 'sub.yaml': cm('from-submodule') });
  // The submodule has a submodule of its own (git submodule update --recursive).
  await sub.commit({
    '.gitmodules': `[submodule "deeper"]\n\tpath = deeper\n\turl = ../${path.basename(inner.dir)}\n`,
  });
  git(sub.dir, 'update-index', '--add', '--cacheinfo', `160000,${inner.head()},deeper`);
  git(sub.dir, 'commit', '--quiet', '-m', 'nested');
  const pinned = sub.head();
  await sub.commit({ 'sub.yaml': cm('not-pinned') }); // a later commit: not the one pinned
  const repo = await withSubmodules([{ at: 'app/sub', url: `../${path.basename(sub.dir)}`, sha: pinned }]);
  subRepo = repo;
  await applyRaw(
    cp.admin,
    app('gs-sub', 'gs-sub', {
      source: { repoURL: repo.url, targetRevision: 'HEAD', path: 'app', directory: { recurse: true } },
    }),
  );
  const a = await waitForApp(
    cp,
    'gs-sub',
    'synced or failed',
    (x) => synced(x) || condition(x, 'ComparisonError') !== undefined,
  );
  assert.equal(condition(a, 'ComparisonError'), undefined);
  assert.deepEqual(await configMapsIn('gs-sub'), ['from-inner-submodule', 'from-submodule', 'own']);
});

test("a submodule URL outside the sourceRepos, or on the renderer's disk, is refused with no request to it and nothing applied", async () => {
  const before = recorder.requests();
  const repo = await withSubmodules([
    { at: 'app/elsewhere', url: `${recorder.baseURL}/not-allowed.git`, sha: 'a'.repeat(40) },
    { at: 'app/local', url: 'file:///etc', sha: 'b'.repeat(40) },
    { at: 'app/helper', url: 'ext::sh -c touch% /tmp/pwned', sha: 'c'.repeat(40) },
  ]);
  await applyRaw(
    cp.admin,
    project('gs-narrow', {
      sourceRepos: [repo.url],
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'gs-*', defaultServiceAccount: SA }],
    }),
  );
  await applyRaw(cp.admin, inApp('gs-sub-refused', 'gs-sub-refused', repo, 'gs-narrow'));
  const a = await waitForApp(
    cp,
    'gs-sub-refused',
    'a ComparisonError',
    (x) => condition(x, 'ComparisonError') !== undefined,
  );
  const message = condition(a, 'ComparisonError') ?? '';
  assert.match(
    message,
    /submodule 'app\/elsewhere' \('http:\/\/127\.0\.0\.1:\d+\/not-allowed\.git'\) of '[^']+': the project's sourceRepos do not allow/,
  );
  assert.match(message, /submodule 'app\/local' \('file:\/\/\/etc'\)[^;]*only network repositories/);
  assert.match(message, /submodule 'app\/helper'[^;]*'ext::' runs a git remote helper/);
  assert.equal(recorder.requests(), before, 'a request reached the refused submodule URL');
  assert.deepEqual(await configMapsIn('gs-sub-refused'), []);
});

test("a submodule gets the credentials of a source with its URL, never its superproject's", async () => {
  const SUB = { username: 'sub', password: 'sub-Pa55word' };
  const PARENT = { username: 'parent', password: 'parent-Pa55word' };
  const basic = (c: { username: string; password: string }) =>
    `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;
  const guarded = await startGitHttpServer('/', { auth: SUB });
  try {
    const sub = await newRepo({ 'private.yaml': cm('from-private-submodule') });
    const subURL = `${guarded.baseURL}${sub.dir}`;
    const repo = await withSubmodules([{ at: 'app/private', url: subURL, sha: sub.head() }]);
    const secret = (name: string, data: Record<string, string>) =>
      ({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace: NS, labels: { 'argocd.argoproj.io/secret-type': 'repository' } },
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
      }) as unknown as KubeObject;
    await applyRaw(cp.admin, secret('gs-parent', { url: repo.url, ...PARENT }));
    await applyRaw(cp.admin, secret('gs-sub', { url: subURL, ...SUB }));
    await applyRaw(cp.admin, inApp('gs-sub-creds', 'gs-sub-creds', repo));
    const a = await waitForApp(
      cp,
      'gs-sub-creds',
      'synced or failed',
      (x) => synced(x) || condition(x, 'ComparisonError') !== undefined,
    );
    assert.equal(condition(a, 'ComparisonError'), undefined);
    assert.deepEqual(await configMapsIn('gs-sub-creds'), ['from-private-submodule', 'own']);
    const sent = guarded.authorizations();
    assert.ok(sent.includes(basic(SUB)), "the submodule's own credential was used");
    assert.ok(!sent.includes(basic(PARENT)), "the superproject's credential reached the submodule's server");
  } finally {
    await guarded.close();
  }
});

test("ARGOCD_GIT_MODULES_ENABLED=false: submodules are not checked out, as Argo CD's repo-server with the switch off", async () => {
  assert.ok(subRepo, 'the submodule test ran first');
  await fx.restart(async () => {
    process.env['ARGOCD_GIT_MODULES_ENABLED'] = 'false';
  });
  await applyRaw(
    cp.admin,
    app('gs-sub-off', 'gs-sub-off', {
      source: { repoURL: subRepo.url, targetRevision: 'HEAD', path: 'app', directory: { recurse: true } },
    }),
  );
  const a = await waitForApp(
    cp,
    'gs-sub-off',
    'synced or failed',
    (x) => synced(x) || condition(x, 'ComparisonError') !== undefined,
  );
  assert.equal(condition(a, 'ComparisonError'), undefined);
  assert.deepEqual(await configMapsIn('gs-sub-off'), ['own']);
});
