// One render worker thread (pool.ts): reads the files of a checked-out commit, runs kustomize or
// helm, and parses their output, off the renderer's main thread and under the heap limit the pool
// gave the thread. One job at a time; an `abort` message stops the job's tools.
import { parentPort } from 'node:worker_threads';
import { SourceError } from '../source/errors.ts';
import { renderCheckout } from '../source/render.ts';
import type { WorkerMessage, WorkerReply } from './pool.ts';

const port = parentPort;
if (!port) throw new Error('renderer/worker.ts runs only as a worker thread');

let current: { id: number; abort: AbortController } | undefined;

port.on('message', (msg: WorkerMessage) => {
  if (msg.type === 'abort') {
    if (current?.id === msg.id) current.abort.abort(new SourceError('Timeout', msg.message));
    return;
  }
  const abort = new AbortController();
  current = { id: msg.id, abort };
  renderCheckout(msg.request, { ...msg.environment, signal: abort.signal }).then(
    (value) => reply({ id: msg.id, ok: true, value }),
    (err: unknown) => {
      const e =
        err instanceof SourceError
          ? { reason: err.reason, message: err.message }
          : { reason: 'Unexpected' as const, message: err instanceof Error ? err.message : String(err) };
      reply({ id: msg.id, ok: false, error: e });
    },
  );
});

function reply(r: WorkerReply): void {
  if (current?.id === r.id) current = undefined;
  port?.postMessage(r);
}
