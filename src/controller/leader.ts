// Leader election on a coordination.k8s.io/v1 Lease, with the timings and rules of client-go's
// leaderelection package (which controller-runtime uses): only the leader reconciles, a standby
// takes over once the Lease has gone unrenewed for a whole lease duration, and a leader that shuts
// down cleanly releases the Lease so a standby takes over at once (issue 6, high availability).
//
// Why these rules hold: a leader gives up (onStoppedLeading) when it has not renewed for
// renewDeadline, which is shorter than leaseDuration; a standby only takes over after it has seen
// the same Lease record unchanged for leaseDuration, measured on its own monotonic clock (never by
// comparing its clock with the renewTime another machine wrote). So the old leader has stopped
// before the new one starts, unless clocks run at very different speeds.
// Every write carries the resourceVersion that was read: two candidates racing for a free Lease
// cannot both win, the loser gets 409 Conflict and tries again later.
//
// Wiring (impersync run --leader-elect [--leader-election-lease NAME], see runWhileLeading below):
//   const run = runWhileLeading({ kc, namespace, name: lease, identity: defaultIdentity(),
//     start: () => startController(...) });
//   on SIGTERM: `await run.stop()` stops the controller, then releases the Lease.
//   run.isLeader() tells whether this replica works (readiness, metrics, logs).
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfigLike } from '../kube/kubeconfig.ts';
import { connectControlCluster } from '../kube/control.ts';
import type { ControlClient } from '../kube/control.ts';
import type { KubeError } from '../kube/types.ts';

/**
 * A candidate identity unique per process: the Pod name (POD_NAME, from the downward API in the
 * install manifests) or the host name, plus a random suffix so that a restarted process with the
 * same name does not inherit a Lease it no longer serves (as client-go's hostname + "_" + uuid).
 */
export function defaultIdentity(env: Record<string, string | undefined> = process.env): string {
  return `${env['POD_NAME'] || hostname()}_${randomBytes(4).toString('hex')}`;
}

export type LeaderElectionOptions = {
  /** The control cluster: its client, or a KubeConfig to connect with (closed when the election stops). */
  control?: ControlClient;
  kc?: KubeConfigLike;
  /** Where the Lease lives (the controller's namespace) and its name. */
  namespace: string;
  name: string;
  /** This candidate's identity, unique among replicas (pod name, or hostname + random suffix). */
  identity: string;
  /** Defaults as controller-runtime: 15 s, 10 s, 2 s. */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /**
   * Called when this candidate becomes leader. `signal` aborts when leadership is lost or the
   * election is stopped: stop reconciling then, and abandon operations in flight.
   */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /**
   * Called when leadership ends (lost, or given up by stop()). Not called if never leading. On
   * stop(), the Lease is released only after the returned promise settles, so that the next
   * leader never overlaps with work this one is still winding down.
   */
  onStoppedLeading?: (reason: 'lost' | 'stopped') => void | Promise<void>;
  /** Called when the observed holder changes (including to this candidate, and to "" on release). */
  onNewLeader?: (identity: string) => void;
  /** Failures reaching the API server, for logging. Not fatal: the loops retry. */
  onError?: (err: Error) => void;
  /** After losing leadership, stand as candidate again (default) or end the election. */
  rejoinAfterLoss?: boolean;
  /**
   * Asked before each attempt to take the Lease while not holding it (never before a renewal):
   * false watches the Lease without taking it, free or expired (shards.ts: a replica takes a
   * shard only while it holds fewer than its fair share). Default: always.
   */
  mayAcquire?: () => boolean;
};

export type LeaderElection = {
  isLeader(): boolean;
  /** The holder last observed in the Lease ("" when free or unknown). */
  leader(): string;
  /**
   * Ends the election. With release (the default), a leader first stops leading and then
   * empties the Lease (holderIdentity "", leaseDurationSeconds 1) so a standby takes over at once;
   * without it, the Lease is left to expire, as after a crash. Never rejects: a failed release
   * goes to onError.
   */
  stop(opts?: { release?: boolean }): Promise<void>;
};

type LeaseSpec = {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
};

type Lease = {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string; [k: string]: unknown };
  spec?: LeaseSpec;
};

/** MicroTime as the API server writes it: RFC 3339 with exactly six fractional digits. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Validates the timing rules client-go enforces; returns the error message or undefined. */
export function checkTimings(leaseMs: number, renewMs: number, retryMs: number): string | undefined {
  if (!(retryMs > 0)) return `leader election: retry period must be greater than zero (got ${retryMs} ms)`;
  if (!(renewMs > retryMs * 1.2))
    return `leader election: renew deadline (${renewMs} ms) must be greater than 1.2 × retry period (${retryMs} ms)`;
  if (!(leaseMs > renewMs))
    return `leader election: lease duration (${leaseMs} ms) must be greater than renew deadline (${renewMs} ms)`;
  return undefined;
}

