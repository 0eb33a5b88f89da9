// The shard Leases alone (shards.ts, no controller), against a real API server: replicas that
// come take their share from the ones there, a replica that leaves cleanly hands its shards over at
// once, one that dies hands them over once its Leases expire, and no shard is ever held by two
// replicas at once (a shard's onGained never comes while another replica has not finished onLost).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { grantRole, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import { connectControlCluster } from '../../src/kube/control.ts';
import type { ControlClient } from '../../src/kube/control.ts';
import { fairShare, memberLeaseName, shardOf, startShards } from '../../src/controller/shards.ts';
import type { Shards } from '../../src/controller/shards.ts';
import { createNamespace } from '../support/index.ts';

const NS = 'argocd';
const N = 4;
let cp: TestControlPlane;
let control: ControlClient;

before(async () => {
  cp = await startControlPlane();
  await createNamespace(cp.admin, NS);
  await grantRole(cp.admin, {
    name: 'leases',
    namespace: NS,
    to: 'controller',
    rules: [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'list', 'create', 'update', 'delete'],
      },
    ],
  });
  control = await connectControlCluster(cp.controller);
});

after(async () => {
  await control?.close();
  await cp?.stop();
});

test('shardOf spreads keys evenly and is stable; member Lease names are valid; fair shares', () => {
  const counts = Array.from({ length: 3 }, () => 0);
  for (let i = 0; i < 3000; i++) counts[shardOf(`ns-${i % 7}/app-${i}`, 3)]!++;
  for (const c of counts) assert.ok(c > 850 && c < 1150, `uneven: ${counts.join(', ')}`);
  assert.equal(shardOf('argocd/a', 3), shardOf('argocd/a', 3));
  assert.equal(shardOf('argocd/a', 1), 0);
  const name = memberLeaseName('impersync-controller', 'Pod_Name.with/odd:chars_' + 'x'.repeat(80));
  assert.match(name, /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/);
  assert.ok(name.length <= 63, name);
  assert.notEqual(memberLeaseName('b', 'a_1'), memberLeaseName('b', 'a-1'));
  assert.deepEqual(
    [
      fairShare(4, 1),
      fairShare(4, 2, 0),
      fairShare(4, 2, 1),
      fairShare(4, 3, 0),
      fairShare(4, 3, 1),
      fairShare(4, 3, 2),
    ],
    [4, 2, 2, 2, 1, 1],
  );
});

test('replicas come and go: shares rebalance, a dead replica hands over after its lease, never two holders at once', async () => {
  // Who holds each shard as the callbacks say; a gain while another holds it is the failure.
  const holder = new Map<number, string>();
  const overlaps: string[] = [];
  const start = (id: string): Shards =>
    startShards({
      control,
      namespace: NS,
      shards: N,
      identity: id,
      leaseDurationMs: 6000,
      renewDeadlineMs: 4000,
      retryPeriodMs: 500,
      onGained: (i) => {
        const h = holder.get(i);
        if (h !== undefined) overlaps.push(`shard ${i} gained by ${id} while ${h} held it`);
        holder.set(i, id);
      },
      onLost: async (i) => {
        // Winding down takes a while: the next holder must wait for it.
        await new Promise((r) => setTimeout(r, 200));
        if (holder.get(i) === id) holder.delete(i);
      },
    });
  const all: Shards[] = [];
  try {
    await scenario(start, all, overlaps);
  } finally {
    // A failure above must not leave Lease loops running (the test file would never end).
    for (const s of all) await s.stop({ release: false }).catch(() => {});
  }
});

async function scenario(startOne: (id: string) => Shards, all: Shards[], overlaps: string[]): Promise<void> {
  const start = (id: string) => {
    const s = startOne(id);
    all.push(s);
    return s;
  };
  const a = start('a');
  await until('a alone to hold every shard', () => a.held().length === N, 30_000);
  const b = start('b');
  await until(
    'a and b to hold two each',
    () => a.held().length === 2 && b.held().length === 2,
    30_000,
    () => JSON.stringify({ a: a.held(), b: b.held(), members: [a.members(), b.members()] }),
  );
  const c = start('c');
  await until(
    'three replicas to hold every shard between them, none more than two',
    () =>
      a.held().length + b.held().length + c.held().length === N &&
      [a, b, c].every((s) => s.held().length >= 1 && s.held().length <= 2),
    30_000,
    () => JSON.stringify({ a: a.held(), b: b.held(), c: c.held() }),
  );
  // c leaves cleanly: its shards are released and taken without waiting for a lease to expire.
  const cHeld = c.held();
  const leftAt = performance.now();
  await c.stop();
  await until('a and b to take what c held', () => a.held().length === 2 && b.held().length === 2, 30_000);
  const cleanMs = performance.now() - leftAt;
  // b dies (stops without releasing, as after SIGKILL): a takes everything once b's Leases expire.
  const diedAt = performance.now();
  await b.stop({ release: false });
  await until('a to hold every shard', () => a.held().length === N, 30_000);
  const deadMs = performance.now() - diedAt;
  process.stdout.write(
    `# clean handover of ${cHeld.length} shard(s): ${Math.round(cleanMs)} ms; after a death: ${Math.round(deadMs)} ms (lease 6000 ms)\n`,
  );
  assert.ok(deadMs >= 4000, `a dead replica's shards are not taken before its Leases could expire (${deadMs} ms)`);
  await a.stop();
  assert.deepEqual(overlaps, []);
  // A clean stop leaves no member Lease behind.
  const leases = await control.request<{ items: { metadata: { name: string } }[] }>({
    method: 'GET',
    path: `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`,
  });
  assert.ok(leases.ok);
  const members = leases.value.items.map((l) => l.metadata.name).filter((n) => n.includes('-member-'));
  // b died without cleaning up: its member Lease stays until others see it stale for ten durations.
  assert.deepEqual(members, [memberLeaseName('impersync-controller', 'b')]);
}
