// A cluster Secret's execProviderConfig on the real control plane: a local credential plugin (a
// shell script) prints an ExecCredential whose token the API server accepts (an argocd-manager
// ServiceAccount's), for a "remote" cluster that is this API server under another URL. The plugin
// authenticates the controller; the writes still impersonate the tenant's deployer. Then its
// cache (one run for many requests until it expires, again after a 401), a plugin that fails, one
// that sleeps past the timeout, and awsAuthConfig without argocd-k8s-auth.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { applyRaw, createServiceAccount, grantRole, requestOk, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  NS,
  application,
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

let cp: TestControlPlane;
let fx: Fixture;
let dir = '';
let server = '';
const V1 = 'client.authentication.k8s.io/v1';
const MANAGER = 'system:serviceaccount:kube-system:argocd-manager';

async function script(name: string, body: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, `#!/bin/sh\n${body}\n`, { mode: 0o700 });
  await chmod(file, 0o700);
  return file;
}

async function execCluster(config: Record<string, unknown>): Promise<void> {
  await applyRaw(
    cp.admin,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'exec-cluster', namespace: NS, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
      type: 'Opaque',
      stringData: {
        name: 'exec-cluster',
        server,
        config: JSON.stringify({
          ...config,
          tlsClientConfig: { caData: Buffer.from(cp.caPem).toString('base64'), serverName: 'kubernetes' },
        }),
      },
    },
    { force: true },
  );
}

const runs = async () => (await readFile(path.join(dir, 'runs'), 'utf8').catch(() => '')).split('\n').filter(Boolean);

