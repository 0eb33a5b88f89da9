// One step of an Application's operation, as its admitted identity (operation.ts runs it and
// writes what it leads to): admission → sync windows → render (at the revisions the first step
// resolved) → project limits → the ServiceAccount still exists (sa-check.ts) → the sync's next
// step (sync-step.ts), its waves' health judged with argocd-cm's customizations → how it ended
// (operation-machine.ts's Attempt), every missing right named when RBAC refused it.
import { toolSettingsOf } from '../api/tool-settings.ts';
import { EVENT_REASON } from '../api/index.ts';
import type { OperationState, ResourceResult, SyncOperation, SyncResult } from '../api/index.ts';
import { SourceError, SourceIntegrityFailed } from '../source/errors.ts';
import { inventoryOf, trackingTarget } from '../sync/index.ts';
import { admit, identityLabel, madeFor } from './admission.ts';
import type { RawApplication } from './applications.ts';
import { deletionApprovedSince } from './deletion-approval.ts';
import { involvedApplication } from './events.ts';
import { objectLimitViolations, unmanagedObjectRefusal } from './limits.ts';
import type { OperatorDeps } from './operation.ts';
import type { Attempt } from './operation-machine.ts';
import { watchRefusals } from './refusals.ts';
import { renderApplication } from './render.ts';
import { refuseUnreadableRepositories } from './repositories.ts';
import { syncNeedsAfter } from './rights-needs.ts';
import type { ServiceAccountCheck } from './sa-check.ts';
import { syncStep } from './sync-step.ts';
import { windowVerdict } from './sync-windows.ts';

/** What a step needs of the Operator that runs it. */
export interface AttemptEnv {
  d: OperatorDeps;
  saCheck: ServiceAccountCheck;
  /** abandonAll() was called: apply nothing more. */
  stopping: () => boolean;
  now: () => Date;
}

/** The refusals a running sync keeps between its steps (only whether there were any matters much). */
const MAX_KEPT_REFUSALS = 20;

/**
 * The operation as a later step renders it: at the revisions its first step resolved (recorded in
 * syncResult), so a push meanwhile does not change a sync under way. The first step: as asked.
 */
function resolvedOperation(op: SyncOperation, done: SyncResult | undefined, latest: boolean): SyncOperation {
  if (done?.revisions && done.revisions.length > 0) return { ...op, revisions: done.revisions };
  if (done?.revision) return { ...op, revision: done.revision };
  // retry.refresh: a retry renders the sources' target revisions again (Argo CD empties the
  // operation's revision and revisions when it starts the retry).
  if (latest) {
    const { revision: _r, revisions: _rs, ...rest } = op;
    return rest;
  }
  return op;
}