export function startLeaderElection(opts: LeaderElectionOptions): LeaderElection {
  const leaseMs = opts.leaseDurationMs ?? 15_000;
  const renewMs = opts.renewDeadlineMs ?? 10_000;
  const retryMs = opts.retryPeriodMs ?? 2_000;
  const bad = checkTimings(leaseMs, renewMs, retryMs);
  if (bad) throw new Error(bad);
  if (!opts.identity) throw new Error('leader election: identity must not be empty');
  const kc = opts.kc;
  if (!opts.control && !kc) throw new Error('leader election: give control or kc');
  // Connecting reads the kubeconfig's credential (an exec plugin may fail): tried again on the next attempt.
  let connecting: Promise<ControlClient> | undefined = opts.control ? Promise.resolve(opts.control) : undefined;
  const connection = (): Promise<ControlClient> =>
    (connecting ??= connectControlCluster(kc as KubeConfigLike).catch((err: unknown) => {
      connecting = undefined;
      throw err;
    }));
  const path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(opts.namespace)}/leases`;
  const leasePath = `${path}/${encodeURIComponent(opts.name)}`;
  // The Lease's duration field is whole seconds; a sub-second test duration rounds up to 1.
  const leaseSeconds = Math.max(1, Math.ceil(leaseMs / 1000));

  let stopped = false;
  let leading: AbortController | undefined;
  let lastRenew = 0;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  let running: Promise<void> = Promise.resolve();
  // What we last saw in the Lease, and when (our monotonic clock) it last changed.
  let observed: { lease: Lease; key: string } | undefined;
  let observedAt = 0;
  let holder = '';

  const leaseError = (what: string, error: KubeError) =>
    new Error(`${what} Lease ${opts.namespace}/${opts.name}: HTTP ${error.code} ${error.message}`);
  const now = () => performance.now();
  const report = (err: unknown) => opts.onError?.(err instanceof Error ? err : new Error(String(err)));

  const observe = (lease: Lease) => {
    const s = lease.spec ?? {};
    const key = `${s.holderIdentity ?? ''}|${s.renewTime ?? ''}|${s.leaseDurationSeconds ?? ''}|${lease.metadata.resourceVersion ?? ''}`;
    if (observed?.key !== key) observedAt = now();
    observed = { lease, key };
    const h = s.holderIdentity ?? '';
    if (h !== holder) {
      holder = h;
      try {
        opts.onNewLeader?.(h);
      } catch (err) {
        report(err);
      }
    }
  };

  /** One attempt to create, take or renew the Lease; true when this candidate holds it after. */
  const tryAcquireOrRenew = async (): Promise<boolean> => {
    const time = microTime(new Date());
    const timeoutMs = renewMs;
    const client = await connection();
    const got = await client.request<Lease>({ method: 'GET', path: leasePath, timeoutMs });
    const may = () => opts.mayAcquire?.() !== false;
    if (!got.ok && got.error.code === 404) {
      if (!may()) return false;
      const lease: Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: opts.name, namespace: opts.namespace },
        spec: {
          holderIdentity: opts.identity,
          leaseDurationSeconds: leaseSeconds,
          acquireTime: time,
          renewTime: time,
          leaseTransitions: 0,
        },
      };
      const created = await client.request<Lease>({ method: 'POST', path, body: lease, timeoutMs });
      if (!created.ok && created.error.code === 409) return false; // another candidate created it first
      if (!created.ok) throw leaseError('creating', created.error);
      observe(created.value);
      return true;
    }
    if (!got.ok) throw leaseError('reading', got.error);
    const current = got.value;
    observe(current);
    const spec = current.spec ?? {};
    const heldBy = spec.holderIdentity ?? '';
    const amHolder = heldBy === opts.identity;
    const durationMs = (spec.leaseDurationSeconds ?? leaseSeconds) * 1000;
    // Held by someone else and seen renewed within its duration: not ours to take.
    if (heldBy !== '' && !amHolder && observedAt + durationMs > now()) return false;
    if (!amHolder && !may()) return false;
    const next: Lease = {
      ...current,
      spec: {
        ...spec,
        holderIdentity: opts.identity,
        leaseDurationSeconds: leaseSeconds,
        renewTime: time,
        acquireTime: amHolder ? (spec.acquireTime ?? time) : time,
        leaseTransitions: amHolder ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    // resourceVersion is in next.metadata: the update fails with 409 if the Lease changed since.
    const put = await client.request<Lease>({ method: 'PUT', path: leasePath, body: next, timeoutMs });
    if (!put.ok && put.error.code === 409) return false;
    if (!put.ok) throw leaseError('updating', put.error);
    observe(put.value);
    return true;
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
    });
  // client-go waits retryPeriod × (1 + up to 0.2) between candidate attempts, so candidates spread out.
  const jittered = () => retryMs * (1 + Math.random() * 0.2);

  const stopLeading = async (reason: 'lost' | 'stopped'): Promise<void> => {
    const ctl = leading;
    if (!ctl) return;
    leading = undefined;
    ctl.abort(new Error(reason === 'lost' ? 'leader election lost' : 'leader election stopped'));
    try {
      await opts.onStoppedLeading?.(reason);
    } catch (err) {
      report(err);
    }
  };

  const attempt = async (): Promise<boolean> => {
    try {
      return await tryAcquireOrRenew();
    } catch (err) {
      report(err);
      return false;
    }
  };

  const loop = async () => {
    while (!stopped) {
      // Renewal time counts from when the attempt began (conservative: the request may be slow).
      const began = now();
      if (!leading) {
        if (await attempt()) {
          if (stopped) break;
          lastRenew = began;
          leading = new AbortController();
          const signal = leading.signal;
          Promise.resolve()
            .then(() => opts.onStartedLeading(signal))
            .catch(report);
          await sleep(retryMs);
        } else {
          await sleep(jittered());
        }
        continue;
      }
      if (await attempt()) {
        lastRenew = began;
      } else if (!stopped && now() - lastRenew >= renewMs) {
        // Awaited: this process stands as candidate again only once its old work has stopped, so
        // that winning the Lease back (still recorded as ours) never runs two controllers at once.
        await stopLeading('lost');
        if (opts.rejoinAfterLoss === false) {
          stopped = true;
          break;
        }
      }
      await sleep(retryMs);
    }
  };
  running = loop();

  const release = async () => {
    const lease = observed?.lease;
    if (!lease || (lease.spec?.holderIdentity ?? '') !== opts.identity) return;
    const time = microTime(new Date());
    const body: Lease = {
      ...lease,
      spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: time, renewTime: time },
    };
    // With the resourceVersion we last wrote: if someone else took the Lease since, leave it alone.
    const res = await (await connection()).request<Lease>({ method: 'PUT', path: leasePath, body, timeoutMs: renewMs });
    if (!res.ok && res.error.code === 409) return;
    if (!res.ok) throw leaseError('releasing', res.error);
    observe(res.value);
  };

  return {
    isLeader: () => leading !== undefined,
    leader: () => holder,
    async stop({ release: doRelease = true } = {}) {
      if (stopped && !leading) {
        await running;
        return;
      }
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await running;
      await stopLeading('stopped');
      // release() checks that we still hold the Lease (it may have been won just as stop began).
      // A failed release is reported, not thrown: the Lease then expires as after a crash.
      if (doRelease) await release().catch(report);
      // A connection this election made is its to close.
      if (!opts.control && connecting) await (await connecting.catch(() => undefined))?.close();
    },
  };
}

export type LeaderRunOptions = Omit<LeaderElectionOptions, 'onStartedLeading' | 'onStoppedLeading'> & {
  /** Starts the work (the controller) when this candidate leads; `signal` aborts when it stops leading. */
  start: (signal: AbortSignal) => Promise<{ stop(): Promise<void> }>;
  /** After the work was stopped because leadership ended (logging, metrics). */
  onStopped?: (reason: 'lost' | 'stopped') => void;
};

/**
 * Runs `start` only while leading: started when leadership is won, stopped when it is lost or when
 * stop() is called; on stop() the Lease is released once the work has stopped. This is what
 * `impersync run --leader-elect` needs: `const run = runWhileLeading({ kc, namespace, name,
 * identity: defaultIdentity(), start: () => startController(...) })`, then on SIGTERM
 * `await run.stop()`.
 */
export function runWhileLeading(opts: LeaderRunOptions): LeaderElection {
  const { start, onStopped, ...rest } = opts;
  let running: Promise<{ stop(): Promise<void> }> | undefined;
  return startLeaderElection({
    ...rest,
    onStartedLeading: async (signal) => {
      running = start(signal);
      await running;
    },
    onStoppedLeading: async (reason) => {
      const work = running;
      running = undefined;
      try {
        if (work) await (await work).stop();
      } finally {
        onStopped?.(reason);
      }
    },
  });
}
