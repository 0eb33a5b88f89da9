// Kubernetes Events (core/v1) on Applications: sync start and end, identity decisions (fallback,
// deny), deletion. A repeat of the same (object, type, reason, message) bumps the count of the
// Event already written instead of creating another, as client-go's recorder does.
import { randomBytes } from 'node:crypto';
import type { EventReason } from '../api/index.ts';
import type { ControlClient } from '../kube/control.ts';

export type EventType = 'Normal' | 'Warning';

export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid?: string;
  resourceVersion?: string;
}

export interface RecordedEvent {
  object: InvolvedObject;
  type: EventType;
  reason: EventReason;
  message: string;
}

export interface EventSink {
  record(object: InvolvedObject, type: EventType, reason: EventReason, message: string): Promise<void>;
}

const COMPONENT = 'impersync-application-controller';
/** Kubernetes rejects Event messages over 1 KiB... in practice keep them readable. */
const MAX_MESSAGE = 1024;

export function involvedApplication(app: {
  apiVersion?: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
}): InvolvedObject {
  return {
    apiVersion: app.apiVersion ?? 'argoproj.io/v1alpha1',
    kind: 'Application',
    name: app.metadata.name,
    namespace: app.metadata.namespace ?? '',
    ...(app.metadata.uid ? { uid: app.metadata.uid } : {}),
    ...(app.metadata.resourceVersion ? { resourceVersion: app.metadata.resourceVersion } : {}),
  };
}

export class EventRecorder implements EventSink {
  private readonly control: ControlClient;
  private readonly seen = new Map<string, { name: string; count: number }>();
  private readonly host: string;
  onError: ((err: Error) => void) | undefined;

  constructor(control: ControlClient, host = 'impersync') {
    this.control = control;
    this.host = host;
  }

  /**
   * Never throws: an event that cannot be written is reported through onError and dropped. `at` is
   * when it happened (its first and last timestamps), now unless given.
   */
  async record(
    object: InvolvedObject,
    type: EventType,
    reason: EventReason,
    message: string,
    at = new Date(),
  ): Promise<void> {
    try {
      await this.write(
        object,
        type,
        reason,
        message.length > MAX_MESSAGE ? message.slice(0, MAX_MESSAGE - 3) + '...' : message,
        at.toISOString(),
      );
    } catch (err) {
      this.onError?.(err as Error);
    }
  }