/** The reads and the sync step of one call, as the admitted identity; how it ended. */
export async function attemptStep(
  env: AttemptEnv,
  key: string,
  raw: RawApplication,
  state: OperationState,
  signal: AbortSignal,
): Promise<Attempt> {
  const op = state.operation.sync ?? {};
  const ctx = admit(env.d.cache.controlState(), raw);
  if (!ctx.admitted && ctx.by === 'spec')
    return { kind: 'failed', phase: 'Error', message: ctx.condition.message, retryable: false };
  const log = env.d.logger.child({
    application: key,
    project: ctx.project.metadata.name,
    decision: ctx.identity.decision,
    serviceAccount: ctx.identity.serviceAccount ?? undefined,
  });
  const involved = involvedApplication(ctx.app);
  // After the refresh's "Initiated automated sync", when a refresh started this operation.
  await env.d.eventOrder?.after(key);
  env.d.metrics?.identityDecisions.inc({ outcome: ctx.identity.decision });
  // Sync windows hold the operation, still Running, before anything else (controller/sync.go SyncAppState).
  const window = windowVerdict(ctx.project, ctx.app, state, env.now());
  if (!window.canSync) return { kind: 'held', message: window.message };
  if (!ctx.admitted) {
    // spec §5: deny and error end the operation in Error, nothing written to the destination.
    const message = ctx.condition.message;
    log.warn(message);
    await env.d.events.record(involved, 'Warning', EVENT_REASON.ImpersonationDenied, message);
    return { kind: 'failed', phase: 'Error', message, retryable: false, conditions: ctx.conditions };
  }
  if (ctx.identity.decision === 'fallback') {
    log.info(ctx.identity.message);
    await env.d.events.record(involved, 'Warning', EVENT_REASON.ImpersonationFallback, ctx.identity.message);
  }
  const who = identityLabel(ctx.actsAs);
  // The first step of an attempt has no results yet; later steps continue it.
  const firstStep = state.syncResult === undefined;
  const retries = state.retryCount ?? 0;
  if (retries === 0 && firstStep)
    await env.d.events.record(involved, 'Normal', EVENT_REASON.OperationStarted, `Sync operation started as ${who}`);
  const latest = retries > 0 && state.operation.retry?.refresh === true;
  // Argo CD's log line as a retry begins (appcontroller.go processRequestedAppOperation).
  if (retries > 0 && firstStep)
    log.info(`Retrying operation${latest ? ' with latest revisions' : ''}. Attempt #${retries}`);
  let rendered;
  try {
    // The first step resolves the revisions (no reuse of refs listed earlier), as Argo CD's sync
    // does; every later step renders the commits it resolved: a push meanwhile does not change the sync.
    const repositories = env.d.cache.repositoryState();
    const operation = resolvedOperation(op, state.syncResult, latest);
    refuseUnreadableRepositories(ctx.app, operation, repositories, ctx.project);
    rendered = await renderApplication(env.d.renderer, ctx.app, {
      project: ctx.project,
      controllerNamespace: env.d.cache.namespace,
      repositories,
      operation,
      localManifests: op.manifests,
      limits: env.d.limits.for(env.d.cache.settingsConfigMap()),
      tools: toolSettingsOf(env.d.cache.settingsConfigMap()),
      ...(await env.d.capabilities?.for(env.d.factory.forIdentity(ctx.cluster, ctx.actsAs))),
    });
  } catch (err) {
    // Not the Application's fault (the renderer is starting, restarting, has no token yet).
    if (err instanceof SourceError && err.reason === 'RendererUnavailable')
      return { kind: 'renderer-unavailable', message: err.message };
    // Argo CD refuses the sync on the refresh's ComparisonErrors, named as FormatAppConditions does.
    if (err instanceof SourceIntegrityFailed) {
      const message = err.messages.map((m) => `ComparisonError: ${m}`).join(';');
      return { kind: 'failed', phase: 'Error', message, retryable: true };
    }
    const message = `failed to render desired manifests: ${(err as Error).message}`;
    return { kind: 'failed', phase: 'Error', message, retryable: true };
  }
  const revision = rendered.multiSource ? rendered.revisions.join(', ') : (rendered.revisions[0] ?? '');
  // The one client of this attempt, naming the Application and the commit it syncs in every request.
  const identityClient = env.d.factory.forIdentity(ctx.cluster, ctx.actsAs, madeFor(ctx, revision));
  const watched = watchRefusals(identityClient);
  const client = watched.client;
  const objects = rendered.objects.map((o) => o.object);
  // A namespace-scoped cluster's refusal is a ComparisonError in Argo CD, which stops the sync so.
  const unmanaged = await unmanagedObjectRefusal(client, ctx, objects);
  if (unmanaged) return { kind: 'failed', phase: 'Error', message: `ComparisonError: ${unmanaged}`, retryable: false };
  const violations = await objectLimitViolations(client, ctx, objects);
  if (violations.length > 0)
    return { kind: 'failed', phase: 'Failed', message: violations.join('; '), retryable: false };
  // The impersonated ServiceAccount must still exist: at each step, and before each later wave.
  const check = env.saCheck.guard(client, () => env.d.factory.forIdentity(ctx.cluster, { controller: true }));
  const checkServiceAccount =
    check &&
    (async (): Promise<string | null> => {
      const missing = await check();
      if (missing !== null) {
        log.warn(missing);
        await env.d.events.record(involved, 'Warning', EVENT_REASON.ServiceAccountNotFound, missing);
      }
      return missing;
    });
  const missing = checkServiceAccount ? await checkServiceAccount() : null;
  if (missing !== null) return { kind: 'failed', phase: 'Failed', message: missing, retryable: true };
  // abandonAll() came while this attempt was being prepared (render, checks): apply nothing.
  if (env.stopping()) return { kind: 'abandoned' };
  // Terminated while it was being prepared: apply nothing.
  if (signal.aborted) return { kind: 'terminated' };
  if (firstStep) log.info({ revision, identity: who, dryRun: op.dryRun === true }, 'sync started');
  const syncOptions = [...(ctx.app.spec.syncPolicy?.syncOptions ?? []), ...(op.syncOptions ?? [])];
  const semantics = env.d.semantics.for(ctx.app, env.d.cache.settingsConfigMap(), ctx.cluster);
  const managedNamespaceMetadata = ctx.app.spec.syncPolicy?.managedNamespaceMetadata;
  const outcome = await syncStep({
    client,
    desired: objects,
    inventory: inventoryOf(ctx.app),
    options: {
      ...trackingTarget(ctx.app, env.d.cache.namespace),
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
      health: env.d.health.for(env.d.cache.settingsConfigMap()),
      startedAt: new Date(state.startedAt),
      prior: state.syncResult?.resources,
      pruneWaves: state.progress?.pruneWaves,
    },
    progress: state.progress ?? {},
    waitTimeoutMs: env.d.waitTimeoutMs,
    waveDelayMs: env.d.waveDelayMs,
    ...(checkServiceAccount ? { beforeWave: checkServiceAccount } : {}),
    now: () => env.now().getTime(),
  });
  if (outcome.kind === 'aborted' || signal.aborted)
    return env.stopping() ? { kind: 'abandoned' } : { kind: 'terminated' };
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
    const missing = await env.d.rights.afterRefusals(
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
      await env.d.events.record(involved, 'Warning', EVENT_REASON.MissingRights, missing);
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
  // gitops-engine's words ("successfully synced (all tasks run)", or "(no more tasks)" when
  // nothing was left to apply), and whom the sync ran as.
  const message = `${result.message} as ${who}`;
  return { kind: 'succeeded', revision, message, syncResult: syncResult(result.resources) };
}
