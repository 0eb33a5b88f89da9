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
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { CONDITION, EVENT_REASON, applicationKey, readStatus } from '../api/index.ts';
import type { DestinationCapabilities } from './capabilities.ts';
import { renderApplication } from './render.ts';
import type { AppCondition, Application, ApplicationStatus, ConfigMap, EventReason, SyncStatus } from '../api/index.ts';
import type { ControlClient } from '../kube/control.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { Renderer } from '../renderer/client.ts';
import { compare, inventoryOf, resourceStatusOf, trackingTarget } from '../sync/index.ts';
import type { HealthAssessor } from '../sync/index.ts';
import { admit, identityLabel, madeFor } from './admission.ts';
import type { Admission } from './admission.ts';
import { patchApplication, writeStatus } from './applications.ts';
import type { ControllerCache } from './cache.ts';
import type { EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import type { ApplicationLimitsReader } from './app-limits.ts';
import type { HealthAssessors } from './health.ts';
import { objectLimitViolations } from './limits.ts';
import { watchRefusals, withoutRefusals } from './refusals.ts';
import type { RightsCheck } from './rights.ts';
import { comparisonNeeds, liveFrom } from './rights-needs.ts';
import type { ReconcileResult } from './reconcile.ts';
import type { Semantics } from './semantics.ts';
import { repositorySecretsOf, unhonouredCondition } from './unhonoured.ts';
import { automatedSyncAllowed, syncWindowsStatus } from './sync-windows.ts';
import { REFRESH_ANNOTATION, skipsReconcile } from './triggers.ts';
import { autoSyncDecision } from './operation-policy.ts';
import { orphanedCondition } from './orphans.ts';
import { postDeleteFinalizers } from './post-delete.ts';
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
  /** The destination's versions for Helm's .Capabilities, read as the Application's identity. */
  capabilities?: DestinationCapabilities;
  /** Where the repositories of each Application's chart dependencies are kept (for requeueing). */
  dependencies?: Map<string, readonly string[]>;
  /** Which rights the identity lacks, asked after a refused comparison. */
  rights: RightsCheck;
  /** Tracking, ignoreDifferences, compare options and the resource filter (semantics.ts). */
  semantics: Semantics;
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
  CONDITION.SharedResourceWarning,
  CONDITION.RepeatedResourceWarning,
  CONDITION.ExcludedResourceWarning,
  CONDITION.OrphanedResourceWarning,
  CONDITION.UnsupportedFieldWarning,
]);

