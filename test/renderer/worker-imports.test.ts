// A render thread (renderer/pool.ts) loads only what rendering a checkout needs: not undici (for
// value files by URL), @grpc/grpc-js (for plugin sidecars) or zod (for source parameter files),
// which each thread would otherwise hold in its own heap whatever it renders (together about 17
// MiB of RSS per thread). They are loaded by the render that needs them. A thread started as the
// pool starts one records every module it resolves (module.registerHooks) while importing
// worker.ts; the modules that load the three are imported last, to show the recording sees them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';

const SRC = new URL('../../src/', import.meta.url);

const THREAD = `
const { registerHooks } = await import('node:module');
const { parentPort, workerData } = await import('node:worker_threads');
const seen = [];
registerHooks({
  resolve(specifier, context, next) {
    const r = next(specifier, context);
    seen.push(r.url);
    return r;
  },
});
const heavy = () => seen.filter((u) => /\\/node_modules\\/(undici|zod|@grpc\\/grpc-js)\\//.test(u)).map((u) => u.replace(/.*\\/node_modules\\/((@[^/]+\\/)?[^/]+).*/, '$1'));
await import(new URL('renderer/worker.ts', workerData).href);
const modules = seen.length;
const before = [...new Set(heavy())];
await import(new URL('source/cmp/client.ts', workerData).href);
await import(new URL('source/http.ts', workerData).href);
await import(new URL('source/source-parameters-apply.ts', workerData).href);
parentPort.postMessage({ modules, before, after: [...new Set(heavy())].sort() });
`;

test('a render thread loads neither undici, @grpc/grpc-js nor zod until a render needs one', async () => {
  const worker = new Worker(`(async () => {${THREAD}})().catch((e) => { throw e; })`, {
    eval: true,
    workerData: SRC.href,
    execArgv: ['--disable-warning=ExperimentalWarning'],
  });
  const out = await new Promise<{ modules: number; before: string[]; after: string[] }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.ok(out.modules > 50, `only ${out.modules} modules seen: the recording is broken`);
  assert.deepEqual(out.before, []);
  assert.deepEqual(out.after, ['@grpc/grpc-js', 'undici', 'zod']);
});
