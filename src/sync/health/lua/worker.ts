// The worker thread that runs health scripts, one at a time, for runner.ts. It holds nothing but
// the Lua VM: no credential, no client, no file of the controller's.
import { parentPort } from 'node:worker_threads';
import { LuaFactory } from 'wasmoon';
import type { LuaRun } from './vm.ts';
import { LuaVm } from './vm.ts';

export type WorkerRequest = LuaRun & { id: number };
export type WorkerReply = { type: 'ready' } | { type: 'result'; id: number; result: ReturnType<LuaVm['run']> };

const port = parentPort;
if (!port) throw new Error('lua/worker.ts runs as a worker thread');

const vm = new LuaVm(await new LuaFactory().getLuaModule());
// What a script writes through io.stdout, io.stderr or print reaches the VM's console: keep it
// with the run instead of letting it reach the controller's output.
for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
  console[method] = (...args: unknown[]) => vm.capture(args.map(String).join(' '));
}
port.on('message', (req: WorkerRequest) => {
  const { id, ...run } = req;
  port.postMessage({ type: 'result', id, result: vm.run(run) } satisfies WorkerReply);
});
port.postMessage({ type: 'ready' } satisfies WorkerReply);
