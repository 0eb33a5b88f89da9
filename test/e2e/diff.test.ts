// `impersync diff` against a real control plane: the Application, its AppProject, argocd-cm and
// the Git repository are real; the first line names the identity the comparison ran as, and the
// exit status is kubectl diff's (0 in sync, 1 not, 2 error).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { IN_CLUSTER } from '../../src/api/index.ts';
import { run } from '../../src/cli/diff.ts';
import type { CommandIO } from '../../src/cli/io.ts';
import { DestinationClientFactory } from '../../src/kube/factory.ts';
import { sync } from './sync-driver.ts';
import { TestRepo } from '../support/git.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  applyRaw,
  createNamespace,
  createServiceAccount,
  grantImpersonation,
  grantRole,
  startControlPlane,
  userNameOf,
  madeForTest,
} from '../support/index.ts';

const saUser = userNameOf({ serviceAccount: 'deployer', namespace: 'guestbook' });
const manifest =
  'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  color: blue\n  mode: "0644"\n';

let cp: TestControlPlane;
let repo: TestRepo;
let cacheDir: string;

function captureIO(): CommandIO & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
    readFile: () => Promise.reject(new Error('no files')),
    readStdin: () => Promise.resolve(''),
    out: () => out,
    err: () => err,
  };
}

async function diff(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIO();
  const code = await run([...args, '--kubeconfig', cp.controllerKubeconfigPath, '--cache-dir', cacheDir], io);
  return { code, out: io.out(), err: io.err() };
}

const application = (name: string, destinationNamespace: string) => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
  metadata: { name, namespace: 'argocd' },
  spec: {
    project: 'guestbook',
    source: { repoURL: repo.url, path: 'app', targetRevision: 'HEAD' },
    destination: { server: 'https://kubernetes.default.svc', namespace: destinationNamespace },
  },
});

before(async () => {
  cp = await startControlPlane();
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-diff-cache-'));
  repo = await TestRepo.create();
  await repo.commit({ 'app/config.yaml': manifest });
  for (const ns of ['argocd', 'guestbook']) await createNamespace(cp.admin, ns);
  await createServiceAccount(cp.admin, 'guestbook', 'deployer');
  await grantRole(cp.admin, {
    name: 'deployer',
    namespace: 'guestbook',
    to: { serviceAccount: 'deployer', namespace: 'guestbook' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'patch', 'delete'] }],
  });
  // The controller reads its own namespace and may impersonate the one ServiceAccount; nothing else.
  await grantRole(cp.admin, {
    name: 'impersync-read',
    namespace: 'argocd',
    to: 'controller',
    rules: [
      { apiGroups: ['argoproj.io'], resources: ['applications', 'appprojects'], verbs: ['get', 'list'] },
      { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['get', 'list'] },
    ],
  });
  await grantImpersonation(cp.admin, {
    name: 'impersync-impersonate',
    serviceAccounts: [{ namespace: 'guestbook', name: 'deployer' }],
  });
  await applyRaw(cp.admin, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-cm', namespace: 'argocd' },
    data: { 'application.sync.impersonation.enabled': 'true' },
  });
  await applyRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name: 'guestbook', namespace: 'argocd' },
    spec: {
      sourceRepos: ['*'],
      destinations: [{ server: '*', namespace: '*' }],
      destinationServiceAccounts: [
        { server: 'https://kubernetes.default.svc', namespace: 'guestbook', defaultServiceAccount: 'deployer' },
      ],
    },
  });
  await applyRaw(cp.admin, application('guestbook', 'guestbook'));
  await applyRaw(cp.admin, application('stray', 'elsewhere'));
});

after(async () => {
  await cp?.stop();
  if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
});

test('out of sync: the first line names the ServiceAccount, the diff shows what a sync would create, exit 1', async () => {
  const r = await diff('guestbook');
  assert.equal(r.code, 1, r.err);
  const lines = r.out.split('\n');
  assert.equal(lines[0], `identity: ${saUser} (impersonated)`);
  assert.match(lines[1] ?? '', /^revision: [0-9a-f]{40}$/);
  assert.match(r.out, /^===== \/ConfigMap guestbook\/web-config ======$/m);
  assert.match(r.out, /^\+ {2}color: blue$/m);
  assert.match(
    r.out,
    /^\+ {2}mode: "0644"$/m,
    'YAML 1.1 would read 0644 as a number; the manifest quotes it and the diff keeps it a string',
  );
  assert.match(r.out, /^1 resources: 0 Synced, 1 OutOfSync; sync status OutOfSync$/m);
  const [dry] = await cp.waitForAudit((a) => a.verb === 'patch' && a.name === 'web-config' && a.dryRun);
  assert.equal(dry?.impersonatedUser, saUser);
});

