// Leader election on a real kube-apiserver: exactly one leader among candidates, takeover after a
// crash only once the Lease has expired, takeover at once after a release, and a leader that can
// no longer renew stops leading. The timings are seconds, not the minutes of an install, so the
// tests stay quick; the rules are the same.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startControlPlane, createNamespace, getRaw, grantRole, deleteRaw } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import {
  startLeaderElection,
  checkTimings,
  microTime,
  defaultIdentity,
  runWhileLeading,
} from '../../src/controller/leader.ts';
import type { LeaderElection, LeaderElectionOptions } from '../../src/controller/leader.ts';

let cp: TestControlPlane;
const ns = 'argocd';

before(async () => {
  cp = await startControlPlane();
  await createNamespace(cp.admin, ns);
});

after(async () => {
  await cp?.stop();
});

type Lease = {
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
};

async function lease(name: string): Promise<Lease> {
  const l = await getRaw(cp.admin, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: ns, name });
  assert.ok(l, `Lease ${ns}/${name} exists`);
  return l as unknown as Lease;
}

// Long enough that a loaded machine does not make a leader miss its renewals: a test process
// stalled for a few seconds, or an API server as slow to answer (each request may take up to the
// renew deadline), must not cost the leader its Lease where a test asserts it kept it.
const TIMINGS = { leaseDurationMs: 10_000, renewDeadlineMs: 8000, retryPeriodMs: 500 };

/** A candidate that records its leadership periods, with TIMINGS unless overridden. */
function candidate(name: string, identity: string, extra: Partial<LeaderElectionOptions> = {}) {
  const events: string[] = [];
  let signal: AbortSignal | undefined;
  const election: LeaderElection = startLeaderElection({
    kc: cp.admin,
    namespace: ns,
    name,
    identity,
    ...TIMINGS,
    onStartedLeading: (s) => {
      signal = s;
      events.push('started');
    },
    onStoppedLeading: (reason) => {
      events.push(`stopped:${reason}`);
    },
    ...extra,
  });
  return { identity, election, events, signal: () => signal };
}

test('the timings are checked as client-go checks them, and times are written as MicroTime', () => {
  assert.equal(checkTimings(15_000, 10_000, 2_000), undefined);
  assert.match(
    checkTimings(10_000, 10_000, 2_000) ?? '',
    /lease duration \(10000 ms\) must be greater than renew deadline/,
  );
  assert.match(
    checkTimings(15_000, 2_000, 2_000) ?? '',
    /renew deadline \(2000 ms\) must be greater than 1.2 × retry period/,
  );
  assert.match(checkTimings(15_000, 10_000, 0) ?? '', /retry period must be greater than zero/);
  assert.throws(
    () =>
      startLeaderElection({
        kc: cp.admin,
        namespace: ns,
        name: 'x',
        identity: 'a',
        leaseDurationMs: 1000,
        renewDeadlineMs: 2000,
        retryPeriodMs: 200,
        onStartedLeading: () => {},
      }),
    /lease duration/,
  );
  assert.equal(microTime(new Date('2026-11-29T10:46:12.123Z')), '2026-11-29T10:46:12.123000Z');
  assert.match(
    defaultIdentity({ POD_NAME: 'impersync-controller-7d9f-abcde' }),
    /^impersync-controller-7d9f-abcde_[0-9a-f]{8}$/,
  );
  assert.notEqual(defaultIdentity({ POD_NAME: 'p' }), defaultIdentity({ POD_NAME: 'p' }));
});

test('of three candidates racing for a new Lease exactly one leads, and keeps leading', async () => {
  const cs = ['a', 'b', 'c'].map((id) => candidate('race', id));
  try {
    await until('a leader', () => cs.some((c) => c.election.isLeader()), 10_000);
    // Over many renewals, never two leaders at once and always the same one.
    const first = cs.find((c) => c.election.isLeader());
    for (let i = 0; i < 40; i++) {
      const leaders = cs.filter((c) => c.election.isLeader());
      assert.deepEqual(
        leaders.map((c) => c.identity),
        [first?.identity],
      );
      await new Promise((r) => setTimeout(r, 50));
    }
    const l = await lease('race');
    assert.equal(l.spec.holderIdentity, first?.identity);
    assert.equal(l.spec.leaseDurationSeconds, 10);
    assert.equal(l.spec.leaseTransitions, 0);
    for (const c of cs) assert.equal(c.election.leader(), first?.identity, `${c.identity} sees the leader`);
  } finally {
    await Promise.all(cs.map((c) => c.election.stop()));
  }
});

test('a leader that dies without releasing is replaced only after the lease duration', async () => {
  const a = candidate('crash', 'a');
  await until('a leads', () => a.election.isLeader(), 10_000);
  const b = candidate('crash', 'b');
  try {
    await until('b sees a', () => b.election.leader() === 'a', 10_000);
    await a.election.stop({ release: false }); // as a crash: the Lease is left held
    const held = await lease('crash');
    assert.equal(held.spec.holderIdentity, 'a');
    // Once the lease duration has passed: a generous wait beyond it.
    await until('b takes over', () => b.election.isLeader(), 30_000);
    const taken = await lease('crash');
    assert.equal(taken.spec.holderIdentity, 'b');
    assert.equal(taken.spec.leaseTransitions, 1);
    // Safety, read from the Lease itself: b acquired no earlier than a whole lease duration after
    // a's last renewal (one machine, one clock; b waited on its own monotonic clock).
    const gap = Date.parse(taken.spec.acquireTime ?? '') - Date.parse(held.spec.renewTime ?? '');
    assert.ok(gap >= TIMINGS.leaseDurationMs - 50, `b acquired ${gap} ms after a's last renewal`);
    assert.deepEqual(a.events, ['started', 'stopped:stopped']);
  } finally {
    await b.election.stop();
  }
});