/** Warning conditions worth an event when they appear (as the errors are). */
const EVENTFUL = new Set<string>([
  CONDITION.ComparisonError,
  CONDITION.InvalidSpecError,
  CONDITION.SharedResourceWarning,
  CONDITION.UnsupportedFieldWarning,
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

function settingsData(cm: ConfigMap | undefined | Error): Record<string, string> {
  return cm instanceof Error || !cm ? {} : (cm.data ?? {});
}

/** syncPolicy.managedNamespaceMetadata differs from what the last sync applied. */
function namespaceMetadataChanged(app: Application, prev: ApplicationStatus | undefined): boolean {
  const want = app.spec.syncPolicy?.managedNamespaceMetadata;
  const result = prev?.operationState?.syncResult;
  return want !== undefined && result !== undefined && !isDeepStrictEqual(want, result.managedNamespaceMetadata);
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
    if (skipsReconcile(raw)) {
      this.d.logger.debug(
        { application: key },
        'Skipping Application reconcile based on annotation argocd.argoproj.io/skip-reconcile',
      );
      return {};
    }
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
    let missingRights: string | undefined;
    let finalizers: string[] | undefined;
    if (admission.admitted) {
      if (admission.identity.decision === 'fallback') log.info(admission.identity.message);
      ({
        status: next,
        result,
        missingRights,
        finalizers,
      } = await this.compare(admission, this.assessor(), log, prev, refreshKind, now));
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
        if (!isNew) continue;
        if (c.type === CONDITION.ComparisonError && c.message === missingRights)
          await this.d.events.record(involvedApplication(raw), 'Warning', EVENT_REASON.MissingRights, c.message);
        else if (EVENTFUL.has(c.type))
          await this.d.events.record(involvedApplication(raw), 'Warning', c.type as EventReason, c.message);
      }
    }
    if (finalizers) await patchApplication(this.d.control, raw, { metadata: { finalizers } });
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
    refreshKind: string | undefined,
    now: string,
  ): Promise<{
    status: ApplicationStatus;
    result: ReconcileResult;
    missingRights?: string | undefined;
    finalizers?: string[] | undefined;
  }> {
    const { app } = ctx;
    const hard = refreshKind === 'hard';
    const clock = this.now();
    const windows = syncWindowsStatus(ctx.project, app, clock);
    const warnings: AppCondition[] = [];
    const finish = (status: Partial<ApplicationStatus>, errors: string[] = []): ApplicationStatus => {
      const { syncWindows: _old, ...rest } = { ...prev, reconciledAt: now, ...status };
      return {
        ...rest,
        ...(windows.status ? { syncWindows: windows.status } : {}),
        conditions: mergeConditions(
          prev?.conditions,
          [
            ...errors.map((message) => ({ type: CONDITION.ComparisonError, message })),
            ...warnings,
            ...ctx.conditions,
            ...carriedConditions(prev),
          ],
          now,
        ),
      };
    };
    // One view of the repository Secrets for the render and for the warnings about their fields.
    const repositories = this.d.cache.repositoryState();
    let rendered;
    try {
      // The destination's versions, shared by its Applications (capabilities.ts): read naming none.
      const versions = await this.d.capabilities?.for(this.d.factory.forIdentity(ctx.cluster, ctx.actsAs));
      rendered = await renderApplication(this.d.renderer, app, {
        project: ctx.project,
        repositories,
        ...versions,
        // A periodic refresh reuses refs and Helm indexes fetched within the interval (one ls-remote
        // per repository, not per Application); an asked-for refresh resolves again, as in Argo CD.
        revisionMaxAgeMs: refreshKind === undefined ? this.d.refreshIntervalMs() : 0,
        noCache: hard,
        limits: this.d.limits.for(this.d.cache.settingsConfigMap()),
      });
      this.d.dependencies?.set(applicationKey(app), rendered.dependencies);
    } catch (err) {
      const message = `failed to render desired manifests: ${(err as Error).message}`;
      log.warn(message);
      const health = prev?.health ?? { status: 'Unknown' };
      return {
        status: finish({ sync: { status: 'Unknown', comparedTo: comparedTo(app) }, health }, [message]),
        result: {},
      };
    }
    // The one client of this refresh, naming the Application and the commit it compares in every request.
    const identityClient = this.d.factory.forIdentity(
      ctx.cluster,
      ctx.actsAs,
      madeFor(ctx, rendered.revisions.join(', ')),
    );
    const client = hard ? identityClient.uncached() : identityClient;
    const objects = rendered.objects.map((o) => o.object);
    const revision = rendered.revisions[0] ?? '';
    // Argo CD's post-delete finalizers follow the manifests, while the Application is not being deleted.
    const finalizers = app.metadata.deletionTimestamp
      ? undefined
      : postDeleteFinalizers(app.metadata.finalizers ?? [], objects);
    const watched = watchRefusals(client);
    const violations = await objectLimitViolations(watched.client, ctx, objects);
    const semantics = this.d.semantics.for(app, this.d.cache.settingsConfigMap(), ctx.cluster);
    const cmp = await compare(watched.client, objects, inventoryOf(app), {
      ...trackingTarget(app, this.d.cache.namespace),
      ...semantics,
      health: assessor,
    });
    // Refused by RBAC: every right the identity lacks, in one condition, in place of the refusals.
    const destination = app.spec.destination?.namespace ?? '';
    const missingRights = await this.d.rights.afterRefusals(
      client,
      watched.refusals,
      () => comparisonNeeds(objects, liveFrom(cmp.resources, destination, prev?.resources)),
      { defaultNamespace: destination, fresh: hard, onError: (e) => log.info(e) },
    );
    const errors = missingRights ? [missingRights, ...withoutRefusals(cmp.errors, watched.refusals)] : cmp.errors;
    const unhonoured = unhonouredCondition({
      app,
      project: ctx.project,
      settings: settingsData(this.d.cache.settingsConfigMap()),
      clusterSecret: {
        data: Object.fromEntries((ctx.cluster.keys ?? []).map((k) => [k, ''])),
        config: ctx.cluster.config,
      },
      repositorySecrets: repositorySecretsOf(repositories, rendered.sources, ctx.project),
      objects,
    });
    if (unhonoured) warnings.push(unhonoured);
    const orphaned = await orphanedCondition(client, {
      app,
      project: ctx.project,
      resources: cmp.resources,
      semantics,
      applications: this.d.cache.apps.list(),
      controllerNamespace: this.d.cache.namespace,
    });
    if (orphaned) warnings.push(orphaned);
    for (const [type, messages] of [
      [CONDITION.SharedResourceWarning, cmp.shared],
      [CONDITION.RepeatedResourceWarning, cmp.warnings],
      [CONDITION.ExcludedResourceWarning, cmp.excluded],
    ] as const)
      for (const message of messages) warnings.push({ type, message });
    // A changed managedNamespaceMetadata is OutOfSync until synced (Argo CD's HasChangedManagedNamespaceMetadata).
    const nsChanged = namespaceMetadataChanged(app, prev);
    const syncStatus = cmp.errors.length > 0 ? 'Unknown' : nsChanged ? 'OutOfSync' : cmp.syncStatus;
    const resources = cmp.resources.map(resourceStatusOf);
    const status = finish(
      {
        sync: {
          status: syncStatus,
          // Argo CD's shapes: `revision` for one source, `revisions` (one per source) for spec.sources.
          ...(rendered.multiSource ? { revisions: rendered.revisions } : { revision }),
          comparedTo: comparedTo(app),
        },
        resources,
        health: cmp.health,
        ...(rendered.multiSource
          ? { sourceTypes: rendered.sourceTypes }
          : { sourceType: rendered.sourceTypes[0] ?? '' }),
      },
      // A failed health check is a ComparisonError too, but leaves the sync status alone (Argo CD).
      [...violations, ...errors, ...(cmp.healthError ? [cmp.healthError] : [])],
    );
    const result: ReconcileResult = {};
    // The next refresh comes when a sync window opens or closes, if that is sooner than the periodic one.
    if (windows.nextChange)
      result.requeueAfterMs = Math.max(1000, windows.nextChange.getTime() - clock.getTime() + 1000);
    // No automated sync of an Application being deleted: its finalizer is removing the resources.
    if (violations.length > 0 || cmp.errors.length > 0 || app.metadata.deletionTimestamp)
      return { status, result, missingRights, finalizers };
    if (!automatedSyncAllowed(ctx.project, app, clock)) {
      if (syncStatus === 'OutOfSync' && app.spec.syncPolicy?.automated) log.info('Sync prevented by sync window');
      return { status, result, missingRights, finalizers };
    }
    const decision = autoSyncDecision(
      app,
      {
        syncStatus,
        revision,
        ...(rendered.multiSource ? { revisions: rendered.revisions } : {}),
        desiredCount: objects.length,
        outOfSync: resources
          .filter((r) => r.status === 'OutOfSync')
          .map((r) => ({ requiresPruning: r.requiresPruning === true })),
      },
      prev?.operationState,
      this.now().getTime(),
    );
    if (decision.sync) {
      log.info(
        { revision: rendered.revisions.join(','), identity: identityLabel(ctx.actsAs) },
        'starting automated sync',
      );
      // Set after the status write (refresh()), which needs the resourceVersion this patch would change.
      result.startOperation = decision.operation;
      result.operation = true;
    } else if (syncStatus === 'OutOfSync' && app.spec.syncPolicy?.automated) {
      log.debug(decision.reason);
      if (decision.retryAfterMs !== undefined)
        result.requeueAfterMs = Math.min(decision.retryAfterMs, result.requeueAfterMs ?? Infinity);
    }
    return { status, result, missingRights, finalizers };
  }
}
