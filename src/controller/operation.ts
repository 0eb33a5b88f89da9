// Runs an Application's operation (`operation.sync`, manual or automated) as its identity: the
// reads and writes around the decisions of operation-machine.ts, whose header lists the
// crash-safety rules. One step per call, top to bottom: admission → the identity's client → render
// (at the revision the operation's first step resolved) → project limits → the ServiceAccount
// still exists (sa-check.ts) → the sync's next step (sync-step.ts), its waves' health judged with
// argocd-cm's customizations (health.ts); where it stands is written and the worker is free until
// the next step. A deleted Application's resources finalizer is finalizer.ts's.
import type { Logger } from 'pino';
import { EVENT_REASON, readStatus } from '../api/index.ts';
import type {
  AppCondition,
  Cluster,
  Operation,
  OperationState,
  ResourceResult,
  SyncOperation,
  SyncResult,
} from '../api/index.ts';
import type { ControlClient } from '../kube/control.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import type { DestinationClient } from '../kube/types.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { Renderer } from '../renderer/client.ts';
import { renderApplication } from './render.ts';
import type { DestinationCapabilities } from './capabilities.ts';
import { SourceError } from '../source/errors.ts';
import { inventoryOf, trackingTarget } from '../sync/index.ts';
import { admit, identityLabel, madeFor } from './admission.ts';
import { ConflictError, patchApplication, readApplication, writeStatus } from './applications.ts';
import type { RawApplication } from './applications.ts';
import type { ControllerCache } from './cache.ts';
import type { EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import { Finalizer } from './finalizer.ts';
import type { ApplicationLimitsReader } from './app-limits.ts';
import type { HealthAssessors } from './health.ts';
import { objectLimitViolations } from './limits.ts';
import type { ReconcileResult } from './reconcile.ts';
import { afterAttempt, finishedStatus, nextStep, stillThisOperation } from './operation-machine.ts';
import type { Attempt, End } from './operation-machine.ts';
import { watchRefusals } from './refusals.ts';
import type { RightsCheck } from './rights.ts';
import { syncNeedsAfter } from './rights-needs.ts';
import { ServiceAccountCheck } from './sa-check.ts';
import { syncStep } from './sync-step.ts';
import { skipsReconcile } from './triggers.ts';
import type { Semantics } from './semantics.ts';
import { deletionApprovedSince } from './deletion-approval.ts';
import { windowVerdict } from './sync-windows.ts';

export { RESOURCES_FINALIZER } from './finalizer.ts';

/** The refusals a running sync keeps between its steps (only whether there were any matters much). */
const MAX_KEPT_REFUSALS = 20;

/**
 * The operation as a later step renders it: at the revisions its first step resolved (recorded in
 * syncResult), so a push meanwhile does not change a sync under way. The first step: as asked.
 */
function resolvedOperation(op: SyncOperation, done: SyncResult | undefined): SyncOperation {
  if (done?.revisions && done.revisions.length > 0) return { ...op, revisions: done.revisions };
  if (done?.revision) return { ...op, revision: done.revision };
  return op;
}

export interface OperatorDeps {
  cache: ControllerCache;
  factory: DestinationClientFactory;
  control: ControlClient;
  renderer: Renderer;
  /** How long one sync wave may wait for health (sync/ default 5 min). */
  waitTimeoutMs?: number | undefined;
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
  logger: Logger;
  metrics?: Metrics;
  now?: () => Date;
}

export class Operator {
  private readonly d: OperatorDeps;
  /** Syncs in flight, by Application key: terminate() aborts one. */
  private readonly running = new Map<string, AbortController>();
  private readonly saCheck: ServiceAccountCheck;
  private readonly finalizer: Finalizer;
  private stopping = false;

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

  /** `argocd app terminate-op` sets operationState.phase to Terminating: abort the sync in flight. */
  terminate(key: string): boolean {
    const ac = this.running.get(key);
    ac?.abort();
    return ac !== undefined;
  }

  async operate(key: string): Promise<ReconcileResult> {
    // Read from the API server, never the cache: an operation is not started from a stale object.
    let raw = await readApplication(this.d.control, key);
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
        return this.run(key, raw, step.state);
      case 'resume':
        return this.run(key, raw, step.state);
      case 'wait':
        return { requeueAfterMs: step.delayMs, operationRunning: true };
    }
  }

  /** One step, with an abort terminate() can pull from its start (the render) on; then what it leads to. */
  private async run(key: string, raw: RawApplication, state: OperationState): Promise<ReconcileResult> {
    const abort = new AbortController();
    this.running.set(key, abort);
    let attempt: Attempt;
    try {
      attempt = await this.attempt(key, raw, state, abort.signal);
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

  /** The reads and the sync step of one call, as the admitted identity; how it ended. */
  private async attempt(
    key: string,
    raw: RawApplication,
    state: OperationState,
    signal: AbortSignal,
  ): Promise<Attempt> {
    const op = state.operation.sync ?? {};
    const ctx = admit(this.d.cache.controlState(), raw);
    if (!ctx.admitted && ctx.by === 'spec')
      return { kind: 'failed', phase: 'Error', message: ctx.condition.message, retryable: false };
    const log = this.d.logger.child({
      application: key,
      project: ctx.project.metadata.name,
      decision: ctx.identity.decision,
      serviceAccount: ctx.identity.serviceAccount ?? undefined,
    });
    const involved = involvedApplication(ctx.app);
    this.d.metrics?.identityDecisions.inc({ outcome: ctx.identity.decision });
    // Sync windows hold the operation, still Running, before anything else (controller/sync.go SyncAppState).
    const window = windowVerdict(ctx.project, ctx.app, state, this.now());
    if (!window.canSync) return { kind: 'held', message: window.message };
    if (!ctx.admitted) {
      // spec §5: deny and error end the operation in Error, nothing written to the destination.
      const message = ctx.condition.message;
      log.warn(message);
      await this.d.events.record(involved, 'Warning', EVENT_REASON.ImpersonationDenied, message);
      return { kind: 'failed', phase: 'Error', message, retryable: false, conditions: ctx.conditions };
    }
    if (ctx.identity.decision === 'fallback') {
      log.info(ctx.identity.message);
      await this.d.events.record(involved, 'Warning', EVENT_REASON.ImpersonationFallback, ctx.identity.message);
    }
    const who = identityLabel(ctx.actsAs);
    // The first step of an attempt has no results yet; later steps continue it.
    const firstStep = state.syncResult === undefined;
    if ((state.retryCount ?? 0) === 0 && firstStep)
      await this.d.events.record(involved, 'Normal', EVENT_REASON.OperationStarted, `Sync operation started as ${who}`);
    let rendered;
    try {
      // The first step resolves the revisions (no reuse of refs listed earlier), as Argo CD's sync
      // does; every later step renders the commits it resolved: a push meanwhile does not change the sync.
      rendered = await renderApplication(this.d.renderer, ctx.app, {
        project: ctx.project,
        repositories: this.d.cache.repositoryState(),
        operation: resolvedOperation(op, state.syncResult),
        limits: this.d.limits.for(this.d.cache.settingsConfigMap()),
        ...(await this.d.capabilities?.for(this.d.factory.forIdentity(ctx.cluster, ctx.actsAs))),
      });
    } catch (err) {
      // Not the Application's fault (the renderer is starting, restarting, has no token yet).
      if (err instanceof SourceError && err.reason === 'RendererUnavailable')
        return { kind: 'renderer-unavailable', message: err.message };
      const message = `failed to render desired manifests: ${(err as Error).message}`;
      return { kind: 'failed', phase: 'Error', message, retryable: true };
    }
    const revision = rendered.multiSource ? rendered.revisions.join(', ') : (rendered.revisions[0] ?? '');
    // The one client of this attempt, naming the Application and the commit it syncs in every request.
    const identityClient = this.d.factory.forIdentity(ctx.cluster, ctx.actsAs, madeFor(ctx, revision));
    const watched = watchRefusals(identityClient);
    const client = watched.client;
    const objects = rendered.objects.map((o) => o.object);
    const violations = await objectLimitViolations(client, ctx, objects);
    if (violations.length > 0)
      return { kind: 'failed', phase: 'Failed', message: violations.join('; '), retryable: false };
    // The impersonated ServiceAccount must still exist: at each step, and before each later wave.
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
    if (missing !== null) return { kind: 'failed', phase: 'Failed', message: missing, retryable: true };
    // abandonAll() came while this attempt was being prepared (render, checks): apply nothing.
    if (this.stopping) return { kind: 'abandoned' };
    // Terminated while it was being prepared: apply nothing.
    if (signal.aborted) return { kind: 'terminated' };
    if (firstStep) log.info({ revision, identity: who, dryRun: op.dryRun === true }, 'sync started');
    const syncOptions = [...(ctx.app.spec.syncPolicy?.syncOptions ?? []), ...(op.syncOptions ?? [])];
    const semantics = this.d.semantics.for(ctx.app, this.d.cache.settingsConfigMap(), ctx.cluster);
    const managedNamespaceMetadata = ctx.app.spec.syncPolicy?.managedNamespaceMetadata;
    const outcome = await syncStep({
      client,
      desired: objects,
      inventory: inventoryOf(ctx.app),
      options: {
        ...trackingTarget(ctx.app, this.d.cache.namespace),
        ...semantics,
        // Read again at every step: an approval given while the sync holds lets it go on.
        pruneConfirmed: deletionApprovedSince(ctx.app, state.startedAt),
        ...(op.syncStrategy ? { syncStrategy: op.syncStrategy } : {}),
        ...(managedNamespaceMetadata ? { managedNamespaceMetadata } : {}),
        // Names generateName hooks: the commit the first step resolved, the same at every step.
        revision: rendered.revisions[0] ?? '',
        prune: op.prune === true,
        dryRun: op.dryRun === true,
        syncOptions,
        ...(op.resources ? { resources: op.resources } : {}),
        signal,
        health: this.d.health.for(this.d.cache.settingsConfigMap()),
        startedAt: new Date(state.startedAt),
        prior: state.syncResult?.resources,
        pruneWaves: state.progress?.pruneWaves,
      },
      progress: state.progress ?? {},
      waitTimeoutMs: this.d.waitTimeoutMs,
      ...(checkServiceAccount ? { beforeWave: checkServiceAccount } : {}),
      now: () => this.now().getTime(),
    });
    if (outcome.kind === 'aborted' || signal.aborted)
      return this.stopping ? { kind: 'abandoned' } : { kind: 'terminated' };
    // Argo CD's shapes: revision and source for one source, revisions and sources for spec.sources.
    const syncResult = (resources: ResourceResult[]): SyncResult => ({
      ...(rendered.multiSource
        ? { revisions: rendered.revisions, sources: rendered.sources }
        : { revision, ...(rendered.sources[0] ? { source: rendered.sources[0] } : {}) }),
      resources,
      identity: who,
      // What the namespace was given, so a later change of it shows as OutOfSync (Argo CD).
      ...(managedNamespaceMetadata ? { managedNamespaceMetadata } : {}),
    });
    // The refusals of earlier steps count too: a failure is often reported a step after its 403
    // (a SyncFail hook ran in between).
    const refusals = [...(state.progress?.refusals ?? []), ...watched.refusals];
    if (outcome.kind === 'running')
      return {
        kind: 'running',
        message: outcome.message,
        syncResult: syncResult(outcome.resources),
        progress: {
          ...outcome.progress,
          ...(refusals.length > 0 ? { refusals: [...new Set(refusals)].slice(0, MAX_KEPT_REFUSALS) } : {}),
        },
        delayMs: outcome.delayMs,
      };
    const result = outcome.result;
    if (result.phase !== 'Succeeded') {
      // Refused by RBAC: every right the identity lacks, named at once rather than one per retry.
      const destination = ctx.app.spec.destination?.namespace ?? '';
      const missing = await this.d.rights.afterRefusals(
        identityClient,
        refusals,
        () =>
          syncNeedsAfter(objects, result.comparison?.resources ?? [], {
            destination,
            prune: op.prune === true,
            syncOptions,
            inventory: ctx.app.status?.resources,
          }),
        { defaultNamespace: destination, onError: (e) => log.info(e) },
      );
      if (missing !== undefined) {
        log.warn(missing);
        await this.d.events.record(involved, 'Warning', EVENT_REASON.MissingRights, missing);
      }
      const message = missing !== undefined ? `${missing}; ${result.message}` : result.message;
      return {
        kind: 'failed',
        phase: result.phase,
        message,
        retryable: true,
        syncResult: syncResult(result.resources),
      };
    }
    log.info({ revision, identity: who }, 'sync succeeded');
    const message = `successfully synced (all tasks run) as ${who}`;
    return { kind: 'succeeded', revision, message, syncResult: syncResult(result.resources) };
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

  /** The controller's own client on the destination: only for the ServiceAccount check (sa-check.ts). */
  private ownClient(cluster: Cluster): DestinationClient {
    return this.d.factory.forIdentity(cluster, { controller: true });
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
        await writeStatus(this.d.control, current, status);
        break;
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= 5) throw err;
        const fresh = await readApplication(this.d.control, key);
        if (!fresh || !stillThisOperation(readStatus(fresh)?.operationState, state)) return {};
        current = fresh;
      }
    }
    await patchApplication(this.d.control, raw, { operation: null });
    this.d.metrics?.syncs.inc({ phase: end.phase });
    const succeeded = end.phase === 'Succeeded';
    await this.d.events.record(
      involvedApplication(raw),
      succeeded ? 'Normal' : 'Warning',
      succeeded ? EVENT_REASON.OperationCompleted : EVENT_REASON.OperationFailed,
      `Sync operation to ${revision ?? state.operation.sync?.revision ?? ''} ${succeeded ? 'succeeded' : 'failed'}: ${end.message}`,
    );
    this.d.logger.info({ application: key, phase: end.phase }, end.message);
    return raw['operation'] !== undefined ? { operationCleared: true } : {};
  }
}
