// Two controller replicas behind leader election, as `impersync run --leader-elect` wires them:
// each replica stands as a candidate, and only the one that leads runs the controller
// (startController on onStartedLeading, stop on onStoppedLeading). Exactly one reconciles; when it
// dies without releasing the Lease, the other takes over and syncs what comes next; no operation
// runs twice.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { applyRaw, getRaw, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import { TestRepo } from '../support/git.ts';
import { startController } from '../../src/controller/controller.ts';
import type { RunningController } from '../../src/controller/controller.ts';
import { MemoryEvents } from '../../src/controller/events.ts';
import { runWhileLeading } from '../../src/controller/leader.ts';
import type { LeaderElection } from '../../src/controller/leader.ts';
import { createLogger } from '../../src/observability/logger.ts';
import {
  application,
  deployer,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  NS,
  operationPhase,
  project,
  setSettings,
  waitForApp,
  grantControllerLease,
} from './controller-fixture.ts';

let cp: TestControlPlane;
let repo: TestRepo;

type Replica = {
  name: string;
  events: MemoryEvents;
  election: LeaderElection;
  controller: () => RunningController | undefined;
  starts: number;
  cacheDir: string;
};
const replicas: Replica[] = [];

async function startReplica(name: string): Promise<Replica> {
  const events = new MemoryEvents();
  const cacheDir = await mkdtemp(path.join(os.tmpdir(), `impersync-${name}-`));
  let current: RunningController | undefined;
  const replica: Replica = {
    name,
    events,
    cacheDir,
    starts: 0,
    controller: () => current,
    // As `impersync run --leader-elect` wires it: the controller runs only while leading.
    election: runWhileLeading({
      kc: cp.controller,
      namespace: NS,
      name: 'impersync-controller',
      identity: name,
      // client-go's defaults but a shorter retry: a test process that stalls, or an API server slow
      // to answer a renewal, on a loaded machine must not cost the leader its Lease (the standby
      // would then start a controller the test says it never starts).
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 1000,
      start: async () => {
        replica.starts++;
        current = await startController({
          kc: cp.controller,
          namespace: NS,
          logger: createLogger(
            { level: 'warn' },
            new Writable({
              write(_c, _e, cb) {
                cb();
              },
            }),
          ),
          childRenderer: { cacheDir },
          waitTimeoutMs: 20_000,
          events: [events],
        });
        return current;
      },
      onStopped: () => {
        current = undefined;
      },
    }),
  };
  replicas.push(replica);
  return replica;
}

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await grantControllerLease(cp);
  await deployer(cp, 'guestbook', 'generic-deployer');
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await applyRaw(
    cp.admin,
    project('my-project', {
      destinationServiceAccounts: [
        { server: IN_CLUSTER, namespace: 'guestbook', defaultServiceAccount: 'generic-deployer' },
      ],
    }),
  );
  repo = await TestRepo.create();
  await repo.commit(guestbookFiles(), 'guestbook');
});

after(async () => {
  for (const r of replicas) {
    await r.election.stop();
    await rm(r.cacheDir, { recursive: true, force: true });
  }
  await repo?.remove();
  await cp?.stop();
});

const completed = (r: Replica) =>
  r.events.events.filter((e) => e.reason === 'OperationCompleted').map((e) => e.message);

test('two replicas: exactly one reconciles; when it dies the other takes over; no operation runs twice', async () => {
  const a = await startReplica('replica-a');
  const b = await startReplica('replica-b');
  await until('a leader with a running controller', () => replicas.some((r) => r.controller() !== undefined));
  const [leader, standby] = a.controller() ? [a, b] : [b, a];
  assert.equal(standby.starts, 0, 'the standby never started a controller');

  // First revision: synced by the leader alone.
  await applyRaw(cp.admin, application('guestbook', repo.url, { project: 'my-project' }));
  const first = await waitForApp(
    cp,
    'guestbook',
    'the first sync',
    (x) => operationPhase(x) === 'Succeeded' && ((x.status?.['history'] as unknown[] | undefined)?.length ?? 0) === 1,
  );
  // The event is recorded just after the status is written.
  await until('the leader to record the completion', () => completed(leader).length === 1);
  assert.deepEqual(completed(standby), []);
  const firstRevision = (first.status?.['history'] as { revision: string }[])[0]?.revision;

  // The leader dies: its controller stops and the Lease is not released, as after a crash.
  await leader.election.stop({ release: false });
  assert.equal(leader.controller(), undefined);
  // Once the lease duration has passed: a generous wait beyond it.
  await until('the standby to lead', () => standby.controller() !== undefined, 60_000);
  assert.equal(standby.starts, 1);

  // Second revision: synced by the new leader, once.
  const second = await repo.commit(
    { 'app/extra.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  a: "1"\n' },
    'second',
  );
  await refresh();
  const done = await waitForApp(
    cp,
    'guestbook',
    'the second sync',
    (x) => ((x.status?.['history'] as unknown[] | undefined)?.length ?? 0) === 2 && operationPhase(x) === 'Succeeded',
  );
  const revisions = (done.status?.['history'] as { revision: string }[]).map((h) => h.revision);
  assert.deepEqual(revisions, [firstRevision, second]);
  await until('the new leader to record the completion', () => completed(standby).length === 1);
  assert.equal(completed(leader).length, 1, 'the old leader ran nothing after it died');
  // Every sync ran once: one completion per revision across both replicas.
  const all = [...completed(leader), ...completed(standby)];
  assert.equal(all.filter((m) => m.includes(firstRevision ?? '?')).length, 1, all.join('\n'));
  assert.equal(all.filter((m) => m.includes(second)).length, 1, all.join('\n'));
});

