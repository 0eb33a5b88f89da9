// The comparison of one refresh (reconciler.ts writes what it finds): the Application's source
// rendered by the renderer process → the project's limits per object → the server-side diff as the
// admitted identity, its health assessed with argocd-cm's customizations (sync/compare.ts) → every
// missing right named at once, the warnings Argo CD raises, the sync windows → the status that
// says so, and whether Argo CD's rules start an automated sync.
import { applicationSummary } from './summary.ts';
import { toolSettingsOf } from '../api/tool-settings.ts';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { CONDITION, applicationKey } from '../api/index.ts';
import type { AppCondition, Application, ApplicationStatus, ConfigMap, SyncStatus } from '../api/index.ts';
import { compare, inventoryOf, resourceStatusOf, trackingTarget } from '../sync/index.ts';
import { SourceIntegrityFailed } from '../source/errors.ts';
import type { HealthAssessor } from '../sync/index.ts';
import { identityLabel, madeFor } from './admission.ts';
import type { Admission } from './admission.ts';
import { managesNamespace } from '../project/index.ts';
import { objectLimitViolations, unmanagedObjectRefusal } from './limits.ts';
import { autoSyncDecision } from './operation-policy.ts';
import { orphanedCondition } from './orphans.ts';
import { deleteHookFinalizers } from './delete-hooks.ts';
import type { ReconcileResult } from './reconcile.ts';
import type { ReconcilerDeps } from './reconciler.ts';
import { watchRefusals, withoutRefusals } from './refusals.ts';
import { refuseUnreadableRepositories } from './repositories.ts';
import { renderApplication } from './render.ts';
import { comparisonNeeds, liveFrom } from './rights-needs.ts';
import { mergeConditions } from './status.ts';
import { automatedSyncAllowed, syncWindowsStatus } from './sync-windows.ts';
import { argoCacheWrite } from './argocd-cache.ts';
import { repositorySecretsOf, unhonouredCondition } from './unhonoured.ts';

export type Admitted = Extract<Admission, { admitted: true }>;

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
  CONDITION.ControllerConflictError,
  // Written beside a waiting refresh (budget-waits.ts): the refresh that ran no longer waits.
  CONDITION.MemoryBudgetWarning,
]);

export function carriedConditions(prev: ApplicationStatus | undefined): AppCondition[] {
  return (prev?.conditions ?? []).filter((c) => !REFRESH_CONDITIONS.has(c.type));
}