/** A hard refresh, done when the controller has taken its annotation off. */
async function hardRefresh(name: string): Promise<void> {
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/${name}`,
    body: { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'hard' } } },
    contentType: 'application/merge-patch+json',
  });
  await waitForApp(
    cp,
    name,
    'refreshed',
    (a) =>
      (a['metadata'] as { annotations?: Record<string, string> }).annotations?.['argocd.argoproj.io/refresh'] ===
      undefined,
  );
}

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'impersync-exec-e2e-'));
  cp = await startControlPlane();
  // The same API server as the in-cluster destination under another URL (a cluster of its own to
  // the controller), verified as the name its certificate holds (tlsClientConfig.serverName).
  server = cp.server.replace('127.0.0.1', 'localhost');
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await createServiceAccount(cp.admin, 'kube-system', 'argocd-manager');
  await grantRole(cp.admin, {
    name: 'argocd-manager',
    to: { serviceAccount: 'argocd-manager', namespace: 'kube-system' },
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  const token = await cp.tokenFor({ serviceAccount: 'argocd-manager', namespace: 'kube-system' });
  const credential = (t: string) =>
    JSON.stringify({
      apiVersion: V1,
      kind: 'ExecCredential',
      status: { token: t, expirationTimestamp: '2100-01-01T00:00:00Z' },
    });
  await writeFile(path.join(dir, 'bad.json'), credential('not-a-token'));
  await writeFile(path.join(dir, 'good.json'), credential(token));
  await deployer(cp, 'exec-a', 'deployer');
  await applyRaw(
    cp.admin,
    project('exec', {
      destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }],
    }),
  );
  fx = await startFixture(cp, guestbookFiles(), { execTimeoutMs: 2_000 });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('the plugin authenticates the controller, impersonation on top; run again after a 401, then once until it expires', async () => {
  // Its first answer is a token the API server refuses; every later one is argocd-manager's.
  const plugin = await script(
    'plugin.sh',
    [
      `echo "$1 $2" >> ${dir}/runs`,
      `printf '%s\\n%s' "$KUBERNETES_EXEC_INFO" "$CLUSTER_REGION" > ${dir}/info`,
      `if [ ! -e ${dir}/answered ]; then touch ${dir}/answered; cat ${dir}/bad.json; else cat ${dir}/good.json; fi`,
    ].join('\n'),
  );
  await execCluster({
    execProviderConfig: {
      command: plugin,
      args: ['--cluster', 'exec'],
      env: { CLUSTER_REGION: 'local-1' },
      apiVersion: V1,
      installHint: 'see docs/install.md',
    },
  });
  await applyRaw(
    cp.admin,
    application('exec-app', fx.repo.url, {
      project: 'exec',
      destination: { name: 'exec-cluster', namespace: 'exec-a' },
    }),
  );
  await waitForApp(cp, 'exec-app', 'Succeeded', (a) => operationPhase(a) === 'Succeeded');
  const [info, region] = (await readFile(path.join(dir, 'info'), 'utf8')).split('\n');
  assert.deepEqual(JSON.parse(info ?? ''), { kind: 'ExecCredential', apiVersion: V1, spec: { interactive: false } });
  assert.equal(region, 'local-1');
  const audit = await cp.readAudit();
  // Every write the controller made (the test's own, as the admin, set up the namespace).
  const writes = audit.filter(
    (r) => r.namespace === 'exec-a' && r.verb === 'patch' && !r.dryRun && r.user !== cp.adminUserName,
  );
  assert.ok(writes.length > 0, 'the sync wrote');
  for (const r of writes) {
    assert.equal(r.user, MANAGER, "the plugin's token is the credential");
    assert.equal(r.impersonatedUser, 'system:serviceaccount:exec-a:deployer', 'impersonation still applies');
  }
  assert.deepEqual(await runs(), ['--cluster exec', '--cluster exec'], 'the refused token, then the good one');
  // Two hard refreshes later (discovery, reads and dry-runs again), the good token is still the one.
  await hardRefresh('exec-app');
  await hardRefresh('exec-app');
  assert.equal((await runs()).length, 2, 'not run again before its expirationTimestamp');
});

test('a plugin that fails: a ComparisonError with its exit code and an excerpt of its stderr', async () => {
  const fails = await script('fails.sh', 'echo "credentials expired; run: sso login" >&2\nexit 1');
  await execCluster({ execProviderConfig: { command: fails, apiVersion: V1 } });
  const app = await waitForApp(cp, 'exec-app', 'ComparisonError naming the plugin', (a) =>
    (condition(a, 'ComparisonError') ?? '').includes(`exec: executable ${fails} failed`),
  );
  assert.ok(
    condition(app, 'ComparisonError')?.includes(
      `getting credentials: exec: executable ${fails} failed with exit code 1; stderr: credentials expired; run: sso login`,
    ),
    condition(app, 'ComparisonError'),
  );
});

test('a plugin that does not answer is killed at the timeout', async () => {
  const sleeps = await script('sleeps.sh', 'exec sleep 600');
  await execCluster({ execProviderConfig: { command: sleeps, apiVersion: V1 } });
  const app = await waitForApp(cp, 'exec-app', 'ComparisonError naming the timeout', (a) =>
    (condition(a, 'ComparisonError') ?? '').includes(
      `exec: executable ${sleeps} did not finish within 2s and was killed`,
    ),
  );
  assert.ok(condition(app, 'ComparisonError')?.includes('getting credentials: '), condition(app, 'ComparisonError'));
});

test('awsAuthConfig runs argocd-k8s-auth aws as Argo CD does; not on PATH, the condition says so', async () => {
  await execCluster({ awsAuthConfig: { clusterName: 'prod', roleARN: 'arn:aws:iam::1:role/argocd' } });
  const app = await waitForApp(cp, 'exec-app', 'ComparisonError naming argocd-k8s-auth', (a) =>
    (condition(a, 'ComparisonError') ?? '').includes('exec: executable argocd-k8s-auth not found'),
  );
  assert.ok(
    condition(app, 'ComparisonError')?.includes("awsAuthConfig is Argo CD's `argocd-k8s-auth aws` credential plugin"),
  );
});
