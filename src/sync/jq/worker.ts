// The worker thread that evaluates ignoreDifferences jq path expressions for runner.ts. jq is the
// real one (jqlang/jq compiled to WebAssembly by the jq-wasm package); an expression that never
// ends (`def f: f; f`) is the runner's to stop, by terminating this thread.
import { parentPort } from 'node:worker_threads';
import { loadJq } from 'jq-wasm';

export type JqOp = 'del' | 'paths';
export type JqRequest = { id: number; op: JqOp; expression: string; doc: unknown };
export type JqReply =
  | { type: 'ready' }
  | { type: 'result'; id: number; ok: true; value: unknown }
  | { type: 'result'; id: number; ok: false; error: string };

const port = parentPort;
if (!port) throw new Error('jq/worker.ts runs as a worker thread');
const jq = await loadJq();

// Argo CD runs `del(<expression>)` (util/argo/normalizers/diff_normalizer.go); the paths the
// expression addresses come from jq's own `path()`, so both uses agree on what it names.
function query(op: JqOp, expression: string): string {
  return op === 'del' ? `del(${expression})` : `[path(${expression})]`;
}

port.on('message', (req: JqRequest) => {
  try {
    const out = jq.json(req.doc as object, query(req.op, req.expression));
    if (out.length === 0) throw new Error('JQ patch did not return any data');
    if (out.length > 1) throw new Error('JQ patch returned multiple objects');
    port.postMessage({ type: 'result', id: req.id, ok: true, value: out[0] } satisfies JqReply);
  } catch (err) {
    const message = ((err as { stderr?: string }).stderr || (err as Error).message).trim();
    port.postMessage({ type: 'result', id: req.id, ok: false, error: message } satisfies JqReply);
  }
});
port.postMessage({ type: 'ready' } satisfies JqReply);
