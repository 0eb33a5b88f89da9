// The status side of an Application, as the controller writes it and Argo CD users read it: the
// vocabulary (sync status, health, operation and hook phases, result codes, condition types) named
// once, and the schemas of status, operation state and history beside the spec's (spec.ts).
// Loose objects, as everywhere in api/: what Argo CD adds to a status is kept.
import { z } from 'zod';
import { ApplicationDestinationSchema, ApplicationSourceSchema, OperationSchema } from './spec.ts';

/** Whether the live objects match Git: Argo CD's SyncStatusCode. */
export const SyncStatusCodeSchema = z.enum(['Synced', 'OutOfSync', 'Unknown']);
export type SyncStatusCode = z.infer<typeof SyncStatusCodeSchema>;

/** Argo CD's health codes, best first as the aggregate ranks them (sync/health/types.ts). */
export const HealthStatusCodeSchema = z.enum(['Healthy', 'Suspended', 'Progressing', 'Missing', 'Degraded', 'Unknown']);
export type HealthStatusCode = z.infer<typeof HealthStatusCodeSchema>;

export const HealthStatusSchema = z.looseObject({
  status: HealthStatusCodeSchema,
  message: z.string().optional(),
});
export type HealthStatus = z.infer<typeof HealthStatusSchema>;

/** status.health: Argo CD's AppHealthStatus, the resources' health and when its status code last changed. */
export const AppHealthStatusSchema = HealthStatusSchema.extend({ lastTransitionTime: z.string().optional() });
export type AppHealthStatus = z.infer<typeof AppHealthStatusSchema>;

/** Where an operation stands (operationState.phase). Terminating: `argocd app terminate-op` asked it to stop. */
export const OperationPhaseSchema = z.enum(['Running', 'Terminating', 'Succeeded', 'Failed', 'Error']);
export type OperationPhase = z.infer<typeof OperationPhaseSchema>;
/** How an operation ended. */
export type CompletedPhase = Extract<OperationPhase, 'Succeeded' | 'Failed' | 'Error'>;

export function isCompleted(phase: OperationPhase | undefined): phase is CompletedPhase {
  return phase === 'Succeeded' || phase === 'Failed' || phase === 'Error';
}

/** Where one resource or hook of a sync stands (syncResult.resources[].hookPhase): never Terminating. */
export const HookPhaseSchema = z.enum(['Running', 'Succeeded', 'Failed', 'Error']);
export type HookPhase = z.infer<typeof HookPhaseSchema>;

/** What a sync did with one resource. */
export const ResultCodeSchema = z.enum(['Synced', 'SyncFailed', 'Pruned', 'PruneSkipped']);
export type ResultCode = z.infer<typeof ResultCodeSchema>;

/** The phases of a sync; a hook names the ones it runs in. */
export const SyncPhaseSchema = z.enum(['PreSync', 'Sync', 'PostSync', 'SyncFail']);
export type SyncPhase = z.infer<typeof SyncPhaseSchema>;
/** A hook's type: a phase, or Skip (never applied). */
export type HookType = SyncPhase | 'Skip';

/** Argo CD's condition types, plus impersync's identity and §10 warning conditions. */
export const CONDITION = {
  InvalidSpecError: 'InvalidSpecError',
  ComparisonError: 'ComparisonError',
  SyncError: 'SyncError',
  DeletionError: 'DeletionError',
  UnknownError: 'UnknownError',
  /** spec §10: names the identity (decision and ServiceAccount) used for the last diff and sync. */
  ImpersonationInfo: 'ImpersonationInfo',
  /** spec §10: destinationServiceAccounts set while the feature is off, and fallback. */
  ImpersonationWarning: 'ImpersonationWarning',
  /** A live object another Application's tracking claims (controller/state.go). */
  SharedResourceWarning: 'SharedResourceWarning',
  /** An object listed more than once among the rendered ones. */
  RepeatedResourceWarning: 'RepeatedResourceWarning',
  /** A rendered object of a kind argocd-cm's resource.exclusions / inclusions leave out. */
  ExcludedResourceWarning: 'ExcludedResourceWarning',
  /** Objects in the destination namespace no Application tracks (AppProject orphanedResources.warn). */
  OrphanedResourceWarning: 'OrphanedResourceWarning',
  /** impersync's own: fields, options and annotations Argo CD defines that impersync does not act on. */
  UnsupportedFieldWarning: 'UnsupportedFieldWarning',
  /** impersync's own: Argo CD's application controller runs against the same Applications (controller/argocd-controller.ts). */
  ControllerConflictError: 'ControllerConflictError',
  /** impersync's own: a refresh or operation step has waited long for memory budget (controller/budget-waits.ts). */
  MemoryBudgetWarning: 'MemoryBudgetWarning',
} as const;

