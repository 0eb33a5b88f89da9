// Real repositories end to end (issue 13), on a real control plane with the controller and its
// child renderer: Git over HTTPS with basic auth and a private CA, Git over SSH with a key and known
// hosts, a Helm chart repository over HTTPS with auth, the CNCF distribution registry with auth and
// TLS, and a multi-source Application with a `$ref` value file and its rollback. Each syncs as its
// project's ServiceAccount; a wrong password, an unknown host key, a missing CA and a project not
// allowed the repository end in a clear condition with nothing written; a fixed Secret, a host key
// and a CA certificate take effect without a restart, each refreshing exactly the Application it
// concerns; no secret value shows in any status, event, log line or metric.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { applyRaw, listRaw, startControlPlane } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { TestRepo, startGitHttpServer, type GitHttpServer } from '../support/git.ts';
import {
  chartArchive,
  helmPush,
  startHelmRepo,
  startRegistry,
  type HelmRepoServer,
  type TestRegistry,
} from '../support/helm.ts';
import { sshKeyPair, startGitSshServer, type GitSshServer } from '../support/ssh.ts';
import { testCA } from '../support/tls.ts';
import { toolsDir } from '../source/tools.ts';
import {
  IN_CLUSTER,
  NS,
  condition,
  deployer,
  getApp,
  grantControllerRights,
  guestbookFiles,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

const GIT_PASSWORD = 'git-Pa55word-never-shown';
const HELM_PASSWORD = 'helm-Pa55word-never-shown';
const WRONG_PASSWORD = 'wrong-Pa55word-never-shown';
const SA = 'deployer';
const NAMESPACES = ['repo-https', 'repo-ssh', 'repo-helm', 'repo-oci', 'repo-multi', 'repo-fail'];

let cp: TestControlPlane;
let fx: Fixture;
let git: GitHttpServer;
let ssh: GitSshServer;
let sshUnknown: GitSshServer;
let helm: HelmRepoServer;
let registry: TestRegistry;
let repoA: TestRepo;
let repoB: TestRepo;
let repoC: TestRepo;
const key = sshKeyPair('renderer');

const cmFile = (name: string) => ({
  [`app/${name}.yaml`]: `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  from: git\n`,
});
const httpsURL = (r: TestRepo, host = '127.0.0.1') =>
  `${git.baseURL.replace('127.0.0.1', host)}${r.dir.split('/').map(encodeURIComponent).join('/')}`;

function secret(name: string, type: 'repository' | 'repo-creds', data: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: NS, labels: { 'argocd.argoproj.io/secret-type': type } },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  } as unknown as KubeObject;
}

function app(name: string, namespace: string, spec: Record<string, unknown>, proj = 'repos'): KubeObject {
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

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  for (const ns of NAMESPACES) await deployer(cp, ns, SA);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  const dsa = [{ server: IN_CLUSTER, namespace: 'repo-*', defaultServiceAccount: SA }];
  await applyRaw(cp.admin, project('repos', { destinationServiceAccounts: dsa }));
  await applyRaw(
    cp.admin,
    project('narrow', { sourceRepos: ['https://git.example.invalid/*'], destinationServiceAccounts: dsa }),
  );
  await applyRaw(cp.admin, project('other', { destinationServiceAccounts: dsa }));

  const ca = testCA();
  repoA = await TestRepo.create();
  await repoA.commit({ ...cmFile('from-https'), ...cmFile('from-ssh'), 'values/prod.yaml': 'greeting: from-ref\n' });
  repoB = await TestRepo.create();
  await repoB.commit(cmFile('never-written'));
  repoC = await TestRepo.create();
  await repoC.commit(cmFile('scoped-never-written'));
  git = await startGitHttpServer('/', {
    tls: { cert: ca.cert, key: ca.key },
    auth: { username: 'git', password: GIT_PASSWORD },
  });
  const sshRoot = path.dirname(repoA.dir);
  ssh = await startGitSshServer(sshRoot, key.publicKey);
  sshUnknown = await startGitSshServer(sshRoot, key.publicKey);
  helm = await startHelmRepo({ auth: { username: 'helm', password: HELM_PASSWORD } });
  helm.setCharts([{ name: 'guestbook', version: '0.1.0', archive: chartArchive('guestbook', '0.1.0') }]);
  registry = await startRegistry({ username: 'oci', password: HELM_PASSWORD });
  await helmPush(path.join(toolsDir(), 'helm'), chartArchive('ocichart', '1.2.0'), 'ocichart', '1.2.0', registry.host, {
    username: 'oci',
    password: HELM_PASSWORD,
  });

  const cms = [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-tls-certs-cm', namespace: NS },
      data: { '127.0.0.1': ca.caCert },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-ssh-known-hosts-cm', namespace: NS },
      data: { ssh_known_hosts: `${ssh.knownHostsLine}\n` },
    },
  ];
  for (const cm of cms) await applyRaw(cp.admin, cm as unknown as KubeObject);
  const secrets = [
    secret('https-a', 'repository', { url: httpsURL(repoA), username: 'git', password: GIT_PASSWORD }),
    secret('https-b', 'repository', { url: httpsURL(repoB), username: 'git', password: WRONG_PASSWORD }),
    secret('https-localhost', 'repository', {
      url: httpsURL(repoA, 'localhost'),
      username: 'git',
      password: GIT_PASSWORD,
    }),
    // A project-scoped repository: project `other` does not get its credentials.
    secret('https-scoped', 'repository', {
      url: `${httpsURL(repoC)}.git`,
      username: 'git',
      password: GIT_PASSWORD,
      project: 'repos',
    }),
    // A credential template for every repository of the SSH server.
    secret('ssh-template', 'repo-creds', { url: `ssh://git@127.0.0.1:${ssh.port}/`, sshPrivateKey: key.privateKey }),
    secret('ssh-unknown', 'repo-creds', {
      url: `ssh://git@127.0.0.1:${sshUnknown.port}/`,
      sshPrivateKey: key.privateKey,
    }),
    secret('helm', 'repository', { url: helm.url, type: 'helm', username: 'helm', password: HELM_PASSWORD }),
    secret('oci', 'repository', {
      url: `${registry.host}/charts`,
      type: 'helm',
      enableOCI: 'true',
      username: 'oci',
      password: HELM_PASSWORD,
    }),
  ];
  for (const s of secrets) await applyRaw(cp.admin, s);
  fx = await startFixture(cp, guestbookFiles(), { rendererLogs: true });
});

