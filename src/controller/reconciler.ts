// The refresh of one Application (Argo CD's "comparison"): prepare (context.ts) → desired
// manifests → project limits → server-side diff as the identity → status. Starts an automated
// sync by setting `operation` when Argo CD's rules say so; the operation worker runs it.
import type { Logger } from 'pino';
import type { Application } from '../api/index.ts';
import { isRefusal } from '../kube/types.ts';
import type { Metrics } from '../observability/metrics.ts';
import { prepare, identityLabel } from './context.ts';
import type { AppContext, PrepareDeps } from './context.ts';
import type { EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import type { KubeApi } from './kubeapi.ts';
import type { ReconcileResult } from './manager.ts';
import { REFRESH_ANNOTATION } from './manager.ts';
import { autoSyncDecision } from './operation-policy.ts';
import type { OperationState } from './operation-policy.ts';
import type { Ports } from './ports.ts';
import { CONDITION, mergeConditions, patchApplication, shouldWriteStatus, writeStatus } from './status.ts';
import type { AppCondition, ApplicationStatus } from './status.ts';

export interface ReconcilerDeps extends PrepareDeps {
  api: KubeApi;
  ports: Ports;
  events: EventSink;
  logger: Logger;
  metrics?: Metrics;
  /** Milliseconds between periodic refreshes (timeout.reconciliation), for the status write rule. */
  refreshIntervalMs: () => number;
  now?: () => Date;
}

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

function comparedTo(app: Application): SyncStatusComparedTo {
  return {
    ...(app.spec.source ? { source: app.spec.source } : {}),
    ...(app.spec.sources ? { sources: app.spec.sources } : {}),
    destination: app.spec.destination ?? {},
  };
}
type SyncStatusComparedTo = { source?: unknown; sources?: unknown; destination: unknown };

export class Reconciler {
  private readonly d: ReconcilerDeps;

  constructor(deps: ReconcilerDeps) {
    this.d = deps;
  }

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  async refresh(key: string): Promise<ReconcileResult> {
    const raw = this.d.cache.app(key);
    if (!raw) return {};
    const prevStatus = raw['status'] as ApplicationStatus | undefined;
    const annotations = (raw.metadata as { annotations?: Record<string, string> }).annotations ?? {};
    const refreshKind = annotations[REFRESH_ANNOTATION];
    const now = this.now().toISOString();
    const prepared = prepare(this.d, raw);
    const log = this.d.logger.child({ application: key });
    let next: ApplicationStatus;
    let result: ReconcileResult = {};
    if (!prepared.ok) {
      log.warn({ condition: prepared.condition.type }, prepared.condition.message);
      next = {
        ...prevStatus,
        sync: { status: 'Unknown', ...(prepared.app ? { comparedTo: comparedTo(prepared.app) } : {}) },
        health: { status: 'Unknown' },
        reconciledAt: now,
        conditions: mergeConditions(
          prevStatus?.conditions,
          [prepared.condition, ...carriedConditions(prevStatus)],
          now,
        ),
      };
    } else {
      const out = await this.compare(prepared.ctx, prevStatus, refreshKind === 'hard', now);
      next = out.status;
      result = out.result;
    }
    if (shouldWriteStatus(prevStatus, next, this.now().getTime(), this.d.refreshIntervalMs())) {
      await writeStatus(this.d.api, raw as Record<string, unknown>, next);
      // A new error condition is worth an event (once: unchanged conditions keep their lastTransitionTime).
      for (const c of next.conditions ?? []) {
        const isNew = !(prevStatus?.conditions ?? []).some((p) => p.type === c.type && p.message === c.message);
        if (isNew && (c.type === CONDITION.ComparisonError || c.type === CONDITION.InvalidSpecError)) {
          await this.d.events.record(
            involvedApplication({ ...raw, metadata: raw.metadata }),
            'Warning',
            c.type,
            c.message,
          );
        }
      }
    }
    if (result.startOperation) {
      await patchApplication(this.d.api, raw.metadata.namespace ?? '', raw.metadata.name, {
        operation: result.startOperation,
      });
      await this.d.events.record(
        involvedApplication({ ...raw, metadata: raw.metadata }),
        'Normal',
        'OperationStarted',
        `Initiated automated sync to '${result.startOperation.sync?.revision ?? ''}'`,
      );
      delete result.startOperation;
    }
    // A deleting Application's finalizer runs in the operation queue; a refresh (a project or
    // settings change) may have made it possible again.
    if ((raw.metadata as { deletionTimestamp?: string }).deletionTimestamp) result.operation = true;
    if (refreshKind !== undefined) {
      // Argo CD removes the refresh annotation once the refresh it asked for is done.
      await patchApplication(this.d.api, raw.metadata.namespace ?? '', raw.metadata.name, {
        metadata: { annotations: { [REFRESH_ANNOTATION]: null } },
      });
    }
    return result;
  }

  private async compare(
    ctx: AppContext,
    prev: ApplicationStatus | undefined,
    hard: boolean,
    now: string,
  ): Promise<{ status: ApplicationStatus; result: ReconcileResult }> {
    const { app, identity } = ctx;
    const key = `${app.metadata.namespace}/${app.metadata.name}`;
    const log = this.d.logger.child({
      application: key,
      project: ctx.project.metadata.name,
      decision: identity.decision,
      serviceAccount: identity.serviceAccount ?? undefined,
    });
    this.d.metrics?.identityDecisions.inc({ outcome: identity.decision });
    if (identity.decision === 'fallback') log.info(identity.message);
    const base: ApplicationStatus = { ...prev, reconciledAt: now };
    const conds: AppCondition[] = [...ctx.identityConditions];
    const finish = (status: Partial<ApplicationStatus>, extra: AppCondition[] = []): ApplicationStatus => ({
      ...base,
      ...status,
      conditions: mergeConditions(prev?.conditions, [...extra, ...conds, ...carriedConditions(prev)], now),
    });
    if (isRefusal(ctx.client)) {
      // spec §5: the diff applies the same table; no diff is reported as Synced.
      log.warn(ctx.client.message);
      return {
        status: finish({ sync: { status: 'Unknown', comparedTo: comparedTo(app) }, health: { status: 'Unknown' } }, [
          { type: CONDITION.ComparisonError, message: ctx.client.message },
        ]),
        result: {},
      };
    }
    let rendered;
    try {
      rendered = await this.d.ports.render.render(app, { hard, sourceRepos: ctx.project.spec.sourceRepos ?? [] });
    } catch (err) {
      const message = `failed to render desired manifests: ${(err as Error).message}`;
      log.warn(message);
      return {
        status: finish(
          { sync: { status: 'Unknown', comparedTo: comparedTo(app) }, health: prev?.health ?? { status: 'Unknown' } },
          [{ type: CONDITION.ComparisonError, message }],
        ),
        result: {},
      };
    }
    const violations = await this.d.ports.limits.checkObjects(
      ctx.client,
      ctx.project,
      app,
      ctx.cluster,
      rendered.objects,
    );
    const cmp = await this.d.ports.compare.compare(ctx.client, app, rendered.objects, ctx.health);
    const errs: AppCondition[] = [...violations, ...cmp.errors, ...(cmp.healthError ? [cmp.healthError] : [])].map(
      (message) => ({
        type: CONDITION.ComparisonError,
        message,
      }),
    );
    const syncStatus = cmp.errors.length > 0 ? 'Unknown' : cmp.syncStatus;
    const status = finish(
      {
        sync: { status: syncStatus, revision: rendered.revision, comparedTo: comparedTo(app) },
        resources: cmp.resources,
        health: cmp.health,
        sourceType: rendered.sourceType,
      },
      errs,
    );
    const result: ReconcileResult = {};
    // No automated sync of an Application being deleted: its finalizer is removing the resources.
    if (violations.length === 0 && cmp.errors.length === 0 && !app.metadata.deletionTimestamp) {
      const decision = autoSyncDecision(
        app,
        {
          syncStatus,
          revision: rendered.revision,
          desiredCount: rendered.objects.length,
          outOfSync: cmp.resources
            .filter((r) => r.status === 'OutOfSync')
            .map((r) => ({ requiresPruning: r.requiresPruning === true })),
        },
        prev?.operationState as OperationState | undefined,
        this.now().getTime(),
      );
      if (decision.sync) {
        log.info({ revision: rendered.revision, identity: identityLabel(identity) }, 'starting automated sync');
        // Set after the status write (refresh()), which needs the resourceVersion this patch would change.
        result.startOperation = decision.operation;
        result.operation = true;
      } else if (syncStatus === 'OutOfSync' && app.spec.syncPolicy?.automated) {
        log.debug(decision.reason);
        if (decision.retryAfterMs !== undefined) result.requeueAfterMs = decision.retryAfterMs;
      }
    }
    return { status, result };
  }
}
