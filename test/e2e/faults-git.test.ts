// The Git side failing under a running controller: the repository's server unreachable, and the
// branch an Application follows deleted. Each is a ComparisonError that says why, nothing is
// written to the destination meanwhile (audit log), and the Application recovers on its own when
// the repository or the branch is back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { applyRaw, getRaw, startControlPlane } from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import { git, startGitHttpServer, TestRepo } from '../support/git.ts';
import type { GitHttpServer } from '../support/git.ts';
import { startCuttableProxy } from '../support/faults.ts';
import type { CuttableProxy } from '../support/faults.ts';
import {
  application,
  condition,
  deployer,
  grantControllerRights,
  guestbookFiles,
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
let root: string;
let served: TestRepo;
let gitServer: GitHttpServer;
let proxy: CuttableProxy;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  // A short reconciliation interval: recovery comes from the periodic refresh, as in Argo CD.
  await setSettings(cp, {
    'application.sync.impersonation.enabled': 'true',
    'timeout.reconciliation': '2s',
    'timeout.reconciliation.jitter': '0s',
  });
  for (const ns of ['unreachable', 'gone']) await deployer(cp, ns, 'deployer');
  await applyRaw(
    cp.admin,
    project('faults', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'deployer' }],
    }),
  );
  root = await mkdtemp(path.join(os.tmpdir(), 'impersync-git-'));
  served = await TestRepo.create(path.join(root, 'guestbook'));
  await served.commit(guestbookFiles());
  gitServer = await startGitHttpServer(root);
  proxy = await startCuttableProxy(gitServer.baseURL);
  fx = await startFixture(cp, guestbookFiles());
});

after(async () => {
  await fx?.stop();
  await proxy?.close();
  await gitServer?.close();
  if (root) await rm(root, { recursive: true, force: true });
  await cp?.stop();
});

const isWrite = (ns: string) => (r: AuditRecord) =>
  r.namespace === ns && ['create', 'patch', 'update', 'delete'].includes(r.verb) && !r.dryRun;

async function greeting(ns: string): Promise<string | undefined> {
  const cm = await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'guestbook-config', namespace: ns });
  return (cm?.['data'] as Record<string, string> | undefined)?.['greeting'];
}

test(
  'Git server unreachable: ComparisonError naming the repository, no write, recovery when it returns',
  { timeout: 120_000 },
  async () => {
    const repoURL = `${proxy.server}/guestbook`;
    await applyRaw(
      cp.admin,
      application('unreachable', repoURL, {
        project: 'faults',
        destination: { server: IN_CLUSTER, namespace: 'unreachable' },
      }),
    );
    await waitForApp(cp, 'unreachable', 'first sync', (a) => operationPhase(a) === 'Succeeded');
    assert.equal(await greeting('unreachable'), 'hello');

    const port = proxy.port;
    await proxy.close(); // connections to the repository's address are now refused
    await served.commit(
      {
        'app/configmap.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guestbook-config\ndata:\n  greeting: hello again\n',
      },
      'new greeting',
    );
    const since = (await cp.readAudit()).length;
    const failed = await waitForApp(
      cp,
      'unreachable',
      'ComparisonError',
      (a) => condition(a, 'ComparisonError') !== undefined,
      30_000,
    );
    const message = condition(failed, 'ComparisonError') ?? '';
    assert.match(message, /failed to render desired manifests/);
    assert.ok(message.includes(`127.0.0.1:${port}/guestbook`), `the message names the repository: ${message}`);
    assert.doesNotMatch(message, /undefined|\[object /);
    // A few more refreshes while it is down: still nothing written to the destination.
    await new Promise((r) => setTimeout(r, 3000));
    assert.deepEqual(
      (await cp.readAudit())
        .slice(since)
        .filter(isWrite('unreachable'))
        .map((r) => `${r.verb} ${r.requestURI}`),
      [],
    );
    assert.equal(await greeting('unreachable'), 'hello', 'the live object left as it was');

    proxy = await startCuttableProxy(gitServer.baseURL, { port });
    const recovered = await waitForApp(
      cp,
      'unreachable',
      'recovered and synced the new commit',
      (a) =>
        condition(a, 'ComparisonError') === undefined &&
        operationPhase(a) === 'Succeeded' &&
        ((a.status?.['history'] ?? []) as unknown[]).length === 2,
      30_000,
    );
    assert.equal((recovered.status?.['history'] as Array<{ revision: string }>)[1]?.revision, served.head());
    assert.equal(await greeting('unreachable'), 'hello again');
  },
);

test(
  'the followed branch deleted: ComparisonError naming the revision, no write, recovery when it is pushed again',
  { timeout: 120_000 },
  async () => {
    served.branch('release');
    const first = served.head();
    served.switch('main');
    const app = application('gone', gitServer.url('guestbook'), {
      project: 'faults',
      destination: { server: IN_CLUSTER, namespace: 'gone' },
    });
    (app['spec'] as { source: { targetRevision: string } }).source.targetRevision = 'release';
    await applyRaw(cp.admin, app);
    await waitForApp(cp, 'gone', 'first sync', (a) => operationPhase(a) === 'Succeeded');

    git(served.dir, 'branch', '-D', 'release');
    const since = (await cp.readAudit()).length;
    const failed = await waitForApp(
      cp,
      'gone',
      'ComparisonError',
      (a) => condition(a, 'ComparisonError') !== undefined,
      30_000,
    );
    const message = condition(failed, 'ComparisonError') ?? '';
    assert.match(message, /release/, `the message names the revision: ${message}`);
    assert.match(message, /guestbook/, `the message names the repository: ${message}`);
    await new Promise((r) => setTimeout(r, 3000));
    assert.deepEqual(
      (await cp.readAudit())
        .slice(since)
        .filter(isWrite('gone'))
        .map((r) => `${r.verb} ${r.requestURI}`),
      [],
    );
    assert.equal(await greeting('gone'), 'hello again');

    git(served.dir, 'branch', 'release', first);
    const back = await waitForApp(
      cp,
      'gone',
      'recovered',
      (a) =>
        condition(a, 'ComparisonError') === undefined &&
        (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced',
      30_000,
    );
    assert.equal((back.status?.['sync'] as { revision?: string }).revision, first);
    assert.ok(gitServer.requests() > 0, 'the http path was taken');
  },
);
