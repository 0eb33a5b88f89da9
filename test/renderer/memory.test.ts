// The renderer's memory budget (src/renderer/memory.ts) and its admission in the server: the
// budget is what the limit leaves after the process's share, the answer and metadata caches and
// the render threads; each request holds its tool's address space (and a render its answer) while it runs, a
// second that does not fit waits and is named in /v1/budget with what holds the budget, and one
// that could never fit is refused at once, naming its Application and the sizes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/observability/logger.ts';
import { RendererClient } from '../../src/renderer/client.ts';
import {
  ANSWER_HOLD_FACTOR,
  RENDERER_SHARE_OF_LIMIT,
  WORKER_BASE_BYTES,
  rendererMemory,
} from '../../src/renderer/memory.ts';
import { rendererHandler, startRendererServer } from '../../src/renderer/server.ts';
import { RenderSlots } from '../../src/renderer/slots.ts';
import { ByteBudget } from '../../src/renderer/budget.ts';
import { SourceError, type RenderInput, type SourceRenderer } from '../../src/source/index.ts';

const MiB = 1024 * 1024;
const TOKEN = 'test-token-0123456789';
const silent = createLogger({ level: 'silent' });

/** Two threads of 16 MiB heap (16 + 4 MiB young + base), no answer or metadata cache, tools of 100 MiB, answers of 10 MiB. */
const sizes = {
  maxRenders: 2,
  renderMemoryBytes: 16 * MiB,
  cacheBytes: 0,
  metadataCacheBytes: 0,
  toolMemoryBytes: 100 * MiB,
  maxRenderedBytes: 10 * MiB,
  from: '--memory-limit',
};
const THREAD = 20 * MiB + WORKER_BASE_BYTES;

test('the budget is the share of the limit less the answer and metadata caches and the render threads; holds are the tool and the answer', () => {
  const made = rendererMemory({ ...sizes, cacheBytes: 8 * MiB, metadataCacheBytes: 6 * MiB, limitBytes: 400 * MiB });
  assert.ok(made.ok);
  const m = made.memory;
  assert.equal(m.threadBytes, THREAD);
  assert.equal(m.budget.capacity, Math.floor(400 * MiB * RENDERER_SHARE_OF_LIMIT) - 8 * MiB - 6 * MiB - 2 * THREAD);
  assert.match(m.summary(), /less the answer cache's 8\.0 MiB, the metadata caches' 6\.0 MiB and 2 render thread\(s\)/);
  assert.equal(m.resolveHold(), 100 * MiB);
  assert.equal(m.renderHold(undefined), 100 * MiB + ANSWER_HOLD_FACTOR * 10 * MiB);
  // The Application's own lower limit of rendered bytes lowers its hold; a higher one does not raise it.
  assert.equal(m.renderHold(2 * MiB), 100 * MiB + ANSWER_HOLD_FACTOR * 2 * MiB);
  assert.equal(m.renderHold(50 * MiB), m.renderHold(undefined));
});

test('a limit that leaves no room for one tool process is an error naming the parts; with no limit found it is raised to one render', () => {
  const made = rendererMemory({ ...sizes, limitBytes: 200 * MiB });
  assert.equal(made.ok, false);
  assert.match(
    made.ok ? '' : made.error,
    /^no memory budget is left for renders: 85% of the memory limit of 200\.0 MiB \(--memory-limit\), less the answer cache's 0\.0 MiB, the metadata caches' 0\.0 MiB and 2 render thread\(s\) of 52\.0 MiB leaves 66\.0 MiB, less than one tool process's 100\.0 MiB \(--tool-memory\).*--metadata-cache/,
  );
  const raised = rendererMemory({ ...sizes, limitBytes: 200 * MiB, minimum: true });
  assert.ok(raised.ok);
  assert.equal(raised.memory.budget.capacity, raised.memory.renderHold(undefined));
});

/** A renderer whose resolves wait at a gate per Application: the fault a real render cannot produce on cue. */
function gatedRenderer(): { fake: SourceRenderer; open: (app: string) => void; started: string[] } {
  const gates = new Map<string, { promise: Promise<void>; open: () => void }>();
  const gate = (app: string) => {
    let g = gates.get(app);
    if (!g) {
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      g = { promise, open };
      gates.set(app, g);
    }
    return g;
  };
  const started: string[] = [];
  const fake = {
    resolveRevision: async (input: RenderInput) => {
      started.push(input.appName);
      await gate(input.appName).promise;
      return '0'.repeat(40);
    },
    render: async () => ({ revision: '0'.repeat(40), sourceType: 'Directory', objects: [] }),
    folderKey: async () => undefined,
  } as unknown as SourceRenderer;
  return { fake, open: (app) => gate(app).open(), started };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), 'condition not reached');
}

