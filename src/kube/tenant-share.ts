// One destination's API server shared between tenants by what their requests cost it. The work
// queues and the renderer's slots hand out turns by the time each tenant's work takes
// (renderer/fair.ts), but once a turn is taken its requests run on the API server, and there a
// tenant whose objects are huge (a server-side apply of an 88,000-key ConfigMap takes seconds of
// the API server's CPU) slows every other tenant's small requests by as many times as it has such
// requests in flight: the API server shares its CPU between requests, not tenants.
//
// So, per destination, every request made as a ServiceAccount for an Application counts for that
// Application's tenant (its AppProject), and while another tenant is about a tenant may have in
// flight only as many requests as its recent requests' time fits in `inFlightMs`: a tenant whose
// requests take 10 ms may have 100 in flight, one whose requests take 2 s one at a time. The time
// a tenant's requests take is measured, not guessed: each request's time from sent to answered,
// kept as an estimate that rises at once to a slower request and halves with every 30 s without
// one (by time, not by count: cheap requests sent on purpose do not wash a slow one out), and
// never below the age of the oldest request the tenant still has in flight (a first request that
// runs long stops the rest before its time is known).
//
// - At least one request of every tenant is always in flight when it has any: nobody waits for
//   ever, and a tenant's waiting requests start as its own requests end, first come first served.
// - Alone, a tenant may have as many in flight as it likes: there is nobody to share with. A tenant
//   is about while it has requests in flight or waiting, and for `aboutMs` after its last one
//   (ten minutes by default, as for the renderer's slots).
// - Watches and the controller's own requests do not count: a watch is open for minutes by design,
//   and the controller's writes (status, events) are its own, not a tenant's. Nor do discovery and
//   OpenAPI fetches (kube/client.ts): one fetch serves every tenant that asks at once, and must not
//   wait in whichever tenant's share asked first.
//
// This is what Kubernetes' API Priority and Fairness does for seats, made by cost: APF shares the
// API server's concurrency between flows but counts a 5-second apply as one seat like a 5 ms one, and
// its flows are per user, so a tenant with many ServiceAccounts is many flows.

export interface TenantShareOptions {
  /** Milliseconds of API server time one tenant may have in flight while another is about; 0: no limit. */
  inFlightMs: number;
  /**
   * How long a tenant counts as about after its last request (default ten minutes, as for the
   * renderer's slots: the controller refreshes every Application at least that often, so a quiet
   * tenant keeps its room between its refreshes).
   */
  aboutMs?: number;
  /** Clock, for tests. */
  now?: () => number;
  /** A request that had to wait for its tenant's share started, after `ms`. */
  onWait?: (tenant: string, ms: number) => void;
}

interface Account {
  /** Start times of the requests in flight. */
  readonly inFlight: Set<{ at: number }>;
  /** Requests waiting for the tenant's share, in order; `start` is handed the request's entry in `inFlight`. */
  readonly waiting: Array<{ since: number; start: (run: { at: number }) => void }>;
  /** The slowest recent request's time. */
  readonly estimate: SlowestRecent;
  /** When the tenant last asked or ended a request. */
  seen: number;
}

/** The estimate halves with every this many ms without a slower one. */
const HALF_LIFE_MS = 30_000;

/**
 * The slowest recent time of a tenant's work, in ms (0 before any ended): it rises at once to a
 * slower one and halves with every 30 s without one (by time, not by count: cheap work done on
 * purpose does not wash a slow one out). The controller's work share keeps the same (work-share.ts).
 */
export class SlowestRecent {
  #ms = 0;
  #at = 0;