  private async write(
    object: InvolvedObject,
    type: EventType,
    reason: EventReason,
    message: string,
    now: string,
  ): Promise<void> {
    const ns = object.namespace || 'default';
    const key = [object.namespace, object.name, object.uid ?? '', type, reason, message].join('\u0000');
    const prior = this.seen.get(key);
    if (prior) {
      const count = prior.count + 1;
      const res = await this.control.request({
        method: 'PATCH',
        path: `/api/v1/namespaces/${ns}/events/${prior.name}`,
        body: { count, lastTimestamp: now },
        contentType: 'application/merge-patch+json',
      });
      if (res.ok) {
        prior.count = count;
        return;
      }
      // The Event expired (TTL) or was deleted: write a new one.
      this.seen.delete(key);
    }
    const name = `${object.name}.${Date.now().toString(16)}${randomBytes(3).toString('hex')}`;
    const created = await this.control.request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns}/events`,
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace: ns },
        involvedObject: object,
        type,
        reason,
        message,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: COMPONENT, host: this.host },
        reportingComponent: COMPONENT,
        reportingInstance: this.host,
      },
    });
    if (!created.ok)
      throw new Error(`recording Event ${reason} on ${object.namespace}/${object.name}: ${created.error.message}`);
    this.seen.set(key, { name, count: 1 });
    if (this.seen.size > 5000) this.seen.delete(this.seen.keys().next().value as string);
  }
}

/** Where BackgroundEvents writes: an EventRecorder, or a test's sink. */
export interface TimedEventSink {
  record(object: InvolvedObject, type: EventType, reason: EventReason, message: string, at: Date): Promise<void>;
}

interface QueuedEvent {
  object: InvolvedObject;
  type: EventType;
  reason: EventReason;
  message: string;
  at: Date;
}

export interface BackgroundEventsOptions {
  /** Events written at once, across Applications (default 4). */
  inFlight?: number;
  /** Events waiting to be written, across Applications, past which new ones are dropped (default 5,000). */
  maxQueued?: number;
  /** Called for each event dropped because the queue was full. */
  onDrop?: (event: { object: InvolvedObject; reason: EventReason }) => void;
  /** Called with `pending` each time it changes. */
  onPending?: (pending: number) => void;
}

/**
 * Events written off the workers' path. record() queues the event and returns at once; a few
 * writers send the queue, one event at a time per involved object, in the order recorded, so each
 * Application's events keep their order (and their timestamps, taken at record()) while a burst of
 * syncs neither waits for its Events nor has them compete with its applies at the API server. As
 * client-go's event broadcaster does when its queue is full, an event past `maxQueued` is dropped
 * (and counted through onDrop). flush() is for stop(): it waits for the queue, up to a deadline.
 */
export class BackgroundEvents implements EventSink {
  readonly #sink: TimedEventSink;
  readonly #inFlight: number;
  readonly #maxQueued: number;
  readonly #onDrop: BackgroundEventsOptions['onDrop'];
  readonly #onPending: BackgroundEventsOptions['onPending'];
  /** Each involved object's events not yet started, oldest first. */
  readonly #queues = new Map<string, QueuedEvent[]>();
  /** Objects with queued events and none being written, in the order they became ready. */
  readonly #ready: string[] = [];
  #queued = 0;
  #writing = 0;
  #idle: Array<() => void> = [];

  constructor(sink: TimedEventSink, opts: BackgroundEventsOptions = {}) {
    this.#sink = sink;
    this.#inFlight = Math.max(1, opts.inFlight ?? 4);
    this.#maxQueued = Math.max(1, opts.maxQueued ?? 5000);
    this.#onDrop = opts.onDrop;
    this.#onPending = opts.onPending;
  }

  /** Events queued and being written now. */
  get pending(): number {
    return this.#queued + this.#writing;
  }

  record(object: InvolvedObject, type: EventType, reason: EventReason, message: string): Promise<void> {
    if (this.#queued >= this.#maxQueued) {
      this.#onDrop?.({ object, reason });
      return Promise.resolve();
    }
    const key = `${object.namespace}\u0000${object.kind}\u0000${object.name}`;
    let queue = this.#queues.get(key);
    if (!queue) {
      queue = [];
      this.#queues.set(key, queue);
      this.#ready.push(key);
    }
    queue.push({ object, type, reason, message, at: new Date() });
    this.#queued++;
    this.#pump();
    this.#onPending?.(this.pending);
    return Promise.resolve();
  }

  /** Resolves once every event queued is written, or after `timeoutMs`: true when the queue emptied. */
  async flush(timeoutMs: number): Promise<boolean> {
    if (this.pending === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const emptied = new Promise<boolean>((resolve) => this.#idle.push(() => resolve(true)));
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([emptied, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  #pump(): void {
    while (this.#writing < this.#inFlight && this.#ready.length > 0) {
      const key = this.#ready.shift() as string;
      const queue = this.#queues.get(key) as QueuedEvent[];
      const e = queue.shift() as QueuedEvent;
      this.#queued--;
      this.#writing++;
      // The sink never throws (EventRecorder reports its failures itself); a test's might.
      void this.#sink
        .record(e.object, e.type, e.reason, e.message, e.at)
        .catch(() => undefined)
        .finally(() => {
          this.#writing--;
          if (queue.length > 0) this.#ready.push(key);
          else this.#queues.delete(key);
          this.#pump();
          this.#onPending?.(this.pending);
          if (this.pending === 0) for (const done of this.#idle.splice(0)) done();
        });
    }
  }
}

/** Collects events in memory (tests, and the `run` command's printer tee). */
export class MemoryEvents implements EventSink {
  readonly events: RecordedEvent[] = [];
  async record(object: InvolvedObject, type: EventType, reason: EventReason, message: string): Promise<void> {
    this.events.push({ object, type, reason, message });
  }
}

/** Sends each event to several sinks. */
export function teeEvents(...sinks: EventSink[]): EventSink {
  return {
    record: async (o, t, r, m) => {
      await Promise.all(sinks.map((s) => s.record(o, t, r, m)));
    },
  };
}

/**
 * One Application's events in the order of what caused them, across the two workers that record
 * them. A refresh that starts an automated sync records Argo CD's "Initiated automated sync" after
 * its status write lands; the operation worker that write's watch event wakes records "Sync
 * operation started as" after its own read, and could send it first. So the refresh takes a hold
 * on the Application before it writes and lets go once its event is recorded (or the write did not
 * start the sync); the worker waits for the hold before its first event. A hold is let go after
 * `maxHoldMs` whatever happens: an event is never worth a stalled sync.
 */
export class EventOrder {
  readonly #held = new Map<string, Promise<void>>();
  readonly #maxHoldMs: number;

  constructor(opts: { maxHoldMs?: number } = {}) {
    this.#maxHoldMs = opts.maxHoldMs ?? 10_000;
  }

  /** Holds `key`'s later events (after()) until the function returned is called. */
  hold(key: string): () => void {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const prior = this.#held.get(key);
    const chained = prior ? Promise.all([prior, held]).then(() => undefined) : held;
    this.#held.set(key, chained);
    const letGo = () => {
      clearTimeout(timer);
      release();
      void chained.then(() => {
        if (this.#held.get(key) === chained) this.#held.delete(key);
      });
    };
    const timer = setTimeout(letGo, this.#maxHoldMs);
    timer.unref?.();
    return letGo;
  }

  /** Resolves once every hold on `key` taken so far is let go (at once when there is none). */
  async after(key: string): Promise<void> {
    await this.#held.get(key);
  }

  /** Keys held now (tests). */
  get size(): number {
    return this.#held.size;
  }
}
