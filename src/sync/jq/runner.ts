// Evaluates jq path expressions off the event loop: one worker thread (worker.ts), one request at a
// time, each within Argo CD's time limit (DefaultJQExecutionTimeout, 1 s). A request that does not
// answer in time gets Argo CD's message and its worker is terminated; the next request starts a
// new one. The controller never waits on an expression a user wrote.
import { Worker } from 'node:worker_threads';
import type { JqOp, JqReply, JqRequest } from './worker.ts';

/** `ms`: how long the worker took from the request to its answer (not the wait for its turn). */
export type JqResult = ({ ok: true; value: unknown } | { ok: false; error: string }) & { ms?: number };

/** Argo CD's DefaultJQExecutionTimeout. */
export const JQ_TIMEOUT_MS = 1000;
/** Compiling the WebAssembly module in a new worker (not counted against an expression). */
const START_MS = 30_000;

const WORKER_URL = new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

export class JqRunner {
  readonly timeoutMs: number;
  #worker: { thread: Worker; ready: Promise<void> } | undefined;
  #tail: Promise<unknown> = Promise.resolve();
  #nextId = 0;
  #closed = false;

  constructor(timeoutMs = JQ_TIMEOUT_MS) {
    this.timeoutMs = timeoutMs;
  }

  /** `del(expression)` of `doc`. */
  delete(doc: unknown, expression: string): Promise<JqResult> {
    return this.#enqueue('del', expression, doc);
  }

  /** The paths `expression` addresses in `doc` (jq's `path()`), as arrays of keys and indexes. */
  async paths(
    doc: unknown,
    expression: string,
  ): Promise<{ ok: true; value: Array<Array<string | number>> } | { ok: false; error: string }> {
    const r = await this.#enqueue('paths', expression, doc);
    return r.ok ? { ok: true, value: r.value as Array<Array<string | number>> } : r;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const w = this.#worker;
    this.#worker = undefined;
    await w?.thread.terminate();
  }

  #enqueue(op: JqOp, expression: string, doc: unknown): Promise<JqResult> {
    const run = this.#tail.then(() => this.#run(op, expression, doc));
    this.#tail = run.catch(() => undefined);
    return run;
  }

  #start(): { thread: Worker; ready: Promise<void> } {
    const thread = new Worker(WORKER_URL, { resourceLimits: { maxOldGenerationSizeMb: 128 } });
    thread.unref();
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the jq worker did not start')), START_MS);
      timer.unref();
      thread.once('message', () => (clearTimeout(timer), resolve()));
      thread.once('error', (err) => (clearTimeout(timer), reject(err)));
    });
    return { thread, ready };
  }

  async #run(op: JqOp, expression: string, doc: unknown): Promise<JqResult> {
    if (this.#closed) return { ok: false, error: 'the jq runner is closed' };
    this.#worker ??= this.#start();
    const worker = this.#worker;
    try {
      await worker.ready;
    } catch (err) {
      this.#worker = undefined;
      return { ok: false, error: `jq could not start: ${(err as Error).message}` };
    }
    const id = this.#nextId++;
    let sent = 0;
    return new Promise<JqResult>((resolve) => {
      const finish = (r: JqResult) => {
        clearTimeout(timer);
        worker.thread.off('message', onMessage);
        worker.thread.off('exit', onExit);
        resolve({ ...r, ms: performance.now() - sent });
      };
      const drop = () => {
        if (this.#worker === worker) this.#worker = undefined;
      };
      const onMessage = (reply: JqReply) => {
        if (reply.type !== 'result' || reply.id !== id) return;
        finish(
          reply.ok ? { ok: true, value: reply.value } : { ok: false, error: `JQ patch returned error: ${reply.error}` },
        );
      };
      const onExit = () => {
        drop();
        finish({ ok: false, error: 'the jq worker stopped (out of memory?)' });
      };
      const timer = setTimeout(() => {
        drop();
        void worker.thread.terminate();
        finish({ ok: false, error: `JQ patch execution timed out (${this.timeoutMs / 1000}s)` });
      }, this.timeoutMs);
      timer.unref();
      worker.thread.on('message', onMessage);
      worker.thread.once('exit', onExit);
      sent = performance.now();
      worker.thread.postMessage({ id, op, expression, doc } satisfies JqRequest);
    });
  }
}
