// Runs an Application's operation (`operation.sync`, manual or automated) and its deletion
// (finalizer), as the Application's identity. Crash-safe: operationState is recorded as Running
// (with startedAt and the Application's generation) before anything touches the destination; a
// Running state found after a restart is continued (applies are idempotent server-side applies),
// and a completed one of the current generation (its `operation` not yet cleared) is only cleared,
// never run again. A new operation, even an identical one (self-heal), bumps the generation.
// A sync as an impersonated ServiceAccount first checks that the ServiceAccount exists (sa-check.ts).
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { CONDITION, EVENT_REASON, isCompleted, readStatus } from '../api/index.ts';
import type {
  AppCondition,
  Application,
  ApplicationStatus,
  Cluster,
  OperationState,
  SyncOperation,
} from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { Renderer } from '../renderer/client.ts';
import { renderInputFor } from '../renderer/request.ts';
import { deleteResources, inventoryOf, sync, trackingTarget } from '../sync/index.ts';
import type { SyncResult } from '../sync/index.ts';
import { admit, identityLabel } from './admission.ts';
import type { ControllerCache } from './cache.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import type { EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import type { ControlClient } from '../kube/control.ts';
import type { ReconcileResult } from './manager.ts';
import { appendHistory, mayRetry, retryDelayMs } from './operation-policy.ts';
import { objectLimitViolations } from './limits.ts';
import { ServiceAccountCheck } from './sa-check.ts';
import { ConflictError, patchApplication, readApplication, writeStatus } from './applications.ts';
import type { RawApplication } from './applications.ts';
import { mergeConditions } from './status.ts';

export const RESOURCES_FINALIZER = 'resources-finalizer.argocd.argoproj.io';

export interface OperatorDeps {
  cache: ControllerCache;
  factory: DestinationClientFactory;
  control: ControlClient;
  renderer: Renderer;
  /** How long one sync wave may wait for health (sync/ default 5 min). */
  waitTimeoutMs?: number | undefined;
  events: EventSink;
  logger: Logger;
  metrics?: Metrics;
  now?: () => Date;
}

type Raw = RawApplication;

export class Operator {
  private readonly d: OperatorDeps;
  /** Syncs in flight, by Application key: terminate() aborts one. */
  private readonly running = new Map<string, AbortController>();
  private readonly saCheck: ServiceAccountCheck;

  constructor(deps: OperatorDeps) {
    this.d = deps;
    this.saCheck = new ServiceAccountCheck(deps.logger);
  }

  private now(): string {
    return (this.d.now?.() ?? new Date()).toISOString();
  }

  /** The Application as the API server has it now: an operation is never started from a stale cache. */
  private fresh(key: string): Promise<Raw | undefined> {
    return readApplication(this.d.control, key);
  }

  private stopping = false;

  /**
   * Shutdown (or lost leadership): abort the syncs in flight and leave their operations Running,
   * for the next controller to resume, rather than waiting minutes for waves to become healthy.
   */
  abandonAll(): void {
    this.stopping = true;
    for (const ac of this.running.values()) ac.abort();
  }

  /** `argocd app terminate-op` sets operationState.phase to Terminating: abort the sync in flight. */
  terminate(key: string): boolean {
    const ac = this.running.get(key);
    ac?.abort();
    return ac !== undefined;
  }

  async operate(key: string): Promise<ReconcileResult> {
    const raw = await this.fresh(key);
    if (!raw) return {};
    if (raw.metadata.deletionTimestamp) return this.finalize(key, raw);
    const status = readStatus(raw) ?? {};
    const state = status.operationState;
    const operation = raw['operation'] as Application['operation'];
    if (!operation) {
      // A Running state without an operation: the operation was removed (terminated) meanwhile.
      if (state?.phase === 'Running' || state?.phase === 'Terminating') {
        await this.complete(raw, state, { phase: 'Failed', message: 'Operation terminated' });
      }
      return {};
    }
    const generation = (raw.metadata as { generation?: number }).generation;
    if (
      state &&
      isCompleted(state.phase) &&
      state.finishedAt &&
      state.generation !== undefined &&
      state.generation === generation
    ) {
      // Finished before a restart, `operation` not yet cleared: clear it, do not run it again.
      await patchApplication(this.d.control, raw, { operation: null });
      return {};
    }
    let current: OperationState;
    if (state?.phase === 'Running' && isDeepStrictEqual(state.operation, operation)) {
      current = state; // resume after a restart, or the next retry attempt
    } else if (state?.phase === 'Terminating') {
      await this.complete(raw, state, { phase: 'Failed', message: 'Operation terminated' });
      return {};
    } else {
      current = {
        operation,
        phase: 'Running',
        message: 'Operation started',
        startedAt: this.now(),
        retryCount: 0,
        ...(generation !== undefined ? { generation } : {}),
      };
      const updated = await writeStatus(this.d.control, raw, {
        ...status,
        operationState: current,
      });
      raw.metadata.resourceVersion =
        (updated['metadata'] as { resourceVersion?: string }).resourceVersion ?? raw.metadata.resourceVersion;
      raw['status'] = updated['status'];
    }
    return this.runSync(key, raw, current);
  }

