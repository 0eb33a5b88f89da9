// The renderer's own /metrics, as Argo CD's repo-server serves its own (on its metrics port): the
// git requests it makes (argocd_git_request_total, argocd_git_request_duration_seconds, with Argo
// CD's names, help, labels and buckets: reposerver/metrics/metrics.go) and the process's metrics.
// The `repo` label is the repository URL with its password hidden (source/errors.ts redactURL):
// Argo CD puts the URL as written; a token in it would be shown to everyone who reads metrics.
// Beside them, impersync's own: the renderer's memory budget (memory.ts), read at each scrape.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { BudgetStats } from './budget.ts';
import type { GitRequestHook } from '../source/git.ts';

export interface RendererMetrics {
  registry: Registry;
  gitRequests: Counter<'repo' | 'request_type'>;
  gitRequestDuration: Histogram<'repo' | 'request_type'>;
  /** The hook for source/git.ts. */
  onGitRequest: GitRequestHook;
  /** Serves the gauges of the memory budget these stats tell of, from now on. */
  observeBudget(stats: () => BudgetStats | undefined): void;
}

export function createRendererMetrics(opts: { defaultMetrics?: boolean } = {}): RendererMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const gitRequests = new Counter({
    name: 'argocd_git_request_total',
    help: 'Number of git requests performed by repo server',
    labelNames: ['repo', 'request_type'],
    registers,
  });
  const gitRequestDuration = new Histogram({
    name: 'argocd_git_request_duration_seconds',
    help: 'Git requests duration seconds.',
    labelNames: ['repo', 'request_type'],
    buckets: [0.1, 0.25, 0.5, 1, 2, 4, 10, 20],
    registers,
  });
  let observed: () => BudgetStats | undefined = () => undefined;
  new Gauge({
    name: 'impersync_renderer_memory_budget_bytes',
    help: "The renderer's memory budget of renders and resolves (state=capacity), the bytes admitted (used) and the bytes waited for (waiting).",
    labelNames: ['state'],
    registers,
    collect() {
      const s = observed();
      if (!s) return;
      this.set({ state: 'capacity' }, s.capacity);
      this.set({ state: 'used' }, s.used);
      this.set({ state: 'waiting' }, s.waitingBytes);
    },
  });
  new Gauge({
    name: 'impersync_renderer_memory_budget_waiting_requests',
    help: 'Renders and resolves waiting for memory budget.',
    registers,
    collect() {
      const s = observed();
      if (s) this.set(s.waiting);
    },
  });
  new Gauge({
    name: 'impersync_renderer_memory_budget_oldest_wait_seconds',
    help: 'How long the request waiting longest for memory budget has waited.',
    registers,
    collect() {
      const s = observed();
      if (s) this.set(s.oldestWaitMs / 1000);
    },
  });
  return {
    registry,
    gitRequests,
    gitRequestDuration,
    observeBudget: (stats) => {
      observed = stats;
    },
    onGitRequest: (repo, type) => {
      // Counted when it starts, timed when it ends, as Argo CD's git event handlers do.
      const labels = { repo, request_type: type };
      gitRequests.inc(labels);
      const end = gitRequestDuration.startTimer(labels);
      return () => void end();
    },
  };
}