export const ConditionSchema = z.looseObject({
  type: z.string(),
  message: z.string(),
  lastTransitionTime: z.string().optional(),
});
export type AppCondition = z.infer<typeof ConditionSchema>;

/** One entry of status.resources: what was compared, and the inventory pruning and deletion rely on. */
export const ResourceStatusSchema = z.looseObject({
  group: z.string().optional(),
  version: z.string().optional(),
  kind: z.string(),
  namespace: z.string().optional(),
  name: z.string(),
  status: SyncStatusCodeSchema.optional(),
  health: HealthStatusSchema.optional(),
  requiresPruning: z.boolean().optional(),
  requiresDeletionConfirmation: z.boolean().optional(),
});
export type ResourceStatus = z.infer<typeof ResourceStatusSchema>;

export const SyncStatusSchema = z.looseObject({
  status: SyncStatusCodeSchema,
  revision: z.string().optional(),
  /** Multi-source: the revision of each source, in spec.sources order (revision is then empty). */
  revisions: z.array(z.string()).optional(),
  comparedTo: z
    .looseObject({
      source: ApplicationSourceSchema.optional(),
      sources: z.array(ApplicationSourceSchema).optional(),
      destination: ApplicationDestinationSchema.optional(),
    })
    .optional(),
});
export type SyncStatus = z.infer<typeof SyncStatusSchema>;

/** One resource (or hook) of a finished sync: operationState.syncResult.resources[]. */
export const ResourceResultSchema = z.looseObject({
  group: z.string(),
  version: z.string(),
  kind: z.string(),
  namespace: z.string(),
  name: z.string(),
  status: ResultCodeSchema,
  message: z.string(),
  hookType: z.enum(['PreSync', 'Sync', 'PostSync', 'SyncFail', 'Skip']).optional(),
  hookPhase: HookPhaseSchema,
  syncPhase: SyncPhaseSchema,
});
export type ResourceResult = z.infer<typeof ResourceResultSchema>;

export const SyncResultSchema = z.looseObject({
  revision: z.string().optional(),
  source: ApplicationSourceSchema.optional(),
  revisions: z.array(z.string()).optional(),
  sources: z.array(ApplicationSourceSchema).optional(),
  resources: z.array(ResourceResultSchema).optional(),
  /** Results left out to keep the status within the API server's size limit (controller/status-size.ts). */
  resourcesOmitted: z.number().int().optional(),
  /** Who synced: the ServiceAccount user, or the controller's own credential (impersync's own field). */
  identity: z.string().optional(),
  /** syncPolicy.managedNamespaceMetadata as this sync applied it. */
  managedNamespaceMetadata: z.looseObject({}).optional(),
});
export type SyncResult = z.infer<typeof SyncResultSchema>;

/**
 * Where a sync stands between the steps it advances by (impersync's own field of operationState):
 * the controller applies a wave, comes back when its resources' health or its hooks change, and
 * goes on (controller/operation-machine.ts). The results so far are syncResult.resources.
 */
export const SyncProgressSchema = z.looseObject({
  /** When the group now waited for was applied: its wait timeout counts from here. */
  waitingSince: z.string().optional(),
  /** The sync failed with this message; its SyncFail hooks run before the operation ends Failed. */
  failure: z.string().optional(),
  /** The distinct sync waves of the prunes when the operation began (prunes run in reverse). */
  pruneWaves: z.array(z.number().int()).optional(),
  /** The API server's 403 messages of the steps so far: a failed step then names every missing right. */
  refusals: z.array(z.string()).optional(),
  /**
   * Objects Replace=true / Force=true deleted to create again, still to see go: the task (phase,
   * group, kind, namespace, name), the deleted object's uid, and when the delete was sent.
   */
  recreating: z.array(z.looseObject({ key: z.string(), uid: z.string(), since: z.string() })).optional(),
  /** The pause after a wave (ARGOCD_SYNC_WAVE_DELAY) lasts until then: no next step before. */
  waveDelayUntil: z.string().optional(),
});
export type SyncProgress = z.infer<typeof SyncProgressSchema>;

export const OperationStateSchema = z.looseObject({
  operation: OperationSchema,
  phase: OperationPhaseSchema,
  message: z.string().optional(),
  startedAt: z.string(),
  finishedAt: z.string().optional(),
  retryCount: z.number().int().optional(),
  syncResult: SyncResultSchema.optional(),
  /**
   * The Application's metadata.generation when this operation started (impersync's own field).
   * Setting or clearing `operation` bumps the generation, so a completed state whose generation is
   * the current one belongs to the `operation` still set: it finished, only the clearing was lost.
   */
  generation: z.number().int().optional(),
  progress: SyncProgressSchema.optional(),
});
export type OperationState = z.infer<typeof OperationStateSchema>;