  /** The estimate at `now`. */
  at(now: number): number {
    if (this.#ms <= 0) return 0;
    return this.#ms * 2 ** (-Math.max(0, now - this.#at) / HALF_LIFE_MS);
  }

  /** Work that took `ms` ended at `now`: it is the estimate if it is the slower. */
  note(ms: number, now: number): void {
    if (ms < this.at(now)) return;
    this.#ms = ms;
    this.#at = now;
  }
}

/** How many at once fit in `inFlightMs` when each costs `costMs`: at least one, any number before a cost is known. */
export function fitIn(inFlightMs: number, costMs: number): number {
  return costMs <= 0 ? Infinity : Math.max(1, Math.floor(inFlightMs / costMs));
}

export class TenantShare {
  readonly #inFlightMs: number;
  readonly #aboutMs: number;
  readonly #now: () => number;
  readonly #onWait: TenantShareOptions['onWait'];
  readonly #accounts = new Map<string, Account>();
  #swept = 0;

  constructor(opts: TenantShareOptions) {
    this.#inFlightMs = opts.inFlightMs;
    this.#aboutMs = opts.aboutMs ?? 10 * 60_000;
    this.#now = opts.now ?? (() => performance.now());
    this.#onWait = opts.onWait;
  }

  /** Runs `send` in `tenant`'s share: at once, or when the tenant's own requests in flight allow. */
  async run<T>(tenant: string, send: () => Promise<T>): Promise<T> {
    if (this.#inFlightMs <= 0) return send();
    const account = this.#account(tenant);
    const now = this.#now();
    account.seen = now;
    let run: { at: number };
    if (account.waiting.length > 0 || account.inFlight.size >= this.allowed(tenant)) {
      run = await new Promise<{ at: number }>((resolve) => account.waiting.push({ since: now, start: resolve }));
    } else {
      run = { at: now };
      account.inFlight.add(run);
    }
    try {
      return await send();
    } finally {
      this.#end(tenant, account, run);
    }
  }

  /** How many requests `tenant` may have in flight now. */
  allowed(tenant: string): number {
    const account = this.#accounts.get(tenant);
    if (!account || !this.#othersAbout(tenant)) return Infinity;
    const now = this.#now();
    let cost = account.estimate.at(now);
    for (const r of account.inFlight) cost = Math.max(cost, now - r.at);
    return fitIn(this.#inFlightMs, cost);
  }

  /** Requests waiting for their tenant's share, per tenant that has any. */
  waiting(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [t, a] of this.#accounts) if (a.waiting.length > 0) out.set(t, a.waiting.length);
    return out;
  }

  #account(tenant: string): Account {
    let a = this.#accounts.get(tenant);
    if (!a) {
      a = { inFlight: new Set(), waiting: [], estimate: new SlowestRecent(), seen: this.#now() };
      this.#accounts.set(tenant, a);
    }
    return a;
  }

  #end(tenant: string, account: Account, run: { at: number }): void {
    const now = this.#now();
    account.inFlight.delete(run);
    account.seen = now;
    account.estimate.note(Math.max(0, now - run.at), now);
    // Its own requests start as its own end: one at least, more as its share allows.
    while (
      account.waiting.length > 0 &&
      (account.inFlight.size === 0 || account.inFlight.size < this.allowed(tenant))
    ) {
      const next = account.waiting.shift() as Account['waiting'][number];
      // In flight from now, so that this loop counts it before its request is sent.
      const started = { at: now };
      account.inFlight.add(started);
      next.start(started);
      try {
        this.#onWait?.(tenant, now - next.since);
      } catch {
        // What the metric is told does not decide whether a request runs.
      }
    }
    if (now - this.#swept > this.#aboutMs / 10) this.#forgetIdle(now);
  }

  #othersAbout(tenant: string): boolean {
    const since = this.#now() - this.#aboutMs;
    for (const [t, a] of this.#accounts) {
      if (t === tenant) continue;
      if (a.inFlight.size > 0 || a.waiting.length > 0 || a.seen >= since) return true;
    }
    return false;
  }

  /** Accounts of tenants long gone are dropped (their estimate with them): tenants come and go. */
  #forgetIdle(now: number): void {
    this.#swept = now;
    const since = now - this.#aboutMs;
    for (const [t, a] of this.#accounts) {
      if (a.inFlight.size === 0 && a.waiting.length === 0 && a.seen < since) this.#accounts.delete(t);
    }
  }
}