after(async () => {
  await fx?.stop();
  await Promise.all([git?.close(), ssh?.close(), sshUnknown?.close(), helm?.close(), registry?.close()]);
  await repoA?.remove();
  await repoB?.remove();
  await repoC?.remove();
  await cp?.stop();
});

async function writesAsServiceAccount(namespace: string): Promise<void> {
  const writes = (await cp.readAudit()).filter(
    (r) =>
      r.namespace === namespace && ['create', 'patch', 'update'].includes(r.verb) && r.user === cp.controllerUserName,
  );
  assert.ok(writes.length >= 1, `writes to ${namespace}: ${writes.length}`);
  for (const w of writes) assert.equal(w.impersonatedUser, `system:serviceaccount:${namespace}:${SA}`, w.requestURI);
}

async function configMapsIn(namespace: string): Promise<string[]> {
  const list = await listRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace });
  return list.map((c) => c.metadata.name).filter((n) => n !== 'kube-root-ca.crt');
}

test('each server and credential kind syncs an Application as its ServiceAccount', async () => {
  await applyRaw(
    cp.admin,
    app('https-basic', 'repo-https', {
      source: {
        repoURL: httpsURL(repoA),
        path: 'app',
        targetRevision: 'main',
        directory: { include: 'from-https.yaml' },
      },
    }),
  );
  await applyRaw(
    cp.admin,
    app('ssh-key', 'repo-ssh', {
      source: {
        repoURL: ssh.url(repoA.dir),
        path: 'app',
        targetRevision: 'main',
        directory: { include: 'from-ssh.yaml' },
      },
    }),
  );
  await applyRaw(
    cp.admin,
    app('helm-chart', 'repo-helm', { source: { repoURL: helm.url, chart: 'guestbook', targetRevision: '>=0.1.0' } }),
  );
  await applyRaw(
    cp.admin,
    app('oci-chart', 'repo-oci', {
      source: { repoURL: `${registry.host}/charts`, chart: 'ocichart', targetRevision: '1.2.0' },
    }),
  );
  for (const [name, ns] of [
    ['https-basic', 'repo-https'],
    ['ssh-key', 'repo-ssh'],
    ['helm-chart', 'repo-helm'],
    ['oci-chart', 'repo-oci'],
  ] as const) {
    const a = await waitForApp(cp, name, 'Synced after a Succeeded sync', synced, 120_000);
    const result = (a.status?.['operationState'] as { syncResult?: { identity?: string } }).syncResult;
    assert.equal(result?.identity, `system:serviceaccount:${ns}:${SA}`);
    await writesAsServiceAccount(ns);
  }
  assert.deepEqual(await configMapsIn('repo-https'), ['from-https']);
  assert.deepEqual(await configMapsIn('repo-ssh'), ['from-ssh']);
  const helmApp = await getApp(cp, 'helm-chart');
  assert.equal((helmApp.status?.['sync'] as { revision?: string }).revision, '0.1.0');
  assert.equal(helmApp.status?.['sourceType'], 'Helm');
  const [cm] = await listRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'repo-helm' }).then((l) =>
    l.filter((c) => c.metadata.name === 'guestbook-helm-chart'),
  );
  // .Capabilities: the destination's version, read as the Application's identity.
  assert.match(String((cm as unknown as { data: Record<string, string> }).data['kube']), /^v1\.34\./);
  assert.equal((cm as unknown as { data: Record<string, string> }).data['hasApps'], 'true');
  assert.deepEqual(await configMapsIn('repo-oci'), ['ocichart-oci-chart']);
});