  /** Runs the sync with an abort that terminate() can pull from its first step (the render) on. */
  private async runSync(key: string, raw: Raw, state: OperationState): Promise<ReconcileResult> {
    const abort = new AbortController();
    this.running.set(key, abort);
    try {
      return await this.syncWith(key, raw, state, abort);
    } finally {
      this.running.delete(key);
    }
  }

  private async syncWith(
    key: string,
    raw: Raw,
    state: OperationState,
    abort: AbortController,
  ): Promise<ReconcileResult> {
    const ctx = admit(this.d.cache.controlState(), raw);
    const op: SyncOperation = state.operation.sync ?? {};
    if (!ctx.admitted && ctx.by === 'spec') {
      return this.complete(raw, state, { phase: 'Error', message: ctx.condition.message });
    }
    const log = this.d.logger.child({
      application: key,
      project: ctx.project.metadata.name,
      decision: ctx.identity.decision,
      serviceAccount: ctx.identity.serviceAccount ?? undefined,
    });
    const involved = involvedApplication(ctx.app);
    this.d.metrics?.identityDecisions.inc({ outcome: ctx.identity.decision });
    if (!ctx.admitted) {
      // spec §5: deny and error end the operation in Error, nothing written to the destination.
      const message = ctx.condition.message;
      log.warn(message);
      await this.d.events.record(involved, 'Warning', EVENT_REASON.ImpersonationDenied, message);
      return this.complete(raw, state, { phase: 'Error', message }, ctx.conditions);
    }
    const client = this.d.factory.forIdentity(ctx.cluster, ctx.actsAs);
    if (ctx.identity.decision === 'fallback') {
      log.info(ctx.identity.message);
      await this.d.events.record(involved, 'Warning', EVENT_REASON.ImpersonationFallback, ctx.identity.message);
    }
    const who = identityLabel(ctx.actsAs);
    if ((state.retryCount ?? 0) === 0)
      await this.d.events.record(involved, 'Normal', EVENT_REASON.OperationStarted, `Sync operation started as ${who}`);
    let rendered;
    try {
      rendered = await this.d.renderer.render(renderInputFor(ctx.app, { revision: op.revision }));
    } catch (err) {
      return this.failOrRetry(raw, state, `failed to render desired manifests: ${(err as Error).message}`, 'Error');
    }
    const objects = rendered.objects.map((o) => o.object);
    const violations = await objectLimitViolations(client, ctx, objects);
    if (violations.length > 0) return this.complete(raw, state, { phase: 'Failed', message: violations.join('; ') });
    // The impersonated ServiceAccount must still exist: now, and again before each later wave.
    const check = this.saCheck.guard(client, () => this.ownClient(ctx.cluster));
    const checkServiceAccount =
      check &&
      (async (): Promise<string | null> => {
        const missing = await check();
        if (missing !== null) {
          log.warn(missing);
          await this.d.events.record(involved, 'Warning', EVENT_REASON.ServiceAccountNotFound, missing);
        }
        return missing;
      });
    const missing = checkServiceAccount ? await checkServiceAccount() : null;
    if (missing !== null) return this.failOrRetry(raw, state, missing, 'Failed');
    // abandonAll() came while this operation was being prepared (render, checks): apply nothing.
    if (this.stopping) return this.leftRunning(key);
    // Terminated while it was being prepared: apply nothing, finish below.
    let outcome: SyncResult | undefined;
    if (!abort.signal.aborted) {
      log.info({ revision: rendered.revision, identity: who, dryRun: op.dryRun === true }, 'sync started');
      outcome = await sync(client, objects, inventoryOf(ctx.app), {
        ...trackingTarget(ctx.app, this.d.cache.namespace),
        ...(op.revision !== undefined ? { revision: op.revision } : {}),
        prune: op.prune === true,
        dryRun: op.dryRun === true,
        syncOptions: [...(ctx.app.spec.syncPolicy?.syncOptions ?? []), ...(op.syncOptions ?? [])],
        ...(op.resources ? { resources: op.resources } : {}),
        ...(this.d.waitTimeoutMs !== undefined ? { waitTimeoutMs: this.d.waitTimeoutMs } : {}),
        signal: abort.signal,
        ...(checkServiceAccount ? { beforeWave: checkServiceAccount } : {}),
      });
    }
    if (abort.signal.aborted && this.stopping) return this.leftRunning(key);
    if (abort.signal.aborted || !outcome) {
      // The Terminating write changed the Application: finish from what the API server has now.
      const now = await this.fresh(key);
      if (now) return this.complete(now, state, { phase: 'Failed', message: 'Operation terminated' });
      return {};
    }
    const syncResult = {
      revision: rendered.revision,
      source: ctx.app.spec.source,
      resources: outcome.resources,
      identity: who,
    };
    if (outcome.phase !== 'Succeeded')
      return this.failOrRetry(raw, { ...state, syncResult }, outcome.message, outcome.phase);
    log.info({ revision: rendered.revision, identity: who }, 'sync succeeded');
    return this.complete(
      raw,
      { ...state, syncResult },
      { phase: 'Succeeded', message: `successfully synced (all tasks run) as ${who}` },
      [],
      rendered.revision,
    );
  }

