// The refresh of one Application (Argo CD's "comparison"), top to bottom: admission
// (admission.ts) → the one destination client for its identity → its source rendered by the
// renderer process → the project's limits per object → the server-side diff as that identity, its
// health assessed with argocd-cm's customizations (sync/compare.ts, health.ts) → status and events.
// Sets `operation` for an automated sync when Argo CD's rules say so; the operation worker runs it
// (operation.ts).
//
// A hard refresh (`argocd.argoproj.io/refresh: hard`) asks everything again: the renderer renders
// without its answer cache (Argo CD: the repo-server's manifest cache), and the comparison sends
// every dry-run and reads every live object from the API server as the identity, rather than
// reusing a remembered dry-run answer or the live-object watches. So a right revoked meanwhile, or
// a change a dry-run sees but the watch does not (a CRD's new default), shows at once.
import type { Logger } from 'pino';
import { CONDITION, EVENT_REASON, readStatus } from '../api/index.ts';
import type { AppCondition, Application, ApplicationStatus, SyncStatus } from '../api/index.ts';
import type { ControlClient } from '../kube/control.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { Renderer } from '../renderer/client.ts';
import { renderInputFor } from '../renderer/request.ts';
import { compare, inventoryOf, resourceStatusOf, trackingTarget } from '../sync/index.ts';
import type { HealthAssessor } from '../sync/index.ts';
import { admit, identityLabel } from './admission.ts';
import type { Admission } from './admission.ts';
import { patchApplication, writeStatus } from './applications.ts';
import type { ControllerCache } from './cache.ts';
import type { EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import type { ApplicationLimitsReader } from './app-limits.ts';
import type { HealthAssessors } from './health.ts';
import { objectLimitViolations } from './limits.ts';
import type { ReconcileResult } from './reconcile.ts';
import { REFRESH_ANNOTATION } from './triggers.ts';
import { autoSyncDecision } from './operation-policy.ts';
import { mergeConditions, shouldWriteStatus } from './status.ts';

export interface ReconcilerDeps {
  cache: ControllerCache;
  factory: DestinationClientFactory;
  control: ControlClient;
  renderer: Renderer;
  events: EventSink;
  logger: Logger;
  metrics?: Metrics;
  /** Milliseconds between periodic refreshes (timeout.reconciliation), for the status write rule. */
  refreshIntervalMs: () => number;
  /** argocd-cm's health customizations, as the assessor each comparison uses. */
  health: HealthAssessors;
  /** argocd-cm's limits on each Application's render. */
  limits: ApplicationLimitsReader;
  now?: () => Date;
}

type Admitted = Extract<Admission, { admitted: true }>;

/** Conditions owned by the refresh; others (SyncError, DeletionError) are kept as the operation left them. */
const REFRESH_CONDITIONS = new Set<string>([
  CONDITION.InvalidSpecError,
  CONDITION.ComparisonError,
  CONDITION.ImpersonationInfo,
  CONDITION.ImpersonationWarning,
  CONDITION.UnknownError,
]);

function carriedConditions(prev: ApplicationStatus | undefined): AppCondition[] {
  return (prev?.conditions ?? []).filter((c) => !REFRESH_CONDITIONS.has(c.type));
}

function comparedTo(app: Application): NonNullable<SyncStatus['comparedTo']> {
  return {
    ...(app.spec.source ? { source: app.spec.source } : {}),
    ...(app.spec.sources ? { sources: app.spec.sources } : {}),
    destination: app.spec.destination ?? {},
  };
}

export class Reconciler {
  private readonly d: ReconcilerDeps;

  constructor(deps: ReconcilerDeps) {
    this.d = deps;
  }

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  /** How this refresh assesses health: argocd-cm's customizations as the cache has them now. */
  private assessor(): HealthAssessor {
    return this.d.health.for(this.d.cache.settingsConfigMap());
  }

  async refresh(key: string): Promise<ReconcileResult> {
    const raw = this.d.cache.app(key);
    if (!raw) return {};
    const prev = readStatus(raw);
    const annotations = (raw.metadata as { annotations?: Record<string, string> }).annotations ?? {};
    const refreshKind = annotations[REFRESH_ANNOTATION];
    const now = this.now().toISOString();
    const admission = admit(this.d.cache.controlState(), raw);
    const decided = admission.admitted || admission.by === 'identity' ? admission : undefined;
    const log = this.d.logger.child({
      application: key,
      ...(decided
        ? {
            project: decided.project.metadata.name,
            decision: decided.identity.decision,
            serviceAccount: decided.identity.serviceAccount ?? undefined,
          }
        : {}),
    });
    if (decided) this.d.metrics?.identityDecisions.inc({ outcome: decided.identity.decision });
    let next: ApplicationStatus;
    let result: ReconcileResult = {};
    if (admission.admitted) {
      if (admission.identity.decision === 'fallback') log.info(admission.identity.message);
      ({ status: next, result } = await this.compare(
        admission,
        this.assessor(),
        log,
        prev,
        refreshKind === 'hard',
        now,
      ));
    } else {
      // spec §5: the diff applies the same table as the sync; nothing refused is reported Synced.
      log.warn({ condition: admission.condition.type }, admission.condition.message);
      const own = admission.by === 'identity' ? admission.conditions : [];
      next = {
        ...prev,
        sync: { status: 'Unknown', ...(admission.app ? { comparedTo: comparedTo(admission.app) } : {}) },
        health: { status: 'Unknown' },
        reconciledAt: now,
        conditions: mergeConditions(prev?.conditions, [admission.condition, ...own, ...carriedConditions(prev)], now),
      };
    }
    if (shouldWriteStatus(prev, next, this.now().getTime(), this.d.refreshIntervalMs())) {
      await writeStatus(this.d.control, raw, next);
      // A new error condition is worth an event (once: unchanged conditions keep their lastTransitionTime).
      for (const c of next.conditions ?? []) {
        const isNew = !(prev?.conditions ?? []).some((p) => p.type === c.type && p.message === c.message);
        if (isNew && (c.type === CONDITION.ComparisonError || c.type === CONDITION.InvalidSpecError))
          await this.d.events.record(involvedApplication(raw), 'Warning', c.type, c.message);
      }
    }
    if (result.startOperation) {
      await patchApplication(this.d.control, raw, { operation: result.startOperation });
      await this.d.events.record(
        involvedApplication(raw),
        'Normal',
        EVENT_REASON.OperationStarted,
        `Initiated automated sync to '${result.startOperation.sync?.revision ?? ''}'`,
      );
      delete result.startOperation;
    }
    // A deleting Application's finalizer runs in the operation queue; a refresh (a project or
    // settings change) may have made it possible again.
    if ((raw.metadata as { deletionTimestamp?: string }).deletionTimestamp) result.operation = true;
    if (refreshKind !== undefined) {
      // Argo CD removes the refresh annotation once the refresh it asked for is done.
      await patchApplication(this.d.control, raw, { metadata: { annotations: { [REFRESH_ANNOTATION]: null } } });
    }
    return result;
  }

  /**
   * Render, check, compare as the admitted identity, health as `assessor` judges it; the status that
   * says so, and whether to sync.
   */
  private async compare(
    ctx: Admitted,
    assessor: HealthAssessor,
    log: Logger,
    prev: ApplicationStatus | undefined,
    hard: boolean,
    now: string,
  ): Promise<{ status: ApplicationStatus; result: ReconcileResult }> {
    const { app } = ctx;
    const finish = (status: Partial<ApplicationStatus>, errors: string[] = []): ApplicationStatus => ({
      ...prev,
      reconciledAt: now,
      ...status,
      conditions: mergeConditions(
        prev?.conditions,
        [
          ...errors.map((message) => ({ type: CONDITION.ComparisonError, message })),
          ...ctx.conditions,
          ...carriedConditions(prev),
        ],
        now,
      ),
    });
    const identityClient = this.d.factory.forIdentity(ctx.cluster, ctx.actsAs);
    const client = hard ? identityClient.uncached() : identityClient;
    let rendered;
    try {
      const input = renderInputFor(app, { sourceRepos: ctx.project.spec.sourceRepos ?? [] });
      rendered = await this.d.renderer.render(input, {
        noCache: hard,
        limits: this.d.limits.for(this.d.cache.settingsConfigMap()),
        tenant: ctx.project.metadata.name,
      });
    } catch (err) {
      const message = `failed to render desired manifests: ${(err as Error).message}`;
      log.warn(message);
      const health = prev?.health ?? { status: 'Unknown' };
      return {
        status: finish({ sync: { status: 'Unknown', comparedTo: comparedTo(app) }, health }, [message]),
        result: {},
      };
    }
    const objects = rendered.objects.map((o) => o.object);
    const violations = await objectLimitViolations(client, ctx, objects);
    const cmp = await compare(client, objects, inventoryOf(app), {
      ...trackingTarget(app, this.d.cache.namespace),
      health: assessor,
    });
    const syncStatus = cmp.errors.length > 0 ? 'Unknown' : cmp.syncStatus;
    const resources = cmp.resources.map(resourceStatusOf);
    const status = finish(
      {
        sync: { status: syncStatus, revision: rendered.revision, comparedTo: comparedTo(app) },
        resources,
        health: cmp.health,
        sourceType: rendered.sourceType,
      },
      // A failed health check is a ComparisonError too, but leaves the sync status alone (Argo CD).
      [...violations, ...cmp.errors, ...(cmp.healthError ? [cmp.healthError] : [])],
    );
    const result: ReconcileResult = {};
    // No automated sync of an Application being deleted: its finalizer is removing the resources.
    if (violations.length > 0 || cmp.errors.length > 0 || app.metadata.deletionTimestamp) return { status, result };
    const decision = autoSyncDecision(
      app,
      {
        syncStatus,
        revision: rendered.revision,
        desiredCount: objects.length,
        outOfSync: resources
          .filter((r) => r.status === 'OutOfSync')
          .map((r) => ({ requiresPruning: r.requiresPruning === true })),
      },
      prev?.operationState,
      this.now().getTime(),
    );
    if (decision.sync) {
      log.info({ revision: rendered.revision, identity: identityLabel(ctx.actsAs) }, 'starting automated sync');
      // Set after the status write (refresh()), which needs the resourceVersion this patch would change.
      result.startOperation = decision.operation;
      result.operation = true;
    } else if (syncStatus === 'OutOfSync' && app.spec.syncPolicy?.automated) {
      log.debug(decision.reason);
      if (decision.retryAfterMs !== undefined) result.requeueAfterMs = decision.retryAfterMs;
    }
    return { status, result };
  }
}