test("a render that does not fit beside another waits, named in /v1/budget with what holds it, and runs once the other's memory is back", async () => {
  // 400 MiB: a budget of 236 MiB, one render (140 MiB) at a time, not a render and a resolve (240 MiB).
  const made = rendererMemory({ ...sizes, limitBytes: 400 * MiB });
  assert.ok(made.ok);
  const memory = made.memory;
  const { fake, open, started } = gatedRenderer();
  const handler = rendererHandler({ renderer: fake, token: () => TOKEN, logger: silent, maxConcurrent: 4, memory });
  const server = await startRendererServer('127.0.0.1:0', handler);
  const client = new RendererClient({ url: `http://${server.address}`, token: () => TOKEN });
  const input = (app: string): RenderInput => ({ source: { repoURL: 'https://git.example/r.git' }, appName: app });
  try {
    const big = client.render(input('big'), { application: 'team-a/big', tenant: 'team-a' });
    await until(() => started.includes('big'));
    const small = client.resolveRevision(input('small'), { application: 'team-b/small', tenant: 'team-b' });
    await until(() => handler.budgetStats()?.waiting === 1);
    assert.deepEqual(started, ['big'], 'the resolve did not start while it did not fit');
    const seen = await client.budget();
    assert.ok(seen);
    assert.equal(seen.capacity, memory.budget.capacity);
    assert.equal(seen.used, memory.renderHold(undefined));
    assert.deepEqual(
      seen.waiting.map((w) => [w.job, w.bytes]),
      [['Application team-b/small', 100 * MiB]],
    );
    assert.deepEqual(seen.holders, [{ job: 'Application team-a/big', bytes: memory.renderHold(undefined) }]);
    assert.equal(handler.stats.running, 1, 'waiting for memory, it holds no slot');
    open('big');
    open('small');
    await big;
    assert.equal(await small, '0'.repeat(40));
    await until(() => memory.budget.used === 0);
    assert.deepEqual(started, ['big', 'small']);
  } finally {
    await client.close();
    await server.close();
  }
});

test('a render that could never fit is refused at once, naming its Application and the sizes, and frees its slot', async () => {
  // 400 MiB: a budget of 236 MiB; with tools of 200 MiB a resolve fits, a render (240 MiB) never does.
  const made = rendererMemory({ ...sizes, toolMemoryBytes: 200 * MiB, limitBytes: 400 * MiB });
  assert.ok(made.ok);
  const memory = made.memory;
  const { fake, started } = gatedRenderer();
  const handler = rendererHandler({ renderer: fake, token: () => TOKEN, logger: silent, maxConcurrent: 1, memory });
  const server = await startRendererServer('127.0.0.1:0', handler);
  const client = new RendererClient({ url: `http://${server.address}`, token: () => TOKEN });
  try {
    await assert.rejects(
      client.render(
        { source: { repoURL: 'https://git.example/r.git' }, appName: 'huge' },
        { application: 'team-a/huge', limits: { renderTimeoutMs: 60_000, maxObjects: 10, maxRenderedBytes: 10 * MiB } },
      ),
      (err: unknown) => {
        assert.ok(err instanceof SourceError);
        assert.equal(err.reason, 'TooLarge');
        assert.equal(
          err.message,
          `Application team-a/huge needs 240.0 MiB of the renderer's memory budget (one tool process's address space of 200.0 MiB (--tool-memory) and 4 × its rendered objects' limit of 10.0 MiB), more than the whole budget of 236.0 MiB (of a memory limit of 400.0 MiB): raise the renderer's memory limit, or lower its --tool-memory or the Application's rendered objects (argocd-cm impersync.application.maxRenderedSize)`,
        );
        return true;
      },
    );
    assert.deepEqual(started, [], 'nothing of it ran');
    assert.equal(handler.stats.running, 0, 'its slot was given back');
    assert.equal(handler.budgetStats()?.waiting, 0, 'it never waited');
  } finally {
    await client.close();
    await server.close();
  }
});

test('memory is handed out in tenant turns: a quiet tenant gets its render in beside a noisy one that holds memory, ahead of its queue', async () => {
  // A budget of four renders of 100 MiB (no answer: tools only here); the noisy tenant may hold three.
  const budget = new ByteBudget(400 * MiB);
  const slots = new RenderSlots(8, 100, Date.now, { budget, largest: 100 * MiB });
  const need = (app: string) => ({ job: `Application ${app}`, bytes: 100 * MiB });
  await slots.acquire('quiet', need('quiet/first')).then((r) => r?.());
  const noisy: Array<() => void> = [];
  for (let i = 0; i < 3; i++) noisy.push((await slots.acquire('noisy', need(`noisy/${i}`))) as () => void);
  let noisyFourth = false;
  const fourth = slots.acquire('noisy', need('noisy/3')).then((r) => ((noisyFourth = true), r));
  await new Promise((r) => setImmediate(r));
  assert.equal(noisyFourth, false, 'the noisy tenant holds all but one render of memory: it waits');
  assert.equal(budget.used, 300 * MiB);
  const quiet = await slots.acquire('quiet', need('quiet/a'));
  assert.ok(quiet, 'the quiet tenant got the room kept free');
  assert.equal(budget.used, 400 * MiB);
  quiet();
  noisy[0]?.();
  (await fourth)?.();
  for (const r of noisy) r();
  assert.equal(budget.used, 0);
});

test('the request whose turn it is waits for its memory and nobody passes it', async () => {
  const budget = new ByteBudget(300 * MiB);
  const slots = new RenderSlots(8, 100, Date.now, { budget, largest: 200 * MiB });
  const a = (await slots.acquire('a', { job: 'Application a/one', bytes: 200 * MiB })) as () => void;
  let bigIn = false;
  const big = slots.acquire('b', { job: 'Application b/big', bytes: 200 * MiB }).then((r) => ((bigIn = true), r));
  let smallIn = false;
  const small = slots.acquire('c', { job: 'Application c/small', bytes: 50 * MiB }).then((r) => ((smallIn = true), r));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    slots.waitingForMemory().map((w) => [w.job, w.bytes]),
    [['Application b/big', 200 * MiB]],
  );
  assert.equal(smallIn, false, 'the small one that would fit does not pass the one whose turn it is');
  a();
  (await big)?.();
  (await small)?.();
  assert.ok(bigIn && smallIn);
  assert.equal(budget.used, 0);
});
