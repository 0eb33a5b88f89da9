// The refresh of one Application (Argo CD's "comparison"): admission (admission.ts) → desired
// manifests → project limits → server-side diff as the identity → status. Starts an automated
// sync by setting `operation` when Argo CD's rules say so; the operation worker runs it.
import type { Logger } from 'pino';
import { CONDITION, EVENT_REASON, readStatus } from '../api/index.ts';
import type { AppCondition, Application, ApplicationStatus, SyncStatus } from '../api/index.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import type { DestinationClient } from '../kube/types.ts';
import type { Metrics } from '../observability/metrics.ts';
import { admit, identityLabel } from './admission.ts';
import type { Admission } from './admission.ts';
import type { ControllerCache } from './cache.ts';
import type { EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import type { ControlClient } from '../kube/control.ts';
import { patchApplication, writeStatus } from './applications.ts';
import type { ReconcileResult } from './manager.ts';
import { REFRESH_ANNOTATION } from './manager.ts';
import { autoSyncDecision } from './operation-policy.ts';
import type { Ports } from './ports.ts';
import { mergeConditions, shouldWriteStatus } from './status.ts';

export interface ReconcilerDeps {
  cache: ControllerCache;
  factory: DestinationClientFactory;
  control: ControlClient;
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

  async refresh(key: string): Promise<ReconcileResult> {
    const raw = this.d.cache.app(key);
    if (!raw) return {};
    const prevStatus = readStatus(raw);
    const annotations = (raw.metadata as { annotations?: Record<string, string> }).annotations ?? {};
    const refreshKind = annotations[REFRESH_ANNOTATION];
    const now = this.now().toISOString();
    const admission = admit(this.d.cache.controlState(), raw);
    const log = this.d.logger.child({
      application: key,
      ...(admission.admitted || admission.by === 'identity'
        ? {
            project: admission.project.metadata.name,
            decision: admission.identity.decision,
            serviceAccount: admission.identity.serviceAccount ?? undefined,
          }
        : {}),
    });
    if (admission.admitted || admission.by === 'identity')
      this.d.metrics?.identityDecisions.inc({ outcome: admission.identity.decision });
    let next: ApplicationStatus;
    let result: ReconcileResult = {};
    if (!admission.admitted) {
      // spec §5: the diff applies the same table as the sync; nothing refused is reported Synced.
      log.warn({ condition: admission.condition.type }, admission.condition.message);
      const app = admission.app;
      next = {
        ...prevStatus,
        sync: { status: 'Unknown', ...(app ? { comparedTo: comparedTo(app) } : {}) },
        health: { status: 'Unknown' },
        reconciledAt: now,
        conditions: mergeConditions(
          prevStatus?.conditions,
          [
            admission.condition,
            ...(admission.by === 'identity' ? admission.conditions : []),
            ...carriedConditions(prevStatus),
          ],
          now,
        ),
      };
    } else {
      if (admission.identity.decision === 'fallback') log.info(admission.identity.message);
      const client = this.d.factory.forIdentity(admission.cluster, admission.actsAs);
      const out = await this.compare(admission, client, log, prevStatus, refreshKind === 'hard', now);
      next = out.status;
      result = out.result;
    }
    if (shouldWriteStatus(prevStatus, next, this.now().getTime(), this.d.refreshIntervalMs())) {
      await writeStatus(this.d.control, raw, next);
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
      await patchApplication(this.d.control, raw, {
        operation: result.startOperation,
      });
      await this.d.events.record(
        involvedApplication({ ...raw, metadata: raw.metadata }),
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
      await patchApplication(this.d.control, raw, {
        metadata: { annotations: { [REFRESH_ANNOTATION]: null } },
      });
    }
    return result;
  }

  private async compare(
    ctx: Extract<Admission, { admitted: true }>,
    client: DestinationClient,
    log: Logger,
    prev: ApplicationStatus | undefined,
    hard: boolean,
    now: string,
  ): Promise<{ status: ApplicationStatus; result: ReconcileResult }> {
    const { app } = ctx;
    const base: ApplicationStatus = { ...prev, reconciledAt: now };
    const conds: AppCondition[] = [...ctx.conditions];
    const finish = (status: Partial<ApplicationStatus>, extra: AppCondition[] = []): ApplicationStatus => ({
      ...base,
      ...status,
      conditions: mergeConditions(prev?.conditions, [...extra, ...conds, ...carriedConditions(prev)], now),
    });
    let rendered;
    try {
      rendered = await this.d.ports.render.render(app, { hard });
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
    const violations = await this.d.ports.limits.checkObjects(client, ctx.project, app, ctx.cluster, rendered.objects);
    const cmp = await this.d.ports.compare.compare(client, app, rendered.objects);
    const errs: AppCondition[] = [...violations, ...cmp.errors].map((message) => ({
      type: CONDITION.ComparisonError,
      message,
    }));
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
    }
    return { status, result };
  }
}
