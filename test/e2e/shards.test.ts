// Three `impersync run --shards 3` processes on one control plane share 200 Applications (one
// ConfigMap each): each replica authenticates as its own user, so the audit log says which replica
// made every write. Every Application's writes come from one replica; the replica holding shard 0
// is SIGKILLed while its Applications sync, and another takes its shard over within the lease
// duration (measured from the kill to the new owner's first write), resuming what it left Running;
// at the end every Application is Synced with its one sync in its history, and each ConfigMap was
// applied once (or, where the killed replica died between an apply and its record, once more by the
// new owner resuming the operation).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  applyRaw,
  getRaw,
  grantInstalledControllerRights,
  grantRole,
  listRaw,
  startControlPlane,
} from '../support/index.ts';
import type { AuditRecord, KubeObject, TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import { TestRepo } from '../support/git.ts';
import { mapLimit } from '../../src/sync/util.ts';
import { shardOf } from '../../src/controller/shards.ts';
import { deployer, IN_CLUSTER, NS, project, setSettings } from './controller-fixture.ts';

const APPS = 200;
const SHARDS = 3;
const DEST = 'shards';
const GROUP = 'impersync-controllers';
const USERS = [0, 1, 2].map((i) => `impersync-controller-r${i}`);
// Short for the test, with client-go's proportions: renew deadline < lease duration.
const LEASE_MS = 10_000;
const TIMINGS = ['--leader-election-lease-duration', '10s', '--leader-election-renew-deadline', '7s'];
const names = Array.from({ length: APPS }, (_, i) => `app-${String(i).padStart(3, '0')}`);

let cp: TestControlPlane;
let repo: TestRepo;
type Replica = { user: string; child: ChildProcess; out: string; cacheDir: string };
const replicas: Replica[] = [];

before(async () => {
  cp = await startControlPlane({ users: USERS.map((name) => ({ name, groups: [GROUP] })) });
  await grantInstalledControllerRights(cp.admin, NS, { to: { group: GROUP } });
  // Shard and member Leases: their names are not known in advance (members carry the Pod's identity).
  await grantRole(cp.admin, {
    name: 'impersync-controller-leases',
    namespace: NS,
    to: { group: GROUP },
    rules: [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'list', 'create', 'update', 'delete'],
      },
    ],
  });
  await deployer(cp, DEST, 'deployer');
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await applyRaw(
    cp.admin,
    project('sharded', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: DEST, defaultServiceAccount: 'deployer' }],
    }),
  );
  repo = await TestRepo.create();
  const files: Record<string, string> = {};
  for (const n of names)
    files[`${n}/cm.yaml`] = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${n}\ndata:\n  app: ${n}\n`;
  await repo.commit(files, `${APPS} applications`);
});

after(async () => {
  for (const r of replicas) {
    if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
    await rm(r.cacheDir, { recursive: true, force: true });
  }
  await repo?.remove();
  await cp?.stop();
});

async function startReplica(i: number): Promise<Replica> {
  const user = USERS[i] as string;
  const cacheDir = await mkdtemp(path.join(os.tmpdir(), `impersync-shard-${i}-`));
  const kubeconfig = await cp.kubeconfigFileFor({ user });
  const main = new URL('../../src/cli/main.ts', import.meta.url).pathname;
  const child = spawn(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      main,
      'run',
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      NS,
      '--shards',
      String(SHARDS),
      ...TIMINGS,
      '--leader-election-retry-period',
      '1s',
      '--health-port',
      '0',
      '--log-level',
      'info',
    ],
    {
      env: { ...process.env, POD_NAME: `replica-${i}`, IMPERSYNC_CACHE_DIR: cacheDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const r: Replica = { user, child, out: '', cacheDir };
  const keep = (d: Buffer) => {
    // The tail is enough to explain a failure.
    r.out = (r.out + d.toString()).slice(-200_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  replicas.push(r);
  return r;
}

async function holders(): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < SHARDS; i++) {
    const lease = await getRaw(cp.admin, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace: NS,
      name: `impersync-controller-shard-${i}`,
    });
    out.push(((lease?.['spec'] as { holderIdentity?: string } | undefined)?.holderIdentity ?? '').split('_')[0] ?? '');
  }
  return out;
}

type Status = {
  sync?: { status?: string };
  operationState?: { phase?: string; startedAt?: string };
  history?: unknown[];
};
const statusOf = (a: KubeObject) => (a['status'] as Status | undefined) ?? {};
const isDone = (a: KubeObject) =>
  statusOf(a).sync?.status === 'Synced' && statusOf(a).operationState?.phase === 'Succeeded';
const apps = () => listRaw(cp.admin, { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', namespace: NS });

test('three replicas share 200 Applications; one SIGKILLed mid-sync hands its shard over; nothing runs twice', async () => {
  for (let i = 0; i < 3; i++) await startReplica(i);
  // Each replica holds one shard before any Application exists (the start-up rebalancing is over).
  let held: string[] = [];
  await until(
    'each replica to hold one shard',
    async () => {
      held = await holders();
      return new Set(held.filter((h) => h !== '')).size === SHARDS;
    },
    120_000,
    () => `holders: ${held.join(', ')}\n${replicas.map((r) => r.out.slice(-3000)).join('\n---\n')}`,
  );
  const victimIndex = Number((held[0] ?? '').replace('replica-', ''));
  const victim = replicas[victimIndex] as Replica;
  const victimApps = new Set(names.filter((n) => shardOf(`${NS}/${n}`, SHARDS) === 0));
  assert.ok(victimApps.size > 20, `shard 0 has ${victimApps.size} Applications`);

  await mapLimit(names, 16, (name) =>
    applyRaw(
      cp.admin,
      {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Application',
        metadata: { name, namespace: NS },
        spec: {
          project: 'sharded',
          source: { repoURL: repo.url, targetRevision: 'HEAD', path: name },
          destination: { server: IN_CLUSTER, namespace: DEST },
          syncPolicy: { automated: {} },
        },
      },
      { fieldManager: 'test' },
    ),
  );

  // Mid-sync: some of shard 0's Applications done, others not yet.
  let doneInShard = 0;
  await until(
    "some of shard 0's Applications to sync",
    async () => {
      doneInShard = (await apps()).filter((a) => victimApps.has(a.metadata.name) && isDone(a)).length;
      return doneInShard >= 3;
    },
    600_000,
    () => victim.out.slice(-5000),
  );
  victim.child.kill('SIGKILL');
  const killedAt = Date.now();
  assert.ok(doneInShard < victimApps.size, 'the kill came while shard 0 was still syncing');

  const survivors = replicas.filter((r) => r !== victim);
  let left: string[] = [];
  await until(
    'every Application Synced and Succeeded',
    async () => {
      const list = await apps();
      left = names.filter((n) => !list.some((a) => a.metadata.name === n && isDone(a)));
      return left.length === 0;
    },
    1_200_000,
    () =>
      `${left.length} left, e.g. ${left.slice(0, 5).join(', ')}\n${survivors.map((r) => r.out.slice(-4000)).join('\n---\n')}`,
  );
  const final = await apps();
  const historyLengths = final.map((a) => statusOf(a).history?.length ?? 0);
  assert.deepEqual(
    final.filter((a) => (statusOf(a).history?.length ?? 0) !== 1).map((a) => a.metadata.name),
    [],
    'each Application has exactly one sync in its history (no operation ran twice)',
  );
  assert.equal(historyLengths.length, APPS);

  // The audit log: who wrote what.
  const userSet = new Set(USERS);
  const appOf = (r: AuditRecord): string | undefined => {
    if (r.resource === 'applications' && r.namespace === NS) return r.name;
    if (r.resource === 'configmaps' && r.namespace === DEST) return r.name;
    return undefined;
  };
  const writes = (await cp.readAudit()).filter(
    (r) =>
      userSet.has(r.user) &&
      ['create', 'update', 'patch', 'delete'].includes(r.verb) &&
      !r.dryRun &&
      r.code !== undefined &&
      r.code < 300 &&
      appOf(r) !== undefined,
  );
  const byApp = new Map<string, AuditRecord[]>();
  for (const r of writes) byApp.set(appOf(r) as string, [...(byApp.get(appOf(r) as string) ?? []), r]);
  const time = (r: AuditRecord) => Date.parse(r.time ?? '');

  // Outside shard 0: one replica wrote everything of an Application.
  const mixed = names.filter((n) => !victimApps.has(n) && new Set((byApp.get(n) ?? []).map((r) => r.user)).size !== 1);
  assert.deepEqual(mixed, [], 'every Application outside the killed shard was written by exactly one replica');
  // Shard 0: the victim up to its death, then one survivor; never the two interleaved.
  let newOwner: string | undefined;
  let firstNewWrite = Infinity;
  for (const n of victimApps) {
    const ws = (byApp.get(n) ?? []).slice().sort((a, b) => time(a) - time(b));
    const others = ws.filter((r) => r.user !== victim.user);
    for (const r of ws.filter((w) => w.user === victim.user))
      assert.ok(time(r) <= killedAt + 1000, `${n}: the killed replica wrote nothing after its death`);
    for (const r of others) {
      newOwner ??= r.user;
      assert.equal(r.user, newOwner, `${n}: one replica took shard 0 over`);
      firstNewWrite = Math.min(firstNewWrite, time(r));
    }
  }
  assert.ok(newOwner, 'a survivor wrote for shard 0');
  const handoverMs = firstNewWrite - killedAt;
  // When the new owner took shard 0's Lease (the acquireTime it wrote), beside its first write.
  const lease = await getRaw(cp.admin, {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    namespace: NS,
    name: 'impersync-controller-shard-0',
  });
  const takenMs = Date.parse((lease?.['spec'] as { acquireTime?: string } | undefined)?.acquireTime ?? '') - killedAt;
  // Applies per ConfigMap (server-side apply, not dry-run). Once each, except where the killed
  // replica's apply landed but it died before recording it in the operation's state: the new owner
  // resumes the operation from that state and applies the step again (as Argo CD does: the status
  // is the only record). Such a second apply must be the new owner's, after the kill, in shard 0.
  const applies = new Map<string, AuditRecord[]>();
  for (const r of writes)
    if (r.resource === 'configmaps' && r.verb === 'patch')
      applies.set(r.name ?? '', [...(applies.get(r.name ?? '') ?? []), r]);
  const twice = [...applies].filter(([, rs]) => rs.length > 1);
  const never = names.filter((n) => !applies.has(n));
  process.stdout.write(
    `# shards: ${APPS} Applications, shard 0 had ${victimApps.size} (${doneInShard} done at the kill); ` +
      `Lease taken ${takenMs} ms and first write ${handoverMs} ms after SIGKILL (lease duration ${LEASE_MS} ms); ` +
      `ConfigMaps applied again by the new owner after an unrecorded apply: ${twice.length}; never applied: ${never.length}; left behind: ${left.length}\n`,
  );
  assert.deepEqual(never, [], 'every ConfigMap was applied');
  for (const [name, rs] of twice) {
    const sorted = rs.slice().sort((a, b) => time(a) - time(b));
    const users = sorted.map((r) => r.user);
    assert.ok(
      victimApps.has(name),
      `${name} was applied ${rs.length} times outside the killed shard: ${users.join(', ')}`,
    );
    assert.deepEqual(users, [victim.user, newOwner], `${name}: once by the killed replica, once by the new owner`);
    assert.ok(time(sorted[1] as AuditRecord) >= killedAt, `${name}: the second apply came after the kill`);
  }
  // The new owner may only act once the victim's Lease has gone unrenewed for a lease duration; its
  // first write also waits for a refresh of its new Applications (render, dry-run) on a machine
  // this test loads with three controllers: the margin is two more lease durations.
  assert.ok(takenMs > 0 && takenMs < 2 * LEASE_MS, `the Lease was taken ${takenMs} ms after the kill`);
  assert.ok(handoverMs > 0 && handoverMs < 3 * LEASE_MS, `the first write came ${handoverMs} ms after the kill`);
});