test('a leader that releases on shutdown hands over at once, long before the Lease would expire', async () => {
  // A 60 s lease: the standby can only win within the test's 10 s wait through the release.
  const slow = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 200 };
  const a = candidate('handover', 'a', slow);
  await until('a leads', () => a.election.isLeader(), 10_000);
  const b = candidate('handover', 'b', slow);
  try {
    await until('b sees a', () => b.election.leader() === 'a', 10_000);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(b.election.isLeader(), false);
    await a.election.stop();
    assert.equal(a.signal()?.aborted, true, "a's reconcile signal is aborted before the release");
    assert.equal(a.election.isLeader(), false);
    await until('b takes over', () => b.election.isLeader(), 10_000);
    const l = await lease('handover');
    assert.equal(l.spec.holderIdentity, 'b');
    assert.equal(l.spec.leaseDurationSeconds, 60);
  } finally {
    await b.election.stop();
  }
  const released = await lease('handover');
  assert.equal(released.spec.holderIdentity, '');
  assert.equal(released.spec.leaseDurationSeconds, 1);
});

test('a leader that can no longer renew stops leading after the renew deadline; its signal aborts', async () => {
  // The controller identity, with only the Lease rights the strict RBAC grants.
  await grantRole(cp.admin, {
    name: 'leader-test',
    namespace: ns,
    to: 'controller',
    rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }],
  });
  const errors: string[] = [];
  const a = candidate('lost', 'a', { kc: cp.controller, onError: (e) => errors.push(e.message) });
  await until('a leads', () => a.election.isLeader(), 10_000);
  const b = candidate('lost', 'b');
  try {
    await deleteRaw(cp.admin, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      namespace: ns,
      name: 'leader-test',
    });
    // After the renew deadline, then after the lease duration: generous waits beyond both.
    await until('a stops leading', () => !a.election.isLeader(), 30_000);
    assert.deepEqual(a.events, ['started', 'stopped:lost']);
    assert.equal(a.signal()?.aborted, true);
    assert.match(errors.join('\n'), /HTTP 403/);
    await until('b takes over', () => b.election.isLeader(), 30_000);
  } finally {
    await a.election.stop();
    await b.election.stop();
  }
});

test('two processes: SIGKILL the leader and the other takes over; SIGTERM releases the Lease', async () => {
  const { spawn } = await import('node:child_process');
  const kubeconfig = await cp.kubeconfigFileFor('admin');
  const leader = new URL('../../src/controller/leader.ts', import.meta.url).href;
  const script = `
    import { KubeConfig } from '@kubernetes/client-node';
    import { startLeaderElection } from ${JSON.stringify(leader)};
    const kc = new KubeConfig();
    kc.loadFromFile(process.env.KC);
    const election = startLeaderElection({
      kc, namespace: 'argocd', name: 'processes', identity: process.env.ID,
      leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 300,
      onStartedLeading: () => console.log('LEADING'),
      onStoppedLeading: (reason) => console.log('STOPPED ' + reason),
    });
    process.once('SIGTERM', async () => { await election.stop(); console.log('RELEASED'); process.exit(0); });
  `;
  const start = (id: string) => {
    const child = spawn(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
      {
        cwd: new URL('../../', import.meta.url).pathname,
        env: { ...process.env, KC: kubeconfig, ID: id },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const out = { text: '', child };
    child.stdout.on('data', (d: Buffer) => {
      out.text += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out.text += d.toString();
    });
    return out;
  };
  const p1 = start('process-1');
  const p2 = start('process-2');
  try {
    // Generous: two Node processes loading client-node on a busy machine.
    await until('a leading process', () => p1.text.includes('LEADING') || p2.text.includes('LEADING'), 60_000);
    const [first, second] = p1.text.includes('LEADING') ? [p1, p2] : [p2, p1];
    assert.equal(second.text.includes('LEADING'), false, 'only one process leads');
    first.child.kill('SIGKILL');
    await until('the other process to lead', () => second.text.includes('LEADING'), 30_000);
    const l = await lease('processes');
    assert.equal(l.spec.holderIdentity, first === p1 ? 'process-2' : 'process-1');
    second.child.kill('SIGTERM');
    await until('a release', () => second.text.includes('RELEASED'), 30_000);
    assert.match(second.text, /LEADING\nSTOPPED stopped\nRELEASED/);
    const released = await lease('processes');
    assert.equal(released.spec.holderIdentity, '');
    assert.equal(released.spec.leaseDurationSeconds, 1);
  } finally {
    for (const p of [p1, p2]) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  }
});

test('runWhileLeading: the work starts on leading, and on stop() the Lease is released only after the work stopped', async () => {
  const seen: string[] = [];
  const run = runWhileLeading({
    kc: cp.admin,
    namespace: ns,
    name: 'work',
    identity: 'worker',
    ...TIMINGS,
    start: async (signal) => {
      seen.push('start');
      return {
        stop: async () => {
          // Still the holder while the work winds down.
          seen.push(`stop: aborted=${signal.aborted} holder=${(await lease('work')).spec.holderIdentity}`);
          await new Promise((r) => setTimeout(r, 300));
        },
      };
    },
    onStopped: (reason) => seen.push(`stopped: ${reason}`),
  });
  await until('the work to start', () => seen.includes('start'), 10_000);
  assert.equal(run.isLeader(), true);
  await run.stop();
  assert.deepEqual(seen, ['start', 'stop: aborted=true holder=worker', 'stopped: stopped']);
  assert.equal((await lease('work')).spec.holderIdentity, '');
});
