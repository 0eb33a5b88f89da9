// Deleting an Application, in Argo CD's order (finalizeApplicationDeletion), one finalizer per call:
// the PreDelete hooks run before anything is deleted (delete-hooks.ts); then, with the resources
// finalizer (`resources-finalizer.argocd.argoproj.io`, and its `/foreground` and `/background`
// variants), its resources are deleted (sync/delete.ts) with foreground propagation (background for
// the `/background` variant, as Argo CD), the finalizer removed only once they are gone; then the
// PostDelete hooks run; then the PreDelete hooks and the PostDelete hooks are cleaned up. Each step
// as the Application's identity, with its own finalizer. Runs in the operation queue.
import { toolSettingsOf } from '../api/tool-settings.ts';
import type { Logger } from 'pino';
import { CONDITION, EVENT_REASON, readStatus } from '../api/index.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import type { ControlClient } from '../kube/control.ts';
import { deleteResources, deletionInventoryOf, trackingTarget } from '../sync/index.ts';
import { admit, identityLabel, madeFor } from './admission.ts';
import { patchApplication, writeStatus } from './applications.ts';
import type { RawApplication } from './applications.ts';
import type { ControllerCache } from './cache.ts';
import type { EventSink } from './events.ts';
import { involvedApplication } from './events.ts';
import type { ReconcileResult } from './reconcile.ts';
import { mergeConditions } from './status.ts';
import type { Semantics } from './semantics.ts';
import { deletionApprovedSince } from './deletion-approval.ts';
import type { HealthAssessors } from './health.ts';
import type { Renderer } from '../renderer/client.ts';
import type { ApplicationLimitsReader } from './app-limits.ts';
import { renderApplication } from './render.ts';
import { refuseUnreadableRepositories } from './repositories.ts';
import type { DeleteHookType, HookStep } from './delete-hooks.ts';
import {
  cleanupDeleteHooks,
  POST_DELETE_CLEANUP_FINALIZER,
  POST_DELETE_FINALIZER,
  PRE_DELETE_CLEANUP_FINALIZER,
  PRE_DELETE_FINALIZER,
  runDeleteHooks,
} from './delete-hooks.ts';

export const RESOURCES_FINALIZER = 'resources-finalizer.argocd.argoproj.io';
export const FOREGROUND_FINALIZER = `${RESOURCES_FINALIZER}/foreground`;
export const BACKGROUND_FINALIZER = `${RESOURCES_FINALIZER}/background`;
const CASCADE_FINALIZERS = [RESOURCES_FINALIZER, FOREGROUND_FINALIZER, BACKGROUND_FINALIZER];

/**
 * The hook steps, each with its finalizer, its hook type, and how Argo CD words its error (it wraps
 * the PreDelete steps' errors, not the PostDelete ones).
 */
const HOOK_STEPS: ReadonlyArray<{ finalizer: string; type: DeleteHookType; cleanup: boolean; wrap: string }> = [
  { finalizer: PRE_DELETE_FINALIZER, type: 'PreDelete', cleanup: false, wrap: 'error executing pre-delete hooks: ' },
  { finalizer: POST_DELETE_FINALIZER, type: 'PostDelete', cleanup: false, wrap: '' },
  {
    finalizer: PRE_DELETE_CLEANUP_FINALIZER,
    type: 'PreDelete',
    cleanup: true,
    wrap: 'error cleaning up pre-delete hooks: ',
  },
  { finalizer: POST_DELETE_CLEANUP_FINALIZER, type: 'PostDelete', cleanup: true, wrap: '' },
];