export function comparedTo(app: Application): NonNullable<SyncStatus['comparedTo']> {
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

/**
 * Render, check, compare as the admitted identity, health as `assessor` judges it; the status that
 * says so, and whether to sync.
 */
export async function compareApplication(
  d: ReconcilerDeps,
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
  const clock = d.now?.() ?? new Date();
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
  const repositories = d.cache.repositoryState();
  let rendered;
  try {
    refuseUnreadableRepositories(app, undefined, repositories, ctx.project);
    // The destination's versions, shared by its Applications (capabilities.ts): read naming none.
    const versions = await d.capabilities?.for(d.factory.forIdentity(ctx.cluster, ctx.actsAs));
    rendered = await renderApplication(d.renderer, app, {
      project: ctx.project,
      controllerNamespace: d.cache.namespace,
      repositories,
      ...versions,
      // A periodic refresh reuses refs and Helm indexes fetched within the interval (one ls-remote
      // per repository, not per Application); an asked-for refresh resolves again, as in Argo CD.
      revisionMaxAgeMs: refreshKind === undefined ? d.refreshIntervalMs() : 0,
      noCache: hard,
      limits: d.limits.for(d.cache.settingsConfigMap()),
      tools: toolSettingsOf(d.cache.settingsConfigMap()),
      // As Argo CD's refresh: the last operation's local manifests stay the target state until
      // another operation replaces it.
      localManifests: app.status?.operationState?.operation.sync?.manifests,
    });
    d.dependencies?.set(applicationKey(app), rendered.dependencies);
  } catch (err) {
    // A failed integrity check is Argo CD's condition as is, one per source (controller/render.ts).
    const messages =
      err instanceof SourceIntegrityFailed
        ? [...err.messages]
        : [`failed to render desired manifests: ${(err as Error).message}`];
    for (const message of messages) log.warn(message);
    const health = prev?.health ?? { status: 'Unknown' };
    return {
      status: finish({ sync: { status: 'Unknown', comparedTo: comparedTo(app) }, health }, messages),
      result: {},
    };
  }
  // The one client of this refresh, naming the Application and the commit it compares in every request.
  const identityClient = d.factory.forIdentity(ctx.cluster, ctx.actsAs, madeFor(ctx, rendered.revisions.join(', ')));
  const client = hard ? identityClient.uncached() : identityClient;
  const objects = rendered.objects.map((o) => o.object);
  const revision = rendered.revisions[0] ?? '';
  // Argo CD's pre- and post-delete finalizers follow the manifests, while the Application is not being deleted.
  const finalizers = app.metadata.deletionTimestamp
    ? undefined
    : deleteHookFinalizers(app.metadata.finalizers ?? [], objects);
  // A namespace-scoped cluster reads nothing outside what it manages (Argo CD's cluster cache).
  const unmanaged = await unmanagedObjectRefusal(client, ctx, objects);
  if (unmanaged) {
    const health = prev?.health ?? { status: 'Unknown' };
    const sync = { status: 'Unknown' as const, comparedTo: comparedTo(app) };
    return { status: finish({ sync, health }, [unmanaged]), result: {}, finalizers };
  }
  const watched = watchRefusals(client);
  const violations = await objectLimitViolations(watched.client, ctx, objects);
  const semantics = d.semantics.for(app, d.cache.settingsConfigMap(), ctx.cluster);
  const cmp = await compare(watched.client, objects, inventoryOf(app), {
    ...trackingTarget(app, d.cache.namespace),
    ...semantics,
    health: assessor,
  });
  // Refused by RBAC: every right the identity lacks, in one condition, in place of the refusals.
  const destination = app.spec.destination?.namespace ?? '';
  const missingRights = await d.rights.afterRefusals(
    client,
    watched.refusals,
    () => comparisonNeeds(objects, liveFrom(cmp.resources, destination, prev?.resources)),
    { defaultNamespace: destination, fresh: hard, onError: (e) => log.info(e) },
  );
  const errors = missingRights ? [missingRights, ...withoutRefusals(cmp.errors, watched.refusals)] : cmp.errors;
  const unhonoured = unhonouredCondition({
    app,
    project: ctx.project,
    settings: settingsData(d.cache.settingsConfigMap()),
    clusterSecret: {
      data: Object.fromEntries((ctx.cluster.keys ?? []).map((k) => [k, ''])),
      config: ctx.cluster.config,
    },
    repositorySecrets: repositorySecretsOf(repositories, rendered.sources, ctx.project),
    objects,
  });
  if (unhonoured) warnings.push(unhonoured);
  // Not in a namespace a namespace-scoped cluster does not manage: Argo CD's cache never lists it.
  const orphaned = !managesNamespace(ctx.cluster, destination)
    ? undefined
    : await orphanedCondition(client, {
        app,
        project: ctx.project,
        resources: cmp.resources,
        semantics,
        applications: d.cache.apps.list(),
        controllerNamespace: d.cache.namespace,
        onCount: (n) =>
          d.metrics?.argocd.orphanedResources.set(
            {
              namespace: app.metadata.namespace ?? '',
              name: app.metadata.name,
              project: app.spec.project || 'default',
            },
            n,
          ),
      });
  // resource.respectRBAC: a kind the identity may not list (unset), or a value Argo CD does not
  // know, fails the live state as Argo CD's cluster cache fails; the Application is not synced.
  const liveStateErrors: string[] = [];
  if (semantics.settings.respectRBACError)
    liveStateErrors.push(
      `Failed to load live state: failed to get cluster info for "${ctx.cluster.server}": error getting cluster: ${semantics.settings.respectRBACError}`,
    );
  if (orphaned?.type === CONDITION.ComparisonError) liveStateErrors.push(orphaned.message);
  else if (orphaned) warnings.push(orphaned);
  for (const [type, messages] of [
    [CONDITION.SharedResourceWarning, cmp.shared],
    [CONDITION.RepeatedResourceWarning, cmp.warnings],
    [CONDITION.ExcludedResourceWarning, cmp.excluded],
  ] as const)
    for (const message of messages) warnings.push({ type, message });
  // A changed managedNamespaceMetadata is OutOfSync until synced (Argo CD's HasChangedManagedNamespaceMetadata).
  // Argo CD's cache for argocd-server (argocd-cache/): queued, built and written off this refresh.
  d.argoCache?.submit(
    argoCacheWrite(d, ctx, {
      resources: cmp.resources,
      client: identityClient,
      assessor,
      filter: semantics.filter,
      capabilities: () => d.capabilities?.for(d.factory.forIdentity(ctx.cluster, ctx.actsAs)) ?? Promise.resolve({}),
      log,
    }),
  );
  const nsChanged = namespaceMetadataChanged(app, prev);
  const syncStatus =
    cmp.errors.length > 0 || liveStateErrors.length > 0 ? 'Unknown' : nsChanged ? 'OutOfSync' : cmp.syncStatus;
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
      summary: applicationSummary(
        app.metadata.annotations,
        cmp.resources.flatMap((r) => (r.live ? [r.live] : [])),
      ),
      ...(rendered.multiSource ? { sourceTypes: rendered.sourceTypes } : { sourceType: rendered.sourceTypes[0] ?? '' }),
    },
    // A failed health check is a ComparisonError too, but leaves the sync status alone (Argo CD).
    [...violations, ...errors, ...liveStateErrors, ...(cmp.healthError ? [cmp.healthError] : [])],
  );
  const result: ReconcileResult = {};
  // The next refresh comes when a sync window opens or closes, if that is sooner than the periodic one.
  if (windows.nextChange) result.requeueAfterMs = Math.max(1000, windows.nextChange.getTime() - clock.getTime() + 1000);
  // No automated sync of an Application being deleted: its finalizer is removing the resources.
  if (violations.length > 0 || cmp.errors.length > 0 || liveStateErrors.length > 0 || app.metadata.deletionTimestamp)
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
    (d.now?.() ?? new Date()).getTime(),
    d.selfHeal,
  );
  if (decision.sync) {
    log.info(
      { revision: rendered.revisions.join(','), identity: identityLabel(ctx.actsAs) },
      'starting automated sync',
    );
    // Set by the status write (reconciler.ts: in that write, with its Running state, when the CRD
    // has no status subresource; else by a patch after it, which needs the resourceVersion the
    // write guards with). The Application watch's event for it (a new operation) queues the
    // operation: it is not queued here too, which would run it a second time just to read the
    // finished operation again.
    result.startOperation = decision.operation;
  } else if (syncStatus === 'OutOfSync' && app.spec.syncPolicy?.automated) {
    log.debug(decision.reason);
    if (decision.retryAfterMs !== undefined)
      result.requeueAfterMs = Math.min(decision.retryAfterMs, result.requeueAfterMs ?? Infinity);
  }
  return { status, result, missingRights, finalizers };
}
