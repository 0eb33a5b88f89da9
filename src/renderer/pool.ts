// The renderer's worker threads: each render of a checked-out commit (reading its files, running
// kustomize or helm, parsing what they print) runs in a thread of its own with a heap limit, so a
// hostile repository (a YAML bomb, a huge chart) costs at most its own thread: it fails with an
// error naming the limit, and the renderer's main thread keeps answering every other request.
//
// Threads are kept and reused (starting one costs tens of milliseconds); a thread that ran out of
// memory, or did not stop when its time was up, is thrown away and a new one started on demand.
import { Worker } from 'node:worker_threads';
import { SourceError, formatBytes, type SourceErrorReason } from '../source/errors.ts';

import { overTimeLimit } from '../source/render.ts';
import type { RenderEnvironment, RenderRequest, RenderedObjects } from '../source/render.ts';

export type WorkerMessage =
  | { type: 'render'; id: number; request: RenderRequest; environment: Omit<RenderEnvironment, 'signal'> }
  | { type: 'abort'; id: number; message: string };

export type WorkerReply =
  | { id: number; ok: true; value: RenderedObjects }
  | { id: number; ok: false; error: { reason: SourceErrorReason; message: string } };

export interface PoolOptions {
  /** Threads, and so renders of checkouts, at once. */
  size: number;
  /** Heap of one thread: a render that needs more fails. */
  memoryBytes: number;
  /** How long a thread may take to stop its tools once its time is up, before it is terminated. */
  graceMs?: number;
}

interface Job {
  request: RenderRequest;
  environment: Omit<RenderEnvironment, 'signal'>;
  timeoutMs: number;
  resolve: (v: RenderedObjects) => void;
  reject: (e: SourceError) => void;
}

/**
 * A thread's heap limits for a render heap of `memoryBytes`: its old and young generations, in MiB.
 * The young generation is at most 16 MiB: V8 would size it from the heap limit, up to 64 MiB,
 * and keep what it grew to, idle or not. At 8 MiB the large renders promoted early and the
 * renderer's peak rose (docs/benchmarks.md).
 */
export function workerHeapLimits(memoryBytes: number): { oldMb: number; youngMb: number } {
  const oldMb = Math.max(16, Math.floor(memoryBytes / (1024 * 1024)));
  return { oldMb, youngMb: Math.min(16, Math.max(4, oldMb / 8)) };
}

const WORKER_URL = new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

export class RenderPool {
  readonly #opts: Required<PoolOptions>;
  readonly #idle: Worker[] = [];
  readonly #queue: Job[] = [];
  #busy = 0;
  #nextId = 1;
  #closed = false;
  readonly #all = new Set<Worker>();

  constructor(opts: PoolOptions) {
    this.#opts = { graceMs: 2000, ...opts };
  }

  /** Renders one checkout in a worker thread within `timeoutMs`. Rejects with a SourceError. */
  run(
    request: RenderRequest,
    environment: Omit<RenderEnvironment, 'signal'>,
    timeoutMs: number,
  ): Promise<RenderedObjects> {
    if (this.#closed) return Promise.reject(new SourceError('RendererUnavailable', 'the renderer is stopping'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ request, environment, timeoutMs, resolve, reject });
      this.#pump();
    });
  }

  /** Threads running a render now (for metrics and tests). */
  get busy(): number {
    return this.#busy;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0))
      job.reject(new SourceError('RendererUnavailable', 'the renderer is stopping'));
    await Promise.all([...this.#all].map((w) => w.terminate()));
  }

  #pump(): void {
    while (this.#busy < this.#opts.size && this.#queue.length > 0) {
      const job = this.#queue.shift() as Job;
      this.#busy++;
      this.#start(job);
    }
  }

  #spawn(): Worker {
    const heap = workerHeapLimits(this.#opts.memoryBytes);
    const worker = new Worker(WORKER_URL, {
      resourceLimits: { maxOldGenerationSizeMb: heap.oldMb, maxYoungGenerationSizeMb: heap.youngMb },
      // Tool processes inherit the environment the render asks for, never this thread's own.
      env: {},
      stdout: false,
      stderr: false,
    });
    worker.unref();
    this.#all.add(worker);
    worker.once('exit', () => this.#all.delete(worker));
    return worker;
  }

  #start(job: Job): void {
    const worker = this.#idle.pop() ?? this.#spawn();
    const id = this.#nextId++;
    const label = `the render of '${job.request.source.path || '.'}'`;
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    const finish = (keep: boolean, outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      worker.off('messageerror', onMessageError);
      this.#busy--;
      if (keep && !this.#closed) this.#idle.push(worker);
      else void worker.terminate();
      outcome();
      this.#pump();
    };
    const timedOut = overTimeLimit(
      job.request.source,
      job.environment.limits.renderTimeoutMs,
      job.environment.timeLimitSetBy,
    );
    const timer = setTimeout(() => {
      // Ask the thread to stop its tools; a thread stuck in its own work is terminated after the grace.
      worker.postMessage({ type: 'abort', id, message: timedOut.message } satisfies WorkerMessage);
      grace = setTimeout(() => finish(false, () => job.reject(timedOut)), this.#opts.graceMs);
    }, job.timeoutMs);
    const onMessage = (reply: WorkerReply): void => {
      if (reply.id !== id) return;
      if (reply.ok) finish(true, () => job.resolve(reply.value));
      else finish(true, () => job.reject(new SourceError(reply.error.reason, reply.error.message)));
    };
    const onError = (err: Error & { code?: string }): void => {
      const message =
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `${label} needed more than the renderer's memory limit of ${formatBytes(this.#opts.memoryBytes)}`
          : `${label} failed: ${err.message}`;
      finish(false, () =>
        job.reject(new SourceError(err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'TooLarge' : 'Unexpected', message)),
      );
    };
    // What the thread sent could not be read here (a reply that cannot be cloned): without this,
    // the render would hold its slot until its time limit.
    const onMessageError = (err: Error): void =>
      finish(false, () =>
        job.reject(new SourceError('Unexpected', `${label} failed: its answer could not be read (${err.message})`)),
      );
    const onExit = (code: number): void =>
      finish(false, () =>
        job.reject(new SourceError('Unexpected', `${label} failed: its worker exited with code ${code}`)),
      );
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    worker.on('messageerror', onMessageError);
    worker.postMessage({
      type: 'render',
      id,
      request: job.request,
      environment: job.environment,
    } satisfies WorkerMessage);
  }
}
