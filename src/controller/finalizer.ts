// The resources finalizer (`resources-finalizer.argocd.argoproj.io`): when an Application that
// carries it is deleted, its resources are deleted first (sync/delete.ts), as its identity, and the
// finalizer is removed only once they are gone. Runs in the operation queue.
import type { Logger } from 'pino';
import { CONDITION, EVENT_REASON, readStatus } from '../api/index.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import type { ControlClient } from '../kube/control.ts';
import { deleteResources, inventoryOf, trackingTarget } from '../sync/index.ts';
import { admit, identityLabel, madeFor } from './admission.ts';
import { patchApplication, writeStatus } from './applications.ts';
import type { RawApplication } from './applications.ts';
import type { ControllerCache } from './cache.ts';
import type { EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import type { ReconcileResult } from './reconcile.ts';
import { mergeConditions } from './status.ts';

export const RESOURCES_FINALIZER = 'resources-finalizer.argocd.argoproj.io';

export interface FinalizerDeps {
  cache: ControllerCache;
  factory: DestinationClientFactory;
  control: ControlClient;
  events: EventSink;
  logger: Logger;
  now?: () => Date;
}

export class Finalizer {
  private readonly d: FinalizerDeps;

  constructor(deps: FinalizerDeps) {
    this.d = deps;
  }

  /**
   * Deletion (spec §10): with the resources finalizer, delete the Application's resources as its
   * identity, honouring `enforced` (deny and error block the deletion, never fall back silently);
   * a failure is a DeletionError condition and a Warning event, and the finalizer stays.
   */
  async finalize(key: string, raw: RawApplication): Promise<ReconcileResult> {
    const finalizers = raw.metadata.finalizers ?? [];
    if (!finalizers.includes(RESOURCES_FINALIZER)) return {};
    const involved = involvedApplication(raw);
    const ctx = admit(this.d.cache.controlState(), raw);
    const fail = async (message: string): Promise<ReconcileResult> => {
      this.d.logger.warn({ application: key }, `deletion failed: ${message}`);
      await this.d.events.record(involved, 'Warning', EVENT_REASON.DeletionFailed, message);
      const status = readStatus(raw) ?? {};
      const now = (this.d.now?.() ?? new Date()).toISOString();
      const conds = [
        { type: CONDITION.DeletionError, message },
        ...(status.conditions ?? []).filter((c) => c.type !== CONDITION.DeletionError),
      ];
      try {
        await writeStatus(this.d.control, raw, {
          ...status,
          conditions: mergeConditions(status.conditions, conds, now),
        });
      } catch {
        // the next attempt writes it
      }
      return { requeueAfterMs: 10_000 };
    };
    if (!ctx.admitted) return fail(ctx.condition.message);
    if (ctx.identity.decision === 'fallback') {
      this.d.logger.info({ application: key }, ctx.identity.message);
      await this.d.events.record(involved, 'Warning', EVENT_REASON.ImpersonationFallback, ctx.identity.message);
    }
    // Named in each request: the Application and the revision its resources are known at (the last
    // compared, else the last synced: a refused comparison records none).
    const last = readStatus(raw);
    const revision =
      last?.sync?.revision ??
      last?.sync?.revisions?.join(', ') ??
      last?.history?.at(-1)?.revision ??
      last?.operationState?.syncResult?.revision;
    const result = await deleteResources(
      this.d.factory.forIdentity(ctx.cluster, ctx.actsAs, madeFor(ctx, revision)),
      inventoryOf(ctx.app),
      trackingTarget(ctx.app, this.d.cache.namespace).appName,
    );
    if (!result.ok) return fail(result.message);
    if (result.remaining > 0) return { requeueAfterMs: 2_000 };
    await this.d.events.record(
      involved,
      'Normal',
      EVENT_REASON.ResourcesDeleted,
      `Deleted the Application's resources as ${identityLabel(ctx.actsAs)}`,
    );
    const rest = finalizers.filter((f) => f !== RESOURCES_FINALIZER);
    // JSON merge patch replaces the list; the resourceVersion makes it fail rather than drop a finalizer added meanwhile.
    await patchApplication(this.d.control, raw, {
      metadata: { finalizers: rest, resourceVersion: raw.metadata.resourceVersion },
    });
    return {};
  }
}
