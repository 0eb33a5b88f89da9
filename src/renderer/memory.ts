// The renderer's memory budget: what its renders and resolves may hold at once, derived from its
// container's memory limit (memory-limit.ts: --memory-limit, IMPERSYNC_MEMORY_LIMIT, cgroup v2's
// memory.max), so that no mix of tenants' requests takes the renderer past that limit.
//
// The limit is shared out by construction, each part bounded by a limit the renderer enforces:
//
// - 15% is the process's own: the main thread's heap and code, sockets and buffers outside any
//   request, and room for the page cache of Git's files, which the kernel charges to the same cgroup.
// - The answer cache (--answer-cache): its bytes are bounded by its own limit.
// - The metadata caches (--metadata-cache): what is kept of repositories (refs, tags, Helm
//   indexes, commits' folder listings and refusals), each a part of that one limit
//   (source/metadata-caches.ts).
// - The render threads (--max-renders of them, pool.ts): each may hold its heap limit (old and young
//   generations, --render-memory) plus its own isolate, idle or not, since V8 collects an idle
//   thread's garbage when it likes. So they are set aside whole, up front.
// - The rest is the budget. Each request's render slot comes with what it may add (slots.ts: in its
//   tenant's turn, once it fits, nobody passing it meanwhile; while others are about, no tenant
//   holds so much that one more of the largest requests would not fit beside it):
//     resolve: one tool process (`git ls-remote`), up to its address-space limit (--tool-memory, the
//       RLIMIT_AS every git, helm and kustomize runs under: source/limits.ts);
//     render: the same tool process (a render runs git, then helm or kustomize, one after another),
//       plus its answer in the main thread: the objects copied from the render thread and their
//       encoded answer, ANSWER_HOLD_FACTOR times the rendered objects' limit (the Application's
//       maxRenderedSize, or the renderer's 64 MiB).
//   A request whose hold is more than the whole budget could never run: it is refused at once with
//   an error naming the Application and the sizes.
//
// Not in it: config management plugins run in sidecar containers, each under its own limit. Checkouts
// are on disk (the install's emptyDir), not in memory. A tool that starts another (kustomize running
// helm or git, git its transport helpers) has each under the address-space limit; the budget counts
// one, the one that does the work.
import { ByteBudget, formatMiB, type BudgetExceededError } from './budget.ts';
import { workerHeapLimits } from './pool.ts';
import { APPLICATION_LIMIT_KEYS } from '../api/limits.ts';

/** The share of the memory limit the renderer's fixed parts and budget come out of; the rest is the process's own. */
export const RENDERER_SHARE_OF_LIMIT = 0.85;

/** Bytes of memory one byte of a render's answer stands for in the main thread: the copied objects (3), the encoded answer (1). */
export const ANSWER_HOLD_FACTOR = 4;

/** A render thread's own memory beside its heap limits: its isolate, code and stacks. */
export const WORKER_BASE_BYTES = 32 * 1024 * 1024;

export interface RendererMemoryOptions {
  /** The container's memory limit. */
  limitBytes: number;
  /** Where it was read (a flag, the variable, the cgroup). */
  from: string;
  /** Render threads, and the heap of one (pool.ts). */
  maxRenders: number;
  renderMemoryBytes: number;
  /** The answer cache's bytes. */
  cacheBytes: number;
  /** The metadata caches' bytes, all together. */
  metadataCacheBytes: number;
  /** The address-space limit of each tool process. */
  toolMemoryBytes: number;
  /** The renderer's own limit of a render's objects, as JSON. */
  maxRenderedBytes: number;
  /** Raise a budget too small for one render to one render's hold (no limit was found: nothing to keep under). */
  minimum?: boolean;
}

export interface RendererMemory {
  readonly budget: ByteBudget;
  readonly limitBytes: number;
  /** One render thread's share: its heap limits and WORKER_BASE_BYTES. */
  readonly threadBytes: number;
  /** What a resolve holds. */
  resolveHold(): number;
  /** What a render holds, for a request whose own limit of rendered bytes is `maxRenderedBytes`. */
  renderHold(maxRenderedBytes: number | undefined): number;
  /** Why a hold is what it is, for the error of one that can never fit. */
  explain(kind: 'render' | 'resolve', maxRenderedBytes: number | undefined): string;
  /** The line logged at start. */
  summary(): string;
}

export type RendererMemoryResult = { ok: true; memory: RendererMemory } | { ok: false; error: string };

export function rendererMemory(o: RendererMemoryOptions): RendererMemoryResult {
  const heap = workerHeapLimits(o.renderMemoryBytes);
  const threadBytes = (heap.oldMb + heap.youngMb) * 1024 * 1024 + WORKER_BASE_BYTES;
  const share = Math.floor(o.limitBytes * RENDERER_SHARE_OF_LIMIT);
  const left = share - o.cacheBytes - o.metadataCacheBytes - o.maxRenders * threadBytes;
  const parts = `${Math.round(RENDERER_SHARE_OF_LIMIT * 100)}% of the memory limit of ${formatMiB(o.limitBytes)} (${o.from}), less the answer cache's ${formatMiB(o.cacheBytes)}, the metadata caches' ${formatMiB(o.metadataCacheBytes)} and ${o.maxRenders} render thread(s) of ${formatMiB(threadBytes)}`;
  const answerBytes = (max: number | undefined) => Math.min(max ?? o.maxRenderedBytes, o.maxRenderedBytes);
  const renderHold = (max: number | undefined) => o.toolMemoryBytes + ANSWER_HOLD_FACTOR * answerBytes(max);
  const capacity = o.minimum ? Math.max(left, renderHold(undefined)) : left;
  if (capacity < o.toolMemoryBytes)
    return {
      ok: false,
      error: `no memory budget is left for renders: ${parts} leaves ${formatMiB(Math.max(0, left))}, less than one tool process's ${formatMiB(o.toolMemoryBytes)} (--tool-memory); raise the memory limit, or lower --max-renders, --render-memory, --answer-cache, --metadata-cache or --tool-memory`,
    };
  const budget = new ByteBudget(capacity);
  return {
    ok: true,
    memory: {
      budget,
      limitBytes: o.limitBytes,
      threadBytes,
      resolveHold: () => o.toolMemoryBytes,
      renderHold,
      explain: (kind, max) =>
        kind === 'resolve'
          ? `one tool process's address space of ${formatMiB(o.toolMemoryBytes)} (--tool-memory)`
          : `one tool process's address space of ${formatMiB(o.toolMemoryBytes)} (--tool-memory) and ${ANSWER_HOLD_FACTOR} × its rendered objects' limit of ${formatMiB(answerBytes(max))}`,
      summary: () =>
        `memory budget of renders and resolves: ${formatMiB(capacity)} (${parts}); a render holds ${formatMiB(renderHold(undefined))} at most, a resolve ${formatMiB(o.toolMemoryBytes)}`,
    },
  };
}

/** The error of a request that can never fit, naming the Application, what it needs and why. */
export function neverFits(err: BudgetExceededError, memory: RendererMemory, why: string): string {
  return `${err.job} needs ${formatMiB(err.bytes)} of the renderer's memory budget (${why}), more than the whole budget of ${formatMiB(err.budget)} (of a memory limit of ${formatMiB(memory.limitBytes)}): raise the renderer's memory limit, or lower its --tool-memory or the Application's rendered objects (argocd-cm ${APPLICATION_LIMIT_KEYS.maxRenderedSize})`;
}