export interface FinalizerDeps {
  cache: ControllerCache;
  factory: DestinationClientFactory;
  control: ControlClient;
  events: EventSink;
  logger: Logger;
  semantics: Semantics;
  /** For the PostDelete hooks, rendered from the Application's source when it is deleted. */
  renderer: Renderer;
  /** argocd-cm's limits on each Application's render (the PostDelete hooks' render too). */
  limits: ApplicationLimitsReader;
  health: HealthAssessors;
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
    const cascade = finalizers.find((f) => CASCADE_FINALIZERS.includes(f));
    // PreDelete hooks before the resources; every other hook step after them.
    const hooks = HOOK_STEPS.find((s) => finalizers.includes(s.finalizer));
    if (!cascade && !hooks) return {};
    const involved = involvedApplication(raw);
    const ctx = admit(this.d.cache.controlState(), raw);
    const fail = async (message: string): Promise<ReconcileResult> => {
      this.d.logger.warn({ application: key }, `deletion failed: ${message}`);
      // Argo CD's event for it (appcontroller.go processAppOperationQueueItem).
      await this.d.events.record(
        involved,
        'Warning',
        EVENT_REASON.StatusRefreshed,
        `Unable to delete application resources: ${message}`,
      );
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
    const semantics = this.d.semantics.for(ctx.app, this.d.cache.settingsConfigMap(), ctx.cluster);
    const client = this.d.factory.forIdentity(ctx.cluster, ctx.actsAs, madeFor(ctx, revision));
    const remove = async (finalizer: string): Promise<ReconcileResult> => {
      // JSON merge patch replaces the list; the resourceVersion makes it fail rather than drop a finalizer added meanwhile.
      await patchApplication(this.d.control, raw, {
        metadata: {
          finalizers: finalizers.filter((f) => f !== finalizer),
          resourceVersion: raw.metadata.resourceVersion,
        },
      });
      return finalizers.length > 1 ? { requeueAfterMs: 1_000 } : {};
    };
    if (hooks && (!cascade || hooks.finalizer === PRE_DELETE_FINALIZER)) {
      let objects;
      try {
        const repositories = this.d.cache.repositoryState();
        refuseUnreadableRepositories(ctx.app, undefined, repositories, ctx.project);
        const rendered = await renderApplication(this.d.renderer, ctx.app, {
          project: ctx.project,
          controllerNamespace: this.d.cache.namespace,
          repositories,
          limits: this.d.limits.for(this.d.cache.settingsConfigMap()),
          tools: toolSettingsOf(this.d.cache.settingsConfigMap()),
        });
        objects = rendered.objects.map((o) => o.object);
      } catch (err) {
        return fail(`failed to render desired manifests: ${(err as Error).message}`);
      }
      const hookCtx = {
        client,
        objects,
        appName: trackingTarget(ctx.app, this.d.cache.namespace).appName,
        destinationNamespace: ctx.app.spec.destination?.namespace ?? '',
        tracking: semantics.tracking,
        health: this.d.health.for(this.d.cache.settingsConfigMap()),
      };
      const step: HookStep = hooks.cleanup
        ? await cleanupDeleteHooks(hooks.type, hookCtx)
        : await runDeleteHooks(hooks.type, hookCtx);
      if ('error' in step) return fail(`${hooks.wrap}${step.error}`);
      if ('waiting' in step) {
        this.d.logger.info({ application: key }, step.waiting);
        return { requeueAfterMs: 2_000 };
      }
      return remove(hooks.finalizer);
    }
    const result = await deleteResources(
      client,
      deletionInventoryOf(ctx.app),
      trackingTarget(ctx.app, this.d.cache.namespace).appName,
      {
        tracking: semantics.tracking,
        propagationPolicy: cascade === BACKGROUND_FINALIZER ? 'Background' : 'Foreground',
        appSyncOptions: semantics.appSyncOptions,
        approved: deletionApprovedSince(ctx.app, ctx.app.metadata.deletionTimestamp),
      },
    );
    if (!result.ok) return fail(result.message);
    if (result.waiting) {
      this.d.logger.info({ application: key }, result.waiting);
      return { requeueAfterMs: 5_000 };
    }
    if (result.remaining > 0) return { requeueAfterMs: 2_000 };
    await this.d.events.record(
      involved,
      'Normal',
      EVENT_REASON.ResourcesDeleted,
      `Deleted the Application's resources as ${identityLabel(ctx.actsAs)}`,
    );
    return remove(cascade as string);
  }
}
