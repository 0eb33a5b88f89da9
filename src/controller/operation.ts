// Runs an Application's operation (`operation.sync`, manual or automated) as its identity: the
// reads and writes around the decisions of operation-machine.ts, whose header lists the
// crash-safety rules. One step per call: what the operation asks now (nextStep) → the step itself
// (operation-attempt.ts: admission, render, checks, the sync's next step, as the identity) → what
// it leads to (afterAttempt), written, and the worker is free until the next step; at the end the
// final status, events and metrics (finish). A deleted Application's resources finalizer is
// finalizer.ts's.
import type { Logger } from 'pino';
import { EVENT_REASON, readStatus } from '../api/index.ts';
import type { AppCondition, Operation, OperationState } from '../api/index.ts';
import type { ControlClient } from '../kube/control.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import type { Metrics } from '../observability/metrics.ts';
import { destServerOf, purposeOf } from './argocd-metrics.ts';
import type { Renderer } from '../renderer/client.ts';
import type { DestinationCapabilities } from './capabilities.ts';
import { ConflictError, patchApplication, readApplication, writeStatus } from './applications.ts';
import type { RawApplication } from './applications.ts';
import type { ControllerCache } from './cache.ts';
import type { EventOrder, EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import { Finalizer } from './finalizer.ts';
import type { ApplicationLimitsReader } from './app-limits.ts';
import type { HealthAssessors } from './health.ts';
import type { ReconcileResult } from './reconcile.ts';
import { attemptStep } from './operation-attempt.ts';
import { afterAttempt, finishedStatus, nextStep, stillThisOperation, TERMINATED } from './operation-machine.ts';
import type { Attempt, End } from './operation-machine.ts';
import type { RightsCheck } from './rights.ts';
import { ServiceAccountCheck } from './sa-check.ts';
import { hasOperationWork, skipsReconcile } from './triggers.ts';
import { terminateHooks } from './terminate-hooks.ts';
import type { Semantics } from './semantics.ts';
import type { OperationHandoff } from './handoff.ts';

export { RESOURCES_FINALIZER } from './finalizer.ts';

export interface OperatorDeps {
  cache: ControllerCache;
  factory: DestinationClientFactory;
  control: ControlClient;
  renderer: Renderer;
  /** How long one sync wave may wait for health (sync/ default 5 min). */
  waitTimeoutMs?: number | undefined;
  /** argocd-cmd-params-cm `controller.sync.wave.delay.seconds`: the pause after each wave but the last. */
  waveDelayMs?: number | undefined;
  /** argocd-cmd-params-cm `controller.sync.timeout.seconds`: a sync running longer is terminated (0: never). */
  syncTimeoutMs?: number | undefined;
  /** argocd-cm's health customizations, as the assessor each sync's waves are judged by. */
  health: HealthAssessors;
  /** argocd-cm's limits on each Application's render. */
  limits: ApplicationLimitsReader;
  /** The destination's versions for Helm's .Capabilities, read as the Application's identity. */
  capabilities?: DestinationCapabilities;
  /** Which rights the identity lacks, asked after a refused sync. */
  rights: RightsCheck;
  /** Tracking, ignoreDifferences, compare options and the resource filter (semantics.ts). */
  semantics: Semantics;
  events: EventSink;
  /** The first events of an operation wait for an automated sync's "Initiated" (reconciler.ts). */
  eventOrder?: EventOrder;
  logger: Logger;
  metrics?: Metrics;
  /** Argo CD's own application controller, when it runs against the same Applications: no operation then. */
  argoController?: { running(): string | undefined } | undefined;
  /** The API server's answers to the writes that started automated syncs (handoff.ts). */
  handoff?: OperationHandoff | undefined;
  now?: () => Date;
}

export class Operator {
  private readonly d: OperatorDeps;
  /** Syncs in flight, by Application key: terminate() aborts one. */
  private readonly running = new Map<string, AbortController>();
  private readonly saCheck: ServiceAccountCheck;
  private readonly finalizer: Finalizer;
  private stopping = false;
  /** Keys whose shard went elsewhere while they ran (abandon()). */
  private readonly abandoned = new Set<(key: string) => boolean>();

  constructor(deps: OperatorDeps) {
    this.d = deps;
    this.saCheck = new ServiceAccountCheck(deps.logger);
    this.finalizer = new Finalizer(deps);
  }

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  /**
   * Shutdown (or lost leadership): abort the syncs in flight and leave their operations Running,
   * for the next controller to resume, rather than waiting minutes for waves to become healthy.
   */
  abandonAll(): void {
    this.stopping = true;
    for (const ac of this.running.values()) ac.abort();
  }

  /**
   * A shard went to another replica: abort these keys' syncs in flight and leave their operations
   * Running for the new owner to resume (as abandonAll, for some keys). Until forgiven, a step of
   * theirs that was still being prepared applies nothing.
   */
  abandon(matches: (key: string) => boolean): void {
    this.abandoned.add(matches);
    this.d.handoff?.forget(matches);
    for (const [key, ac] of this.running) if (matches(key)) ac.abort();
  }

  /** The abandoned keys' handlers have ended: a later owner term may act on them again. */
  forgive(matches: (key: string) => boolean): void {
    this.abandoned.delete(matches);
    // A refresh that was still under way when the shard went may have handed over since.
    this.d.handoff?.forget(matches);
  }

  /** `argocd app terminate-op` sets operationState.phase to Terminating: abort the sync in flight. */
  terminate(key: string): boolean {
    const ac = this.running.get(key);
    ac?.abort();
    return ac !== undefined;
  }

  async operate(key: string): Promise<ReconcileResult> {
    try {
      return await this.operateOnce(key);
    } finally {
      // What a refresh handed over while this ran is spent (handoff.ts).
      this.d.handoff?.ended(key);
    }
  }

  private async operateOnce(key: string): Promise<ReconcileResult> {
    // Argo CD's controller runs the operations meanwhile; the refresh's condition says so.
    if (this.d.argoController?.running()) return {};
    const cached = this.d.cache.app(key);
    // Every run takes what a refresh handed over for it, or nothing (handoff.ts), before anything else.
    const handed = this.d.handoff?.take(key, cached);
    // Nothing to do by the watch's account (the step that queued this again finished it meanwhile):
    // no read. Were the cache behind, the event that brings the work queues the operation again.
    if (cached && !hasOperationWork(cached)) return {};
    // Read from the API server, never the cache: an operation is not started from a stale object.
    // The answer to this controller's own write that set it is such a read (handoff.ts).
    let raw = handed ?? (await readApplication(this.d.control, key));
    if (!raw || skipsReconcile(raw)) return {};
    if (raw.metadata.deletionTimestamp) return this.finalizer.finalize(key, raw);
    const status = readStatus(raw) ?? {};
    const step = nextStep(
      {
        operation: raw['operation'] as Operation | undefined,
        state: status.operationState,
        generation: raw.metadata.generation,
      },
      this.now().toISOString(),
      this.d.syncTimeoutMs,
    );
    switch (step.kind) {
      case 'none':
        return {};
      case 'clear':
        await patchApplication(this.d.control, raw, { operation: null });
        return {};
      case 'finish':
        return this.finish(raw, step.state, step.end);
      case 'start':
        raw = await writeStatus(this.d.control, raw, { ...status, operationState: step.state });
        return this.withinTimeout(await this.run(key, raw, step.state), step.state);
      case 'resume':
        return this.withinTimeout(await this.run(key, raw, step.state), step.state);
      case 'wait':
        return this.withinTimeout({ requeueAfterMs: step.delayMs, operationRunning: true }, status.operationState);
      case 'timeout': {
        const timeout = this.d.syncTimeoutMs ?? 0;
        this.d.logger.info(
          { application: key },
          `Terminating in-progress operation due to timeout. Started at: ${step.state.startedAt}, timeout: ${timeout / 1000}s`,
        );
        raw = await writeStatus(this.d.control, raw, { ...status, operationState: step.state });
        return this.finish(raw, step.state, step.end);
      }
    }
  }

  /** The next step of a Running operation comes no later than its sync timeout (Argo CD caps it so too). */
  private withinTimeout(result: ReconcileResult, state: OperationState | undefined): ReconcileResult {
    const timeout = this.d.syncTimeoutMs ?? 0;
    if (timeout <= 0 || !state || result.requeueAfterMs === undefined) return result;
    const left = Date.parse(state.startedAt) + timeout - this.now().getTime() + 1;
    return { ...result, requeueAfterMs: Math.max(1, Math.min(result.requeueAfterMs, left)) };
  }

  /** One step, with an abort terminate() can pull from its start (the render) on; then what it leads to. */
  private async run(key: string, raw: RawApplication, state: OperationState): Promise<ReconcileResult> {
    const abort = new AbortController();
    this.running.set(key, abort);
    let attempt: Attempt;
    try {
      attempt = await attemptStep(
        {
          d: this.d,
          saCheck: this.saCheck,
          stopping: () => this.stopping || [...this.abandoned].some((m) => m(key)),
          now: () => this.now(),
        },
        key,
        raw,
        state,
        abort.signal,
      );
    } finally {
      this.running.delete(key);
    }
    const next = afterAttempt(state, attempt, this.now().getTime());
    switch (next.kind) {
      case 'leave':
        this.d.logger.info(
          { application: key },
          'controller stopping: operation left Running for the next controller to resume',
        );
        return {};
      case 'retry':
        await this.writeStepState(key, raw, state, next.state);
        return { requeueAfterMs: next.delayMs, operationRunning: true };
      case 'continue':
        if (next.write) await this.writeStepState(key, raw, state, next.state);
        return { requeueAfterMs: next.delayMs, operationRunning: true };
      case 'wait':
        this.d.logger.info({ application: key }, next.state.message);
        if (next.write) await this.writeStepState(key, raw, state, next.state);
        return { requeueAfterMs: next.delayMs, operationRunning: true };
      case 'finish': {
        // A Terminating write changed the Application: finish from what the API server has now.
        const target = next.reread ? await readApplication(this.d.control, key) : raw;
        return target ? this.finish(target, next.state, next.end, next.conditions, next.revision) : {};
      }
    }
  }

  /**
   * Writes where the operation stands after a step. What the step applied is done: a conflicting
   * write (a refresh that was under way when the operation began wrote status meanwhile) must not
   * lose its results, so re-read and write them onto the newer object while it still is this
   * operation (as finish() does); the next step then starts from them.
   */
  private async writeStepState(
    key: string,
    raw: RawApplication,
    before: OperationState,
    state: OperationState,
  ): Promise<void> {
    let current = raw;
    for (let attempt = 0; ; attempt++) {
      try {
        await writeStatus(this.d.control, current, { ...(readStatus(current) ?? {}), operationState: state });
        return;
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= 5) throw err;
        const fresh = await readApplication(this.d.control, key);
        if (!fresh) return;
        const now = readStatus(fresh)?.operationState;
        // Terminating meanwhile: left as it is, for the next step to finish.
        if (!stillThisOperation(now, before) || now?.phase !== 'Running') return;
        current = fresh;
      }
    }
  }

  /** Writes the final status (finishedStatus), clears `operation`, counts and records how it ended. */
  private async finish(
    raw: RawApplication,
    state: OperationState,
    end: End,
    conditions: AppCondition[] = [],
    revision?: string,
  ): Promise<ReconcileResult> {
    const now = this.now().toISOString();
    const key = `${raw.metadata.namespace}/${raw.metadata.name}`;
    // Terminated: no hook keeps the hook finalizer, and the running ones are deleted (gitops-engine).
    if (end === TERMINATED) await terminateHooks(this.d, raw, state);
    // The work is done: a conflicting write (a refresh wrote status meanwhile) must not make it run
    // again, so re-read and write the outcome onto the newer object while it still is this operation.
    let current = raw;
    for (let attempt = 0; ; attempt++) {
      try {
        const limit = (current['spec'] as { revisionHistoryLimit?: unknown } | undefined)?.revisionHistoryLimit;
        const historyLimit = typeof limit === 'number' ? limit : undefined;
        const status = finishedStatus(readStatus(current) ?? {}, state, end, {
          conditions,
          revision,
          now,
          historyLimit,
        });
        // Without a status subresource `operation` goes in the same write (as Argo CD's
        // controller finishes), so no crash can leave a finished operation set.
        current = await writeStatus(this.d.control, current, status, { clearOperation: true });
        break;
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= 5) throw err;
        const fresh = await readApplication(this.d.control, key);
        if (!fresh || !stillThisOperation(readStatus(fresh)?.operationState, state)) return {};
        current = fresh;
      }
    }
    if (current['operation'] !== undefined) await patchApplication(this.d.control, current, { operation: null });
    this.d.metrics?.syncs.inc({ phase: end.phase });
    if (this.d.metrics && ['Succeeded', 'Failed', 'Error'].includes(end.phase)) {
      // Argo CD's IncSync and IncAppSyncDuration: completed operations, whole seconds as it counts them.
      const p = purposeOf(raw);
      const app = { namespace: p.namespace, name: p.name, project: p.project };
      const destServer = destServerOf(this.d.cache, raw);
      this.d.metrics.argocd.appSync.inc({
        ...app,
        dest_server: destServer,
        phase: end.phase,
        dry_run: String(p.dryRun),
      });
      const seconds = Math.floor(Date.parse(now) / 1000) - Math.floor(Date.parse(state.startedAt) / 1000);
      if (Number.isFinite(seconds))
        this.d.metrics.argocd.appSyncDuration.inc({ ...app, dest_server: destServer }, Math.max(0, seconds));
    }
    const succeeded = end.phase === 'Succeeded';
    await this.d.events.record(
      involvedApplication(raw),
      succeeded ? 'Normal' : 'Warning',
      EVENT_REASON.OperationCompleted,
      completedMessage(state, end, revision),
    );
    this.d.logger.info({ application: key, phase: end.phase }, end.message);
    return raw['operation'] !== undefined ? { operationCleared: true } : {};
  }
}

/**
 * Argo CD's OperationCompleted message (appcontroller.go setOperationState): "Sync operation" (or
 * "Partial sync operation" when it names resources), "to <revision>" when the sync has a result
 * (a multi-source one's revisions joined by ","), then "succeeded" or "failed: <message>".
 */
export function completedMessage(state: OperationState, end: End, revision?: string): string {
  const words = [(state.operation.sync?.resources?.length ?? 0) > 0 ? 'Partial sync operation' : 'Sync operation'];
  const result = state.syncResult;
  const rev = result?.revisions?.length ? result.revisions.join(',') : (result?.revision ?? revision);
  if (result || revision !== undefined) words.push('to', rev ?? '');
  if (end.phase === 'Succeeded') words.push('succeeded');
  else words.push('failed:', end.message);
  return words.join(' ');
}
