// Runs an Application's operation (`operation.sync`, manual or automated) and its deletion
// (finalizer), as the Application's identity. Crash-safe: operationState is recorded as Running
// (with startedAt and the Application's generation) before anything touches the destination; a
// Running state found after a restart is continued (applies are idempotent server-side applies),
// and a completed one of the current generation (its `operation` not yet cleared) is only cleared,
// never run again. A new operation, even an identical one (self-heal), bumps the generation.
// A sync as an impersonated ServiceAccount first checks that the ServiceAccount exists (sa-check.ts).
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { Application, Cluster, SyncOperation } from '../api/index.ts';
import { isRefusal } from '../kube/types.ts';
import { SourceError } from '../source/errors.ts';
import type { DestinationClient } from '../kube/types.ts';
import type { Metrics } from '../observability/metrics.ts';
import { identityLabel, prepare } from './context.ts';
import type { PrepareDeps } from './context.ts';
import type { EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import { instrumentClient } from './instrument.ts';
import type { KubeApi } from './kubeapi.ts';
import type { ReconcileResult } from './manager.ts';
import { appendHistory, isCompleted, mayRetry, retryDelayMs } from './operation-policy.ts';
import type { HistoryEntry, OperationState } from './operation-policy.ts';
import type { Ports, SyncOutcome } from './ports.ts';
import { ServiceAccountCheck } from './sa-check.ts';
import { appPath, CONDITION, ConflictError, mergeConditions, patchApplication, writeStatus } from './status.ts';
import type { AppCondition, ApplicationStatus } from './status.ts';

export const RESOURCES_FINALIZER = 'resources-finalizer.argocd.argoproj.io';

/** How soon an operation that could not reach the renderer tries again. */
const RENDERER_RETRY_MS = 5000;

export interface OperatorDeps extends PrepareDeps {
  api: KubeApi;
  ports: Ports;
  events: EventSink;
  logger: Logger;
  metrics?: Metrics;
  now?: () => Date;
}

type Raw = Record<string, unknown> & {
  metadata: {
    name: string;
    namespace: string;
    finalizers?: string[];
    deletionTimestamp?: string;
    resourceVersion?: string;
  };
};

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
  private async fresh(key: string): Promise<Raw | undefined> {
    const [ns, name] = [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)];
    const res = await this.d.api.request('GET', appPath(ns, name));
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new Error(`Application ${key}: read failed: ${res.status} ${res.text.slice(0, 200)}`);
    return res.body as Raw;
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
    const status = (raw['status'] ?? {}) as ApplicationStatus;
    const state = status.operationState as OperationState | undefined;
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
      await patchApplication(this.d.api, raw.metadata.namespace, raw.metadata.name, { operation: null });
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
      const updated = await writeStatus(this.d.api, raw, {
        ...status,
        operationState: current as unknown as Record<string, unknown>,
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
    const prepared = prepare(this.d, raw);
    const op: SyncOperation = state.operation.sync ?? {};
    if (!prepared.ok) {
      return this.complete(raw, state, { phase: 'Error', message: prepared.condition.message });
    }
    const { ctx } = prepared;
    const log = this.d.logger.child({
      application: key,
      project: ctx.project.metadata.name,
      decision: ctx.identity.decision,
      serviceAccount: ctx.identity.serviceAccount ?? undefined,
    });
    const involved = involvedApplication(ctx.app);
    this.d.metrics?.identityDecisions.inc({ outcome: ctx.identity.decision });
    if (isRefusal(ctx.client)) {
      // spec §5: deny and error end the operation in Error, nothing written to the destination.
      log.warn(ctx.client.message);
      await this.d.events.record(involved, 'Warning', 'ImpersonationDenied', ctx.client.message);
      return this.complete(raw, state, { phase: 'Error', message: ctx.client.message }, ctx.identityConditions);
    }
    if (ctx.identity.decision === 'fallback') {
      log.info(ctx.identity.message);
      await this.d.events.record(involved, 'Warning', 'ImpersonationFallback', ctx.identity.message);
    }
    const who = identityLabel(ctx.identity);
    if ((state.retryCount ?? 0) === 0)
      await this.d.events.record(involved, 'Normal', 'OperationStarted', `Sync operation started as ${who}`);
    let rendered;
    try {
      rendered = await this.d.ports.render.render(ctx.app, {
        revision: op.revision,
        sourceRepos: ctx.project.spec.sourceRepos ?? [],
      });
    } catch (err) {
      if (err instanceof SourceError && err.reason === 'RendererUnavailable')
        return this.waitForRenderer(raw, state, err);
      return this.failOrRetry(raw, state, `failed to render desired manifests: ${(err as Error).message}`, 'Error');
    }
    const violations = await this.d.ports.limits.checkObjects(
      ctx.client,
      ctx.project,
      ctx.app,
      ctx.cluster,
      rendered.objects,
    );
    if (violations.length > 0) return this.complete(raw, state, { phase: 'Failed', message: violations.join('; ') });
    // The impersonated ServiceAccount must still exist: now, and again before each later wave.
    const check = this.saCheck.guard(ctx.client, () => this.ownClient(ctx.cluster));
    const checkServiceAccount =
      check &&
      (async (): Promise<string | null> => {
        const missing = await check();
        if (missing !== null) {
          log.warn(missing);
          await this.d.events.record(involved, 'Warning', 'ServiceAccountNotFound', missing);
        }
        return missing;
      });
    const missing = checkServiceAccount ? await checkServiceAccount() : null;
    if (missing !== null) return this.failOrRetry(raw, state, missing, 'Failed');
    // abandonAll() came while this operation was being prepared (render, checks): apply nothing.
    if (this.stopping) return this.leftRunning(key);
    // Terminated while it was being prepared: apply nothing, finish below.
    let outcome: SyncOutcome | undefined;
    if (!abort.signal.aborted) {
      log.info({ revision: rendered.revision, identity: who, dryRun: op.dryRun === true }, 'sync started');
      outcome = await this.d.ports.sync.sync(
        ctx.client,
        ctx.app,
        rendered.objects,
        op,
        abort.signal,
        checkServiceAccount,
        ctx.health,
      );
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

  /**
   * The renderer could not be reached (starting, restarting, no token yet): not the Application's
   * fault, so the operation stays Running, says what it waits for, and is tried again shortly.
   */
  private async waitForRenderer(raw: Raw, state: OperationState, err: SourceError): Promise<ReconcileResult> {
    const message = `waiting for the renderer: ${err.message}`;
    this.d.logger.info({ application: `${raw.metadata.namespace}/${raw.metadata.name}` }, message);
    if (state.message !== message) {
      const status = (raw['status'] ?? {}) as ApplicationStatus;
      await writeStatus(this.d.api, raw, {
        ...status,
        operationState: { ...state, message } as unknown as Record<string, unknown>,
      });
    }
    return { requeueAfterMs: RENDERER_RETRY_MS };
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
    const client = this.d.factory.forIdentity(cluster, { controller: true });
    const m = this.d.metrics;
    return m ? instrumentClient(client, (code, kind) => m.apiRequests.inc({ code, identity: kind })) : client;
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
      const status = (raw['status'] ?? {}) as ApplicationStatus;
      await writeStatus(this.d.api, raw, { ...status, operationState: next as unknown as Record<string, unknown> });
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
      let history = status.history as HistoryEntry[] | undefined;
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
        operationState: finalState as unknown as Record<string, unknown>,
        conditions: mergeConditions(status.conditions, conds, now),
        ...(history ? { history: history as unknown as Array<Record<string, unknown>> } : {}),
      };
    };
    // The work is done: a conflicting write (a refresh wrote status meanwhile) must not make it run
    // again, so re-read and write the outcome onto the newer object while it still is this operation.
    let current = raw;
    for (let attempt = 0; ; attempt++) {
      try {
        await writeStatus(this.d.api, current, build((current['status'] ?? {}) as ApplicationStatus));
        break;
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= 5) throw err;
        const fresh = await this.fresh(`${raw.metadata.namespace}/${raw.metadata.name}`);
        const st = (fresh?.['status'] as ApplicationStatus | undefined)?.operationState as OperationState | undefined;
        if (!fresh || !st || st.startedAt !== state.startedAt || isCompleted(st.phase)) return {};
        current = fresh;
      }
    }
    await patchApplication(this.d.api, raw.metadata.namespace, raw.metadata.name, { operation: null });
    this.d.metrics?.syncs.inc({ phase: end.phase });
    const involved = involvedApplication(raw as never);
    await this.d.events.record(
      involved,
      end.phase === 'Succeeded' ? 'Normal' : 'Warning',
      end.phase === 'Succeeded' ? 'OperationCompleted' : 'OperationFailed',
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
    const prepared = prepare(this.d, raw);
    const fail = async (message: string): Promise<ReconcileResult> => {
      this.d.logger.warn({ application: key }, `deletion failed: ${message}`);
      await this.d.events.record(involved, 'Warning', 'DeletionFailed', message);
      const status = (raw['status'] ?? {}) as ApplicationStatus;
      const now = this.now();
      const conds = [
        { type: CONDITION.DeletionError, message },
        ...(status.conditions ?? []).filter((c) => c.type !== CONDITION.DeletionError),
      ];
      try {
        await writeStatus(this.d.api, raw, { ...status, conditions: mergeConditions(status.conditions, conds, now) });
      } catch {
        // the next attempt writes it
      }
      return { requeueAfterMs: 10_000 };
    };
    if (!prepared.ok) return fail(prepared.condition.message);
    const { ctx } = prepared;
    if (isRefusal(ctx.client)) return fail(ctx.client.message);
    if (ctx.identity.decision === 'fallback') {
      this.d.logger.info({ application: key }, ctx.identity.message);
      await this.d.events.record(involved, 'Warning', 'ImpersonationFallback', ctx.identity.message);
    }
    const result = await this.d.ports.sync.deleteResources(ctx.client, ctx.app);
    if (!result.ok) return fail(result.message);
    if (result.remaining > 0) return { requeueAfterMs: 2_000 };
    await this.d.events.record(
      involved,
      'Normal',
      'ResourcesDeleted',
      `Deleted the Application's resources as ${identityLabel(ctx.identity)}`,
    );
    const rest = finalizers.filter((f) => f !== RESOURCES_FINALIZER);
    // JSON merge patch replaces the list; the resourceVersion makes it fail rather than drop a finalizer added meanwhile.
    await this.d.api.call('PATCH', appPath(raw.metadata.namespace, raw.metadata.name), {
      body: { metadata: { finalizers: rest, resourceVersion: raw.metadata.resourceVersion } },
      contentType: 'application/merge-patch+json',
    });
    return {};
  }
}