test('in sync after a sync as the ServiceAccount: exit 0; -o json carries the identity and every resource', async () => {
  const factory = await DestinationClientFactory.fromKubeConfig({ kubeconfig: cp.controllerKubeconfigPath });
  try {
    const client = factory.forIdentity(IN_CLUSTER, { impersonate: saUser }, madeForTest('diff'));
    const result = await sync(
      client,
      [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'web-config' },
          data: { color: 'blue', mode: '0644' },
        },
      ],
      [],
      { appName: 'guestbook', namespace: 'guestbook' },
    );
    assert.equal(result.phase, 'Succeeded', result.message);
  } finally {
    await factory.close();
  }
  const text = await diff('guestbook');
  assert.equal(text.code, 0, text.out + text.err);
  assert.equal(text.out.split('\n')[0], `identity: ${saUser} (impersonated)`);
  const json = await diff('guestbook', '-o', 'json');
  assert.equal(json.code, 0);
  const report = JSON.parse(json.out) as {
    identity: string;
    decision: string;
    syncStatus: string;
    resources: Array<{ kind: string; name: string; status: string; diff: string }>;
  };
  assert.equal(report.identity, saUser);
  assert.equal(report.decision, 'impersonate');
  assert.equal(report.syncStatus, 'Synced');
  assert.deepEqual(
    report.resources.map((r) => [r.kind, r.name, r.status, r.diff]),
    [['ConfigMap', 'web-config', 'Synced', '']],
  );
});

test('drift after a live edit: exit 1 and the changed line', async () => {
  await applyRaw(
    cp.admin,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'web-config', namespace: 'guestbook' },
      data: { color: 'green' },
    },
    { fieldManager: 'kubectl-edit', force: true },
  );
  const r = await diff('guestbook');
  assert.equal(r.code, 1);
  assert.match(r.out, /^- {2}color: green$/m);
  assert.match(r.out, /^\+ {2}color: blue$/m);
});

test("no matching ServiceAccount with enforcement on: no comparison at all, Argo CD's message, exit 2", async () => {
  const before = (await cp.readAudit()).length;
  const r = await diff('stray');
  assert.equal(r.code, 2);
  assert.equal(
    r.out.split('\n')[0],
    'identity: none (deny: no matching service account found for destination server https://kubernetes.default.svc and namespace elsewhere)',
  );
  assert.match(
    r.out,
    /^error: no matching service account found for destination server https:\/\/kubernetes\.default\.svc and namespace elsewhere$/m,
  );
  const json = JSON.parse((await diff('stray', '-o', 'json')).out) as {
    identity: string;
    syncStatus: string;
    errors: string[];
  };
  assert.deepEqual([json.identity, json.syncStatus], ['none', 'Unknown']);
  // Nothing was sent to the destination on the Application's behalf.
  const since = (await cp.readAudit()).slice(before);
  assert.deepEqual(
    since.filter((a) => a.impersonatedUser !== undefined || a.dryRun),
    [],
  );
});

test("an invalid entry visited before the match is Argo CD's derive error in diff too: no diff, exit 2", async () => {
  // The second entry would decide (impersonate guestbook:deployer); the first, visited before it,
  // is not a valid glob, so the walk stops there with Argo CD's error, and nothing is compared.
  await applyRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name: 'invalid', namespace: 'argocd' },
    spec: {
      sourceRepos: ['*'],
      destinations: [{ server: '*', namespace: '*' }],
      destinationServiceAccounts: [
        { server: '[z-a]', namespace: '*', defaultServiceAccount: 'other' },
        { server: 'https://kubernetes.default.svc', namespace: 'guestbook', defaultServiceAccount: 'deployer' },
      ],
    },
  });
  const refused = application('refused', 'guestbook');
  await applyRaw(cp.admin, { ...refused, spec: { ...refused.spec, project: 'invalid' } });
  const before = (await cp.readAudit()).length;
  const r = await diff('refused');
  assert.equal(r.code, 2, r.out);
  assert.equal(
    r.out.split('\n')[0],
    "identity: none (error: failed to derive service account to impersonate: invalid glob pattern for destination server: hi character 'a' should be greater than lo 'z')",
  );
  const since = (await cp.readAudit()).slice(before);
  assert.deepEqual(
    since.filter((a) => a.impersonatedUser !== undefined || a.dryRun),
    [],
  );
});

test('bad input is exit 2 with one line on stderr', async () => {
  const missing = await diff('nope');
  assert.equal(missing.code, 2);
  assert.match(missing.err, /^impersync diff: .*nope.*\n$/);
  const io = captureIO();
  assert.equal(await run([], io), 2);
  assert.match(io.err(), /give exactly one Application name/);
  const help = captureIO();
  assert.equal(await run(['--help'], help), 0);
  assert.match(help.out(), /^usage: impersync diff/);
});

test('the impersync command runs it as a process that exits on its own with the diff status', async () => {
  const main = path.resolve(import.meta.dirname, '../../src/cli/main.ts');
  const child = spawn(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      main,
      'diff',
      'guestbook',
      '--kubeconfig',
      cp.controllerKubeconfigPath,
      '--cache-dir',
      cacheDir,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  assert.equal(code, 1, out);
  assert.equal(out.split('\n')[0], `identity: ${saUser} (impersonated)`);
});