  /** Shutdown: the operation stays Running, for the next controller to resume. */
  private leftRunning(key: string): ReconcileResult {
    this.d.logger.info(
      { application: key },
      'controller stopping: operation left Running for the next controller to resume',
    );
    return {};
  }

  /** The controller's own client on the destination: only for the ServiceAccount check (sa-check.ts). */
  private ownClient(cluster: Cluster): DestinationClient {
    return this.d.factory.forIdentity(cluster, { controller: true });
  }

  /** syncPolicy.retry / operation.retry: stay Running and try again after the backoff, or end. */
  private async failOrRetry(
    raw: Raw,
    state: OperationState,
    message: string,
    phase: 'Failed' | 'Error',
  ): Promise<ReconcileResult> {
    const retries = state.retryCount ?? 0;
    if (mayRetry(state.operation.retry, retries)) {
      const delay = retryDelayMs(state.operation.retry, retries);
      const next: OperationState = {
        ...state,
        retryCount: retries + 1,
        message: `${message}. Retrying attempt #${retries + 1} at ${new Date(Date.now() + delay).toISOString()}.`,
      };
      const status = readStatus(raw) ?? {};
      await writeStatus(this.d.control, raw, { ...status, operationState: next });
      return { requeueAfterMs: delay };
    }
    return this.complete(raw, state, { phase, message });
  }

