// A sync driven to its end the way the controller drives an operation (src/controller/
// sync-step.ts): one step, its results and progress carried to the next, a pause between steps.
// The engine tests use it where they once called a sync that ran to completion in one call.
import type { KubeObject, ResourceResult, SyncProgress } from '../../src/api/index.ts';
import { syncStep } from '../../src/controller/sync-step.ts';
import type { DestinationClient } from '../../src/kube/types.ts';
import { describeIdentity } from '../../src/kube/types.ts';
import type { InventoryEntry, SyncOptions as EngineOptions, SyncResult } from '../../src/sync/index.ts';

export interface SyncOptions extends EngineOptions {
  /** Pause between steps (the controller's next step comes on a watch event or its poll). Default 200 ms. */
  pollIntervalMs?: number;
  waitTimeoutMs?: number;
  /**
   * The pause after each wave (the controller's default 2 s, Argo CD's). Default 0 here: the engine
   * tests judge the waves, not the pause between them (test/e2e/controller-cmd-params.test.ts does).
   */
  waveDelayMs?: number;
  /** The operation's message after each step that waits ("waiting for healthy state of ..."). */
  onProgress?: (message: string) => void;
  beforeWave?: () => Promise<string | null>;
}

export async function sync(
  client: DestinationClient,
  desired: readonly KubeObject[],
  inventory: readonly InventoryEntry[],
  options: SyncOptions,
): Promise<SyncResult> {
  const { pollIntervalMs = 200, waitTimeoutMs, waveDelayMs = 0, onProgress, beforeWave, ...engine } = options;
  const startedAt = engine.startedAt ?? new Date();
  let prior: ResourceResult[] | undefined;
  let progress: SyncProgress = {};
  for (;;) {
    const out = await syncStep({
      client,
      desired,
      inventory,
      options: { ...engine, startedAt, prior, pruneWaves: progress.pruneWaves },
      progress,
      waitTimeoutMs,
      waveDelayMs,
      beforeWave,
    });
    if (out.kind === 'done') return out.result;
    if (out.kind === 'aborted')
      return {
        phase: 'Failed',
        message: 'Operation terminated',
        identity: describeIdentity(client.identity),
        resources: prior ?? [],
      };
    prior = out.resources;
    progress = out.progress;
    onProgress?.(out.message);
    await new Promise((r) => setTimeout(r, pollIntervalMs));
  }
}
