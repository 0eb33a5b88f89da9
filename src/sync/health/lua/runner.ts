// Runs health scripts in a worker thread (worker.ts), one at a time, each within a budget of work
// (VM instructions), of wall time and of memory. The budget that stops a runaway script is work,
// so that a correct script never fails because the machine is busy (Argo CD's 1 s of wall time
// would); wall time is only a backstop, ten times more than the instruction budget takes on an
// idle machine. The VM enforces them itself (a count hook, a counting allocator); a run that does
// not come back within the wall time and a grace period (a C function that never yields to the
// hook) is ended by terminating the worker, and the next run gets a new one. The controller's
// event loop never waits on a script.
import { Worker } from 'node:worker_threads';
import type { LuaRun, LuaRunResult } from './vm.ts';
import { wallTimeExceeded } from './vm.ts';
import type { WorkerReply, WorkerRequest } from './worker.ts';

export interface LuaBudget {
  /**
   * VM instructions per script. The default, 100 million, is one to two seconds of this VM's work
   * on a 2-core machine (about 60 million a second measured under load) and thousands of times
   * what the costliest of Argo CD's bundled checks executes (the suite test measures it).
   */
  instructions: number;
  /** Wall time per script, a backstop for a script stuck where instructions are not counted. */
  timeoutMs: number;
  /** Bytes the script's Lua state may allocate, `obj` included. */
  memoryBytes: number;
}

export const DEFAULT_BUDGET: LuaBudget = { instructions: 100_000_000, timeoutMs: 10_000, memoryBytes: 64 << 20 };

/** How long past its budget a run may take before its worker is terminated. */
const GRACE_MS = 2000;
/** Loading the WebAssembly module in a new worker. */
const START_MS = 30_000;

const WORKER_URL = new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

type Pending = { req: WorkerRequest; resolve: (r: LuaRunResult) => void };

export class LuaRunner {
  readonly budget: LuaBudget;
  #worker: Worker | undefined;
  #ready: Promise<void> | undefined;
  #queue: Pending[] = [];
  #running = false;
  #nextId = 0;
  #closed = false;

  constructor(budget: Partial<LuaBudget> = {}) {
    this.budget = { ...DEFAULT_BUDGET, ...budget };
  }

  run(script: string, useOpenLibs: boolean, obj: unknown): Promise<LuaRunResult> {
    if (this.#closed) return Promise.resolve({ ok: false, error: 'the Lua runner is closed', printed: [] });
    const req: WorkerRequest = { id: this.#nextId++, script, useOpenLibs, obj, ...this.budget } satisfies LuaRun & {
      id: number;
    };
    return new Promise((resolve) => {
      this.#queue.push({ req, resolve });
      void this.#drain();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const p of this.#queue.splice(0)) p.resolve({ ok: false, error: 'the Lua runner is closed', printed: [] });
    const w = this.#worker;
    this.#worker = undefined;
    await w?.terminate();
  }

  async #drain(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      for (let next = this.#queue.shift(); next; next = this.#queue.shift()) next.resolve(await this.#runOne(next.req));
    } finally {
      this.#running = false;
    }
  }

  #start(): Promise<void> {
    const worker = new Worker(WORKER_URL, { resourceLimits: { maxOldGenerationSizeMb: 128 } });
    worker.unref();
    this.#worker = worker;
    this.#ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the Lua worker did not start')), START_MS);
      timer.unref();
      worker.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
      worker.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    return this.#ready;
  }

  async #runOne(req: WorkerRequest): Promise<LuaRunResult> {
    try {
      if (!this.#worker) await this.#start();
      else await this.#ready;
    } catch (err) {
      this.#worker = undefined;
      return { ok: false, error: `the Lua VM could not start: ${(err as Error).message}`, printed: [] };
    }
    const worker = this.#worker as Worker;
    return new Promise((resolve) => {
      const done = (r: LuaRunResult) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        resolve(r);
      };
      const onMessage = (reply: WorkerReply) => {
        if (reply.type === 'result' && reply.id === req.id) done(reply.result);
      };
      const onExit = () => {
        if (this.#worker === worker) this.#worker = undefined;
        done({ ok: false, error: 'the Lua VM stopped (out of memory?)', printed: [] });
      };
      const timer = setTimeout(() => {
        if (this.#worker === worker) this.#worker = undefined;
        void worker.terminate();
        done({ ok: false, error: wallTimeExceeded(req.timeoutMs), printed: [] });
      }, req.timeoutMs + GRACE_MS);
      timer.unref();
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      worker.postMessage(req);
    });
  }
}