test('a multi-source Application with a $ref value file: revisions, sourceTypes, history, and a rollback', async () => {
  const sources = (revision: string) => [
    {
      repoURL: helm.url,
      chart: 'guestbook',
      targetRevision: '0.1.0',
      helm: { valueFiles: ['$values/values/prod.yaml'] },
    },
    { repoURL: httpsURL(repoA), targetRevision: revision, ref: 'values' },
  ];
  await applyRaw(cp.admin, app('multi', 'repo-multi', { sources: sources('main') }));
  const first = await waitForApp(cp, 'multi', 'Synced', synced, 120_000);
  const sync = first.status?.['sync'] as { revisions?: string[]; revision?: string };
  assert.deepEqual(sync.revisions, ['0.1.0', repoA.head()]);
  assert.equal(sync.revision, undefined);
  assert.deepEqual(first.status?.['sourceTypes'], ['Helm', '']);
  const history = first.status?.['history'] as Array<{ id: number; revisions?: string[]; sources?: unknown[] }>;
  assert.deepEqual(history.at(-1)?.revisions, ['0.1.0', repoA.head()]);
  assert.equal(history.at(-1)?.sources?.length, 2);
  const cm = (await listRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'repo-multi' })).find(
    (c) => c.metadata.name === 'guestbook-multi',
  ) as unknown as { data: Record<string, string> };
  assert.equal(cm.data['greeting'], 'from-ref');

  // A new commit of the ref source changes the values; then a rollback to the first history entry.
  const before = repoA.head();
  await repoA.commit({ 'values/prod.yaml': 'greeting: second\n' });
  await applyRaw(
    cp.admin,
    app('multi', 'repo-multi', { sources: sources('main'), syncPolicy: { automated: { enabled: false } } }),
    {
      force: true,
    },
  );
  await applyRaw(
    cp.admin,
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'multi', namespace: NS },
      operation: {
        sync: { revisions: history.at(-1)?.revisions, sources: history.at(-1)?.sources },
        initiatedBy: { username: 'admin' },
      },
    } as unknown as KubeObject,
    { force: true, fieldManager: 'rollback' },
  );
  const rolled = await waitForApp(
    cp,
    'multi',
    'the rollback Succeeded',
    (a) =>
      operationPhase(a) === 'Succeeded' &&
      (a.status?.['operationState'] as { syncResult?: { revisions?: string[] } }).syncResult?.revisions?.[1] ===
        before &&
      (a.status?.['history'] as unknown[]).length === 2,
    120_000,
  );
  assert.deepEqual(
    (rolled.status?.['operationState'] as { syncResult: { revisions: string[] } }).syncResult.revisions,
    ['0.1.0', before],
  );
});

test('a wrong password, an unknown host key, a missing CA and a project not allowed the repository end in a clear condition, nothing written', async () => {
  const cases: Array<[string, Record<string, unknown>, RegExp, string?]> = [
    [
      'wrong-password',
      { source: { repoURL: httpsURL(repoB), path: 'app', targetRevision: 'main' } },
      /repository '.*' not reachable: .*(Authentication failed|could not read Username)/s,
    ],
    [
      'unknown-host',
      { source: { repoURL: sshUnknown.url(repoA.dir), path: 'app', targetRevision: 'main' } },
      /Host key verification failed/,
    ],
    [
      'missing-ca',
      { source: { repoURL: httpsURL(repoA, 'localhost'), path: 'app', targetRevision: 'main' } },
      /server certificate verification failed/,
    ],
    [
      'not-allowed',
      { source: { repoURL: httpsURL(repoA), path: 'app', targetRevision: 'main' } },
      /application repo .* is not permitted in project 'narrow'/,
      'narrow',
    ],
    [
      'scoped-elsewhere',
      { source: { repoURL: httpsURL(repoC), path: 'app', targetRevision: 'main' } },
      /not reachable: .*(Authentication failed|could not read Username)/s,
      'other',
    ],
  ];
  for (const [name, spec, , proj] of cases) await applyRaw(cp.admin, app(name, 'repo-fail', spec, proj));
  for (const [name, , want] of cases) {
    const a = await waitForApp(
      cp,
      name,
      'a condition naming the failure',
      (x) => want.test(`${condition(x, 'ComparisonError') ?? ''}${condition(x, 'InvalidSpecError') ?? ''}`),
      90_000,
    );
    assert.equal(operationPhase(a), undefined, `${name}: no sync was started`);
  }
  assert.deepEqual(await configMapsIn('repo-fail'), [], 'nothing was written');
});