test('two `impersync run --leader-elect` processes: SIGKILL the leader, the other takes over; SIGTERM releases the Lease', async () => {
  const { spawn } = await import('node:child_process');
  // The in-process replicas of the test above are gone: start from a free Lease.
  for (const r of replicas.splice(0)) {
    await r.election.stop();
    await rm(r.cacheDir, { recursive: true, force: true });
  }
  const main = new URL('../../src/cli/main.ts', import.meta.url).pathname;
  const startProcess = async (name: string) => {
    const cacheDir = await mkdtemp(path.join(os.tmpdir(), `impersync-${name}-`));
    const child = spawn(
      process.execPath,
      [
        '--disable-warning=ExperimentalWarning',
        main,
        'run',
        '--kubeconfig',
        cp.controllerKubeconfigPath,
        '--namespace',
        NS,
        '--leader-elect',
        '--health-port',
        '0',
        '--log-level',
        'info',
      ],
      {
        env: { ...process.env, POD_NAME: name, IMPERSYNC_CACHE_DIR: cacheDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const p = { name, child, out: '', cacheDir };
    child.stdout.on('data', (d: Buffer) => {
      p.out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      p.out += d.toString();
    });
    return p;
  };
  const holder = async () => {
    const lease = await getRaw(cp.admin, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace: NS,
      name: 'impersync-controller',
    });
    return (lease?.['spec'] as { holderIdentity?: string } | undefined)?.holderIdentity ?? '';
  };
  const p1 = await startProcess('process-1');
  const p2 = await startProcess('process-2');
  try {
    let leaderName = '';
    await until(
      'a process to hold the Lease',
      async () => {
        leaderName = (await holder()).split('_')[0] ?? '';
        return leaderName === 'process-1' || leaderName === 'process-2';
      },
      60_000,
    );
    const [leader, standby] = leaderName === 'process-1' ? [p1, p2] : [p2, p1];

    const third = await repo.commit(
      { 'app/third.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: third\ndata:\n  a: "3"\n' },
      'third',
    );
    await refresh();
    await waitForApp(
      cp,
      'guestbook',
      'the third revision synced by the leader process',
      (x) => lastRevision(x) === third && operationPhase(x) === 'Succeeded',
      60_000,
    );
    assert.match(leader.out, /leading: starting the controller/);
    assert.doesNotMatch(standby.out, /leading: starting the controller/);

    leader.child.kill('SIGKILL');
    await until('the standby to take the Lease', async () => (await holder()).startsWith(`${standby.name}_`), 60_000);
    const fourth = await repo.commit(
      { 'app/fourth.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fourth\ndata:\n  a: "4"\n' },
      'fourth',
    );
    await refresh();
    const app = await waitForApp(
      cp,
      'guestbook',
      'the fourth revision synced by the new leader',
      (x) => lastRevision(x) === fourth && operationPhase(x) === 'Succeeded',
      60_000,
    );
    const revisions = (app.status?.['history'] as { revision: string }[]).map((h) => h.revision);
    assert.equal(new Set(revisions).size, revisions.length, `each revision synced once: ${revisions.join(' ')}`);

    standby.child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => standby.child.once('exit', (c) => resolve(c)));
    assert.equal(code, 0, standby.out.slice(-2000));
    assert.equal(await holder(), '', 'the Lease was released on SIGTERM');
  } finally {
    for (const p of [p1, p2]) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await rm(p.cacheDir, { recursive: true, force: true });
    }
  }
});

async function refresh(): Promise<void> {
  await applyRaw(
    cp.admin,
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'guestbook', namespace: NS, annotations: { 'argocd.argoproj.io/refresh': 'normal' } },
    },
    { fieldManager: 'refresher' },
  );
}

function lastRevision(app: { status?: Record<string, unknown> }): string | undefined {
  return (app.status?.['history'] as { revision: string }[] | undefined)?.at(-1)?.revision;
}