  /** Final operationState, history on success, SyncError condition on failure, then clear `operation`. */
  private async complete(
    raw: Raw,
    state: OperationState,
    end: { phase: 'Succeeded' | 'Failed' | 'Error'; message: string },
    extraConditions: AppCondition[] = [],
    revision?: string,
  ): Promise<ReconcileResult> {
    const now = this.now();
    const build = (status: ApplicationStatus): ApplicationStatus => {
      const finalState: OperationState = { ...state, phase: end.phase, message: end.message, finishedAt: now };
      let history = status.history;
      if (end.phase === 'Succeeded' && revision !== undefined && !state.operation.sync?.dryRun) {
        history = appendHistory(history, {
          revision,
          source: state.syncResult?.source,
          deployedAt: now,
          deployStartedAt: state.startedAt,
          initiatedBy: state.operation.initiatedBy,
        });
      }
      const others = (status.conditions ?? []).filter(
        (c) => c.type !== CONDITION.SyncError && !extraConditions.some((e) => e.type === c.type),
      );
      const conds =
        end.phase === 'Succeeded'
          ? others
          : [{ type: CONDITION.SyncError, message: end.message }, ...extraConditions, ...others];
      return {
        ...status,
        operationState: finalState,
        conditions: mergeConditions(status.conditions, conds, now),
        ...(history ? { history } : {}),
      };
    };
    // The work is done: a conflicting write (a refresh wrote status meanwhile) must not make it run
    // again, so re-read and write the outcome onto the newer object while it still is this operation.
    let current = raw;
    for (let attempt = 0; ; attempt++) {
      try {
        await writeStatus(this.d.control, current, build(readStatus(current) ?? {}));
        break;
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= 5) throw err;
        const fresh = await this.fresh(`${raw.metadata.namespace}/${raw.metadata.name}`);
        const st = fresh ? readStatus(fresh)?.operationState : undefined;
        if (!fresh || !st || st.startedAt !== state.startedAt || isCompleted(st.phase)) return {};
        current = fresh;
      }
    }
    await patchApplication(this.d.control, raw, { operation: null });
    this.d.metrics?.syncs.inc({ phase: end.phase });
    const involved = involvedApplication(raw as never);
    await this.d.events.record(
      involved,
      end.phase === 'Succeeded' ? 'Normal' : 'Warning',
      end.phase === 'Succeeded' ? EVENT_REASON.OperationCompleted : EVENT_REASON.OperationFailed,
      `Sync operation to ${revision ?? state.operation.sync?.revision ?? ''} ${end.phase === 'Succeeded' ? 'succeeded' : 'failed'}: ${end.message}`,
    );
    this.d.logger.info(
      { application: `${raw.metadata.namespace}/${raw.metadata.name}`, phase: end.phase },
      end.message,
    );
    return raw['operation'] !== undefined ? { operationCleared: true } : {};
  }

  /**
   * Deletion (spec §10): with the resources finalizer, delete the Application's resources as its
   * identity, honouring `enforced` (deny and error block the deletion, never fall back silently);
   * a failure is a DeletionError condition and a Warning event, and the finalizer stays.
   */
  private async finalize(key: string, raw: Raw): Promise<ReconcileResult> {
    const finalizers = raw.metadata.finalizers ?? [];
    if (!finalizers.includes(RESOURCES_FINALIZER)) return {};
    const involved = involvedApplication(raw as never);
    const ctx = admit(this.d.cache.controlState(), raw);
    const fail = async (message: string): Promise<ReconcileResult> => {
      this.d.logger.warn({ application: key }, `deletion failed: ${message}`);
      await this.d.events.record(involved, 'Warning', EVENT_REASON.DeletionFailed, message);
      const status = readStatus(raw) ?? {};
      const now = this.now();
      const conds = [
        { type: CONDITION.DeletionError, message },
        ...(status.conditions ?? []).filter((c) => c.type !== CONDITION.DeletionError),
      ];
      try {
        await writeStatus(this.d.control, raw, {
          ...status,
          conditions: mergeConditions(status.conditions, conds, now),
        });
      } catch {
        // the next attempt writes it
      }
      return { requeueAfterMs: 10_000 };
    };
    if (!ctx.admitted) return fail(ctx.condition.message);
    if (ctx.identity.decision === 'fallback') {
      this.d.logger.info({ application: key }, ctx.identity.message);
      await this.d.events.record(involved, 'Warning', EVENT_REASON.ImpersonationFallback, ctx.identity.message);
    }
    const result = await deleteResources(
      this.d.factory.forIdentity(ctx.cluster, ctx.actsAs),
      inventoryOf(ctx.app),
      trackingTarget(ctx.app, this.d.cache.namespace).appName,
    );
    if (!result.ok) return fail(result.message);
    if (result.remaining > 0) return { requeueAfterMs: 2_000 };
    await this.d.events.record(
      involved,
      'Normal',
      EVENT_REASON.ResourcesDeleted,
      `Deleted the Application's resources as ${identityLabel(ctx.actsAs)}`,
    );
    const rest = finalizers.filter((f) => f !== RESOURCES_FINALIZER);
    // JSON merge patch replaces the list; the resourceVersion makes it fail rather than drop a finalizer added meanwhile.
    await patchApplication(this.d.control, raw, {
      metadata: { finalizers: rest, resourceVersion: raw.metadata.resourceVersion },
    });
    return {};
  }
}
