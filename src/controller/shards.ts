// Controller shards on Leases (issue 25, scale-out): the Applications are split into a fixed number
// of shards by a hash of their namespace/name, each shard is a coordination.k8s.io/v1 Lease
// (`<base>-shard-<i>`) held through leader.ts's election, and a replica acts on an Application only
// while it holds that Application's shard. Replicas find each other through a membership Lease each
// (`<base>-member-<identity>`, renewed as any Lease): with M live members a replica takes shards
// while it holds fewer than its share (floor(N / M), one more for the first N % M identities in
// sorted order), and gives back (stops acting, then releases) what it holds beyond that, so a replica that comes gets its share and one that goes leaves its shards to expire
// and be taken by the others.
//
// Why by Application and not by cluster (Argo CD's cluster Secret `shard`): impersync's work is per
// Application and per identity, not per cluster; most installs deploy to one cluster (the in-cluster
// one), where sharding by cluster gives one replica everything. Hashing namespace/name spreads the
// Applications evenly whatever the number of clusters, and needs nobody to assign shards.
//
// Never two replicas on one Application: leader.ts's rules (a holder stops acting once it has not
// renewed for renewDeadline, shorter than leaseDuration; another replica takes the Lease only after
// seeing it unchanged for leaseDuration on its own clock), and onLost settles only once the shard's
// work in flight has ended (manager.ts drop(), operation.ts abandon()). An operation the old owner
// left Running is resumed by the new one from its recorded state (operation-machine.ts).
import { createHash } from 'node:crypto';
import type { ControlClient } from '../kube/control.ts';
import { startLeaderElection } from './leader.ts';
import type { LeaderElection } from './leader.ts';

/** The shard of an Application key (namespace/name): the first 32 bits of its SHA-256, modulo n. */
export function shardOf(key: string, shards: number): number {
  if (shards <= 1) return 0;
  return createHash('sha256').update(key).digest().readUInt32BE(0) % shards;
}

/** A Lease name for a member identity: DNS-1123 (lowercase alphanumerics and '-'), at most 63 characters. */
export function memberLeaseName(base: string, identity: string): string {
  const clean = identity
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  const hash = createHash('sha256').update(identity).digest('hex').slice(0, 8);
  const head = `${base}-member-`;
  return `${head}${clean.slice(0, Math.max(0, 63 - head.length - 9))}-${hash}`.replace(/--+/g, '-');
}

/**
 * How many shards the member of this rank (its place among the live members' identities, sorted)
 * holds when the load is even: floor(shards / members), one more for the first shards % members.
 * The targets add up to the number of shards, so every shard has a taker and none two.
 */
export function fairShare(shards: number, members: number, rank = 0): number {
  const m = Math.max(1, members);
  return Math.floor(shards / m) + (rank < shards % m ? 1 : 0);
}

export type ShardOptions = {
  control: ControlClient;
  namespace: string;
  /** Lease name prefix (default impersync-controller): `<base>-shard-<i>`, `<base>-member-<id>`. */
  base?: string;
  shards: number;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** This replica now holds shard i: start acting on its Applications. */
  onGained: (shard: number) => void;
  /** This replica no longer holds shard i (lost, given back or stopping): stop acting on its Applications. */
  onLost: (shard: number) => Promise<void>;
  onError?: (err: Error) => void;
  /** Holders observed changing (logging). */
  onHolder?: (shard: number, holder: string) => void;
};

export type Shards = {
  /** Whether this replica acts on the Application with this key now. */
  owns(key: string): boolean;
  held(): number[];
  /** Live members last counted (this replica included). */
  members(): number;
  /** Stops acting on every shard, releases them and this replica's membership (or leaves them to expire). */
  stop(opts?: { release?: boolean }): Promise<void>;
};

type LeaseList = {
  items?: {
    metadata: { name: string; resourceVersion?: string };
    spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
  }[];
};

