// The refresh of one Application (Argo CD's "comparison"), top to bottom: admission
// (admission.ts) → the comparison as the admitted identity (comparison.ts: render, limits,
// server-side diff, health, missing rights, warnings) → the status written when it changed, its
// events, finalizers, and the automated sync Argo CD's rules start (the operation worker runs it,
// operation.ts) → the refresh annotation removed.
//
// A hard refresh (`argocd.argoproj.io/refresh: hard`) asks everything again: the renderer renders
// without its answer cache (Argo CD: the repo-server's manifest cache), and the comparison sends
// every dry-run and reads every live object from the API server as the identity, rather than
// reusing a remembered dry-run answer or the live-object watches. So a right revoked meanwhile, or
// a change a dry-run sees but the watch does not (a CRD's new default), shows at once.
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { CONDITION, EVENT_REASON, readStatus } from '../api/index.ts';
import type { ApplicationStatus, EventReason, Operation } from '../api/index.ts';
import type { DestinationCapabilities } from './capabilities.ts';
import type { SelfHealPolicy } from './self-heal.ts';
import type { ControlClient } from '../kube/control.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { Renderer } from '../renderer/client.ts';
import { admit } from './admission.ts';
import {
  onTopOfSideWrites,
  patchApplication,
  removeRefreshAnnotations,
  statusSubresource,
  writeStatus,
} from './applications.ts';
import { startedState } from './operation-machine.ts';
import type { ControllerCache } from './cache.ts';
import { carriedConditions, compareApplication, comparedTo } from './comparison.ts';
import type { EventOrder, EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import type { ApplicationLimitsReader } from './app-limits.ts';
import type { HealthAssessors } from './health.ts';
import type { HealthAssessor } from '../sync/index.ts';
import { appInstanceName } from '../sync/index.ts';
import type { RightsCheck } from './rights.ts';
import type { ReconcileResult } from './reconcile.ts';
import type { Semantics } from './semantics.ts';
import { REFRESH_ANNOTATION, REFRESH_TIMESTAMP_ANNOTATION, skipsReconcile } from './triggers.ts';
import {
  comparisonOwed,
  mergeConditions,
  periodicRefreshKind,
  shouldWriteStatus,
  statusChanged,
  withHealthTransition,
} from './status.ts';
import { readImpersonationSettings } from '../impersonation/settings.ts';

import type { ArgoCacheWriter } from '../argocd-cache/writer.ts';
import type { OperationHandoff } from './handoff.ts';

export interface ReconcilerDeps {
  cache: ControllerCache;
  factory: DestinationClientFactory;
  control: ControlClient;
  renderer: Renderer;
  events: EventSink;
  /** Holds the operation worker's first events until an automated sync's "Initiated" is recorded. */
  eventOrder?: EventOrder;
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
  /** argocd-cmd-params-cm's self-heal timeout and backoff (default Argo CD's). */
  selfHeal?: SelfHealPolicy | undefined;
  /** Argo CD's cache in Redis (--redis), written after each comparison; absent: none. */
  argoCache?: ArgoCacheWriter | undefined;
  /** Argo CD's own application controller, when it runs against the same Applications (argocd-controller.ts). */
  argoController?: { running(): string | undefined } | undefined;
  /** Where the write that started an automated sync is handed to the operation worker (handoff.ts). */
  handoff?: OperationHandoff | undefined;
  now?: () => Date;
}

/** Warning conditions worth an event when they appear (as the errors are). */
const EVENTFUL = new Set<string>([
  CONDITION.ComparisonError,
  CONDITION.InvalidSpecError,
  CONDITION.SharedResourceWarning,
  CONDITION.UnsupportedFieldWarning,
]);

export class Reconciler {
  private readonly d: ReconcilerDeps;
  /**
   * The status last written, by Application, while the API server keeps less of it than was sent
   * (Argo CD's own CRD types status and drops the fields it does not list, such as syncWindows):
   * as long as the stored status is still what that write left (nobody wrote status since), the
   * next status is compared with what was sent, not with what was kept, so a refresh that finds
   * nothing new writes nothing. Empty with a CRD that keeps what it is sent.
   */
  private readonly written = new Map<string, { kept: unknown; sent: ApplicationStatus }>();

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
    if (!raw) {
      this.written.delete(key);
      return {};
    }
    if (skipsReconcile(raw)) {
      this.d.logger.debug(
        { application: key },
        'Skipping Application reconcile based on annotation argocd.argoproj.io/skip-reconcile',
      );
      return {};
    }
    const prev = readStatus(raw);
    const conflict = this.d.argoController?.running();
    if (conflict) {
      // Nothing compared, applied or synced: one condition says why, the rest of the status (Argo
      // CD's controller's) is left as it is. Written only when it is not there yet.
      const now = this.now().toISOString();
      const conditions = mergeConditions(
        prev?.conditions,
        [
          { type: CONDITION.ControllerConflictError, message: conflict },
          ...(prev?.conditions ?? []).filter((c) => c.type !== CONDITION.ControllerConflictError),
        ],
        now,
      );
      const next: ApplicationStatus = { ...prev, conditions };
      if (statusChanged(prev, next)) await writeStatus(this.d.control, raw, next);
      return {};
    }
    const annotations = (raw.metadata as { annotations?: Record<string, string> }).annotations ?? {};
    const nowDate = this.now();
    const now = nowDate.toISOString();
    // Asked for, or hard when the last comparison is older than timeout.hard.reconciliation.
    const hardTimeoutSeconds = readImpersonationSettings(
      this.d.cache.settingsConfigMap(),
    ).hardReconciliationTimeoutSeconds;
    const expiredHard =
      annotations[REFRESH_ANNOTATION] === undefined &&
      periodicRefreshKind(prev, nowDate.getTime(), hardTimeoutSeconds * 1000) === 'hard';
    const refreshKind = expiredHard ? 'hard' : annotations[REFRESH_ANNOTATION];
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
    if (expiredHard)
      log.info(
        `Refreshing app status (comparison expired, requesting hard refresh. reconciledAt: ${prev?.reconciledAt ?? 'never'}, expiry: ${hardTimeoutSeconds}s)`,
      );
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
      } = await compareApplication(this.d, admission, this.assessor(), log, prev, refreshKind, now));
    } else {
      // spec §5: the diff applies the same table as the sync; nothing refused is reported Synced.
      log.warn({ condition: admission.condition.type }, admission.condition.message);
      // As Argo CD's controller when the Application's conditions are errors: an empty tree, no
      // managed resources.
      this.d.argoCache?.submit({
        instance: appInstanceName(raw, this.d.cache.namespace),
        exists: () => this.d.cache.app(key) !== undefined,
        build: async () => ({ tree: {}, managed: null }),
      });
      const own = admission.by === 'identity' ? admission.conditions : [];
      next = {
        ...prev,
        sync: { status: 'Unknown', ...(admission.app ? { comparedTo: comparedTo(admission.app) } : {}) },
        health: { status: 'Unknown' },
        reconciledAt: now,
        conditions: mergeConditions(prev?.conditions, [admission.condition, ...own, ...carriedConditions(prev)], now),
      };
    }
    // Argo CD writes its own namespace into every status it refreshes.
    next = { ...withHealthTransition(prev, next, now), controllerNamespace: this.d.cache.namespace };
    // The finalizers before the status, as Argo CD: an Application is never seen Synced without
    // the pre-delete finalizer its hooks need, so a deletion right after cannot skip them. Guarded
    // by the resourceVersion the status write would have been: a write meanwhile (the operation's)
    // is a conflict for both, never overwritten by a status computed before it.
    // On top of a memory-budget condition written while this refresh waited (applications.ts side writes).
    const latest = onTopOfSideWrites(this.d.control, raw);
    const current = finalizers
      ? await patchApplication(this.d.control, latest, {
          metadata: { finalizers, resourceVersion: latest.metadata.resourceVersion },
        })
      : latest;
    // An automated sync goes in this write where the CRD allows it (no status subresource):
    // `operation` with its Running state, as the operation worker would write it before anything
    // touches the destination. One request where Argo CD's controller makes two (its patch of
    // `operation`, then the Running state); the worker, queued by the watch's event, resumes it.
    const starting =
      result.startOperation && current['operation'] === undefined && !(await statusSubresource(this.d.control))
        ? result.startOperation
        : undefined;
    if (starting)
      next = {
        ...next,
        operationState: startedState(
          starting,
          this.now().toISOString(),
          (current.metadata as { generation?: number }).generation,
        ),
      };
    const memo = this.written.get(key);
    const base = memo && isDeepStrictEqual(current['status'], memo.kept) ? memo.sent : prev;
    // A refresh asked for (the refresh annotation, or one made hard by timeout.hard.reconciliation)
    // is always written, reconciledAt with it, as Argo CD's controller persists every comparison it
    // was asked for: `argocd app get --refresh` waits for reconciledAt to move. So is the first
    // comparison after an operation ended (comparisonOwed).
    let started = false;
    if (
      starting ||
      refreshKind !== undefined ||
      comparisonOwed(base, this.now().getTime()) ||
      shouldWriteStatus(base, next, this.now().getTime(), this.d.refreshIntervalMs())
    ) {
      // First, as Argo CD records it right after setting `operation`: the worker the watch wakes
      // records its own "Sync operation started" after it (the hold).
      const release = starting ? this.d.eventOrder?.hold(key) : undefined;
      const ticket = starting ? this.d.handoff?.ticket() : undefined;
      let stored;
      try {
        stored = await writeStatus(this.d.control, current, next, starting ? { setOperation: starting } : {});
        started = starting !== undefined && stored['operation'] !== undefined;
        if (started && ticket) this.d.handoff?.give(key, stored, ticket);
        if (started && starting) await this.initiated(raw, starting);
      } finally {
        release?.();
      }
      if (!isDeepStrictEqual(stored['status'], JSON.parse(JSON.stringify(next))))
        this.written.set(key, { kept: stored['status'], sent: next });
      else this.written.delete(key);
      // Argo CD's events for a changed sync or health status (appcontroller.go persistAppStatus).
      const [s0, s1] = [prev?.sync?.status ?? '', next.sync?.status ?? ''];
      if (s0 !== s1)
        await this.d.events.record(
          involvedApplication(raw),
          'Normal',
          EVENT_REASON.ResourceUpdated,
          `Updated sync status: ${s0} -> ${s1}`,
        );
      const [h0, h1] = [prev?.health?.status ?? '', next.health?.status ?? ''];
      if (h0 !== h1) {
        const why = next.health?.message ? ` (${next.health.message})` : '';
        await this.d.events.record(
          involvedApplication(raw),
          'Normal',
          EVENT_REASON.ResourceUpdated,
          `Updated health status: ${h0} -> ${h1}${why}`,
        );
      }
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
    if (result.startOperation) {
      if (!started) {
        const release = this.d.eventOrder?.hold(key);
        try {
          await patchApplication(this.d.control, raw, { operation: result.startOperation });
          await this.initiated(raw, result.startOperation);
        } finally {
          release?.();
        }
      }
      delete result.startOperation;
    }
    // A deleting Application's finalizer runs in the operation queue; a refresh (a project or
    // settings change) may have made it possible again.
    if ((raw.metadata as { deletionTimestamp?: string }).deletionTimestamp) result.operation = true;
    // Argo CD removes the refresh annotation and its timestamp once the refresh they asked for is done.
    await removeRefreshAnnotations(this.d.control, raw, REFRESH_ANNOTATION, REFRESH_TIMESTAMP_ANNOTATION);
    return result;
  }

  /** Argo CD's event for an automated sync it set (appcontroller.go autoSync). */
  private async initiated(raw: Parameters<typeof involvedApplication>[0], operation: Operation): Promise<void> {
    await this.d.events.record(
      involvedApplication(raw),
      'Normal',
      EVENT_REASON.OperationStarted,
      `Initiated automated sync to '${operation.sync?.revision ?? ''}'`,
    );
  }
}