test('a fixed repository Secret takes effect without a restart, refreshing exactly the Application of its URL', async () => {
  const logsBefore = fx.logs.length;
  await applyRaw(
    cp.admin,
    secret('https-b', 'repository', { url: httpsURL(repoB), username: 'git', password: GIT_PASSWORD }),
    { force: true },
  );
  await waitForApp(cp, 'wrong-password', 'Synced once its Secret holds the right password', synced, 90_000);
  assert.deepEqual(await configMapsIn('repo-fail'), ['never-written']);
  // The watch requeued the one Application whose repoURL the Secret names, none of the nine others.
  const requeues = fx.logs
    .slice(logsBefore)
    .flatMap((chunk) => chunk.split('\n').filter((l) => l.startsWith('{')))
    .map((l) => JSON.parse(l) as { msg?: string; why?: string; count?: number })
    .filter((l) => l.msg === 'requeue' && l.why === 'repository Secret https-b changed');
  assert.deepEqual(
    requeues.map((l) => l.count),
    [1],
  );
});

test('a host key added to argocd-ssh-known-hosts-cm and a CA to argocd-tls-certs-cm take effect without a restart, each refreshing exactly the Application it concerns', async () => {
  const logsBefore = fx.logs.length;
  const ca = testCA();
  const cms = [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-ssh-known-hosts-cm', namespace: NS },
      data: { ssh_known_hosts: `${ssh.knownHostsLine}\n${sshUnknown.knownHostsLine}\n` },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-tls-certs-cm', namespace: NS },
      data: { '127.0.0.1': ca.caCert, localhost: ca.caCert },
    },
  ];
  for (const cm of cms) await applyRaw(cp.admin, cm as unknown as KubeObject, { force: true });
  // Both render repoA's app/ into repo-fail, the same two ConfigMaps: whichever syncs last owns
  // them and the other stays OutOfSync (SharedResourceWarning; an automated sync does not try the
  // same revision again), so each is waited for until a sync rendered from its repository, which
  // only the new host key or CA allows, Succeeded with no ComparisonError left.
  for (const name of ['unknown-host', 'missing-ca']) {
    await waitForApp(
      cp,
      name,
      'a sync Succeeded once its host key or CA is configured',
      (a) => operationPhase(a) === 'Succeeded' && condition(a, 'ComparisonError') === undefined,
      90_000,
    );
  }
  const requeues = fx.logs
    .slice(logsBefore)
    .flatMap((chunk) => chunk.split('\n').filter((l) => l.startsWith('{')))
    .map((l) => JSON.parse(l) as { msg?: string; why?: string; count?: number })
    .filter((l) => l.msg === 'requeue' && /^argocd-(ssh-known-hosts|tls-certs)-cm changed$/.test(l.why ?? ''));
  assert.deepEqual(requeues.map((l) => `${l.why}: ${l.count}`).sort(), [
    'argocd-ssh-known-hosts-cm changed: 1',
    'argocd-tls-certs-cm changed: 1',
  ]);
});

test('no secret value shows in any status, event, log line or metric', async () => {
  const apps = await listRaw(cp.admin, { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', namespace: NS });
  const events = await listRaw(cp.admin, { apiVersion: 'v1', kind: 'Event', namespace: NS });
  const haystacks = {
    status: JSON.stringify(apps.map((a) => (a as unknown as { status?: unknown }).status)),
    events: JSON.stringify([...events, ...fx.events.events]),
    logs: fx.logs.join(''),
    metrics: await fx.controller.metrics.registry.metrics(),
  };
  assert.ok(haystacks.logs.includes('"component":"renderer"'), "the renderer's log lines are read too");
  const secrets = [
    GIT_PASSWORD,
    HELM_PASSWORD,
    WRONG_PASSWORD,
    key.privateKey.split('\n')[1] as string,
    Buffer.from(`git:${GIT_PASSWORD}`).toString('base64'),
  ];
  for (const [where, text] of Object.entries(haystacks)) {
    for (const s of secrets) assert.ok(!text.includes(s), `a secret value shows in the ${where}`);
  }
});