export function startShards(opts: ShardOptions): Shards {
  const base = opts.base ?? 'impersync-controller';
  const n = opts.shards;
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`shards: the number of shards must be a whole number ≥ 1 (got ${n})`);
  const leaseMs = opts.leaseDurationMs ?? 15_000;
  const timings = {
    leaseDurationMs: leaseMs,
    renewDeadlineMs: opts.renewDeadlineMs ?? 10_000,
    retryPeriodMs: opts.retryPeriodMs ?? 2_000,
  };
  const retryMs = timings.retryPeriodMs;
  const report = (err: unknown) => opts.onError?.(err instanceof Error ? err : new Error(String(err)));
  const now = () => performance.now();
  const held = new Set<number>();
  let live = 1;
  // This replica's share: all shards until the others are counted.
  let target = n;
  let stopping = false;
  const memberName = memberLeaseName(base, opts.identity);
  const member = startLeaderElection({
    control: opts.control,
    namespace: opts.namespace,
    name: memberName,
    identity: opts.identity,
    ...timings,
    onStartedLeading: () => {},
    onError: report,
  });

  const elections = new Map<number, LeaderElection>();
  const stand = (i: number) => {
    const election = startLeaderElection({
      control: opts.control,
      namespace: opts.namespace,
      name: `${base}-shard-${i}`,
      identity: opts.identity,
      ...timings,
      mayAcquire: () => !stopping && member.isLeader() && held.size < target,
      onStartedLeading: (signal) => {
        if (signal.aborted) return;
        held.add(i);
        // Owning ends the moment leadership does (the abort comes before onStoppedLeading).
        signal.addEventListener('abort', () => held.delete(i), { once: true });
        try {
          opts.onGained(i);
        } catch (err) {
          report(err);
        }
      },
      onStoppedLeading: async () => {
        held.delete(i);
        await opts.onLost(i);
      },
      onNewLeader: (h) => opts.onHolder?.(i, h),
      onError: report,
    });
    elections.set(i, election);
  };
  for (let i = 0; i < n; i++) stand(i);

  // Members: each lease's record and when (our clock) it last changed, as leader.ts judges expiry.
  const seen = new Map<string, { key: string; at: number; resourceVersion?: string }>();
  const prefix = `${base}-member-`;
  const path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(opts.namespace)}/leases`;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();

  const tick = async () => {
    const res = await opts.control.request<LeaseList>({ method: 'GET', path, timeoutMs: timings.renewDeadlineMs });
    if (!res.ok) throw new Error(`listing Leases in ${opts.namespace}: HTTP ${res.error.code} ${res.error.message}`);
    const t = now();
    const alive = new Set<string>([opts.identity]);
    const names = new Set<string>();
    for (const lease of res.value.items ?? []) {
      const name = lease.metadata.name;
      if (!name.startsWith(prefix)) continue;
      names.add(name);
      const s = lease.spec ?? {};
      const key = `${s.holderIdentity ?? ''}|${s.renewTime ?? ''}|${lease.metadata.resourceVersion ?? ''}`;
      const before = seen.get(name);
      const entry =
        before?.key === key
          ? before
          : {
              key,
              at: t,
              ...(lease.metadata.resourceVersion ? { resourceVersion: lease.metadata.resourceVersion } : {}),
            };
      seen.set(name, entry);
      const duration = (s.leaseDurationSeconds ?? Math.ceil(leaseMs / 1000)) * 1000;
      const fresh = t - entry.at < duration;
      if (name !== memberName && (s.holderIdentity ?? '') !== '' && fresh) alive.add(s.holderIdentity ?? '');
      // A member gone for ten lease durations (a crashed Pod's identity is never reused): removed,
      // only if unchanged since (the resourceVersion precondition).
      else if (t - entry.at > 10 * Math.max(duration, leaseMs) && entry.resourceVersion) {
        seen.delete(name);
        await opts.control.request({
          method: 'DELETE',
          path: `${path}/${encodeURIComponent(name)}`,
          body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: entry.resourceVersion } },
          timeoutMs: timings.renewDeadlineMs,
        });
      }
    }
    for (const name of seen.keys()) if (!names.has(name)) seen.delete(name);
    live = alive.size;
    target = fairShare(n, live, [...alive].sort().indexOf(opts.identity));
    // More than the fair share (a replica came): give one back per tick, the highest first. Its
    // work stops before its Lease is released, so the next holder never overlaps with it.
    const mine = [...held].sort((a, b) => b - a);
    if (!stopping && mine.length > target) {
      const i = mine[0] as number;
      const election = elections.get(i);
      elections.delete(i);
      await election?.stop({ release: true });
      if (!stopping) stand(i);
    }
  };
  const loop = () => {
    timer = setTimeout(() => {
      ticking = tick()
        .catch(report)
        .finally(() => {
          if (!stopping) loop();
        });
    }, retryMs);
  };
  loop();

  return {
    owns: (key) => held.has(shardOf(key, n)),
    held: () => [...held].sort((a, b) => a - b),
    members: () => live,
    async stop({ release = true } = {}) {
      stopping = true;
      if (timer) clearTimeout(timer);
      await ticking;
      await Promise.all([...elections.values()].map((e) => e.stop({ release })));
      await member.stop({ release });
      if (release) {
        // A member that leaves cleanly leaves no Lease behind.
        await opts.control
          .request({ method: 'DELETE', path: `${path}/${encodeURIComponent(memberName)}`, timeoutMs: 5000 })
          .catch(report);
      }
    },
  };
}