/** One successful sync in status.history. */
export const HistoryEntrySchema = z.looseObject({
  id: z.number().int(),
  /** Single source: the commit (or chart version); empty for a multi-source entry, which has `revisions`. */
  revision: z.string().optional(),
  source: ApplicationSourceSchema.optional(),
  revisions: z.array(z.string()).optional(),
  sources: z.array(ApplicationSourceSchema).optional(),
  deployedAt: z.string(),
  deployStartedAt: z.string().optional(),
  initiatedBy: OperationSchema.shape.initiatedBy,
  /**
   * Who applied it: the ServiceAccount user, or the controller's own credential (impersync's own
   * field, as operationState.syncResult.identity): "as whom was revision X applied".
   */
  identity: z.string().optional(),
});
export type HistoryEntry = z.infer<typeof HistoryEntrySchema>;

export const ApplicationStatusSchema = z.looseObject({
  sync: SyncStatusSchema.optional(),
  /** Argo CD's: the external URLs and container images of the Application's resources (controller/summary.ts). */
  summary: z
    .looseObject({
      externalURLs: z.array(z.string()).optional(),
      images: z.array(z.string()).optional(),
      isAppOfApps: z.boolean().optional(),
    })
    .optional(),
  /** Argo CD's: the namespace of the controller that reconciles the Application. */
  controllerNamespace: z.string().optional(),
  health: AppHealthStatusSchema.optional(),
  resources: z.array(ResourceStatusSchema).optional(),
  reconciledAt: z.string().optional(),
  sourceType: z.string().optional(),
  /** Multi-source: each source's type ('' for a `ref` source, which is not rendered). */
  sourceTypes: z.array(z.string()).optional(),
  conditions: z.array(ConditionSchema).optional(),
  operationState: OperationStateSchema.optional(),
  history: z.array(HistoryEntrySchema).optional(),
  /**
   * impersync's own: the AppProject's sync windows that apply to this Application, those active
   * now, and whether a manual sync may run (Argo CD's API shows the same as ApplicationSyncWindowState).
   */
  syncWindows: z
    .looseObject({
      assignedWindows: z.array(z.looseObject({})),
      activeWindows: z.array(z.looseObject({})),
      canSync: z.boolean(),
      error: z.string().optional(),
    })
    .optional(),
});
export type SyncWindowsStatus = NonNullable<z.infer<typeof ApplicationStatusSchema>['syncWindows']>;
export type ApplicationStatus = z.infer<typeof ApplicationStatusSchema>;

/**
 * The status of an Application as read from the API server, or undefined when it has none or one
 * that does not fit the schema (Application parsing then names the field; the next status written
 * replaces it).
 */
export function readStatus(raw: { readonly [k: string]: unknown }): ApplicationStatus | undefined {
  const parsed = ApplicationStatusSchema.safeParse(raw['status']);
  if (!parsed.success) return undefined;
  const state = parsed.data.operationState;
  if (!state || state.progress) return parsed.data;
  const progress = keptProgress(raw, state);
  return progress ? { ...parsed.data, operationState: { ...state, progress } } : parsed.data;
}

/**
 * Where a running sync stands (operationState.progress, impersync's own field) is also written to
 * this annotation of the Application when status is an ordinary field: Argo CD's CRD types
 * operationState and drops `progress` from every write, and Argo CD's server rewrites the whole
 * status with the fields its Go types know; annotations survive both. Read back only for the same
 * attempt of the same operation (its startedAt and retryCount).
 */
export const PROGRESS_ANNOTATION = 'impersync.io/operation-progress';

function keptProgress(raw: { readonly [k: string]: unknown }, state: OperationState): SyncProgress | undefined {
  const annotations = (raw['metadata'] as { annotations?: Record<string, unknown> } | undefined)?.annotations;
  const text = annotations?.[PROGRESS_ANNOTATION];
  if (typeof text !== 'string') return undefined;
  let kept: { startedAt?: unknown; retryCount?: unknown; progress?: unknown };
  try {
    kept = JSON.parse(text) as typeof kept;
  } catch {
    return undefined;
  }
  if (kept.startedAt !== state.startedAt || (kept.retryCount ?? 0) !== (state.retryCount ?? 0)) return undefined;
  const progress = SyncProgressSchema.safeParse(kept.progress);
  return progress.success ? progress.data : undefined;
}
