// The sync engine: server-side diff, sync, health and tracking, all through ONE DestinationClient.
//
// API (what the controller and the CLI rely on):
//
// - `compare(client, desired, inventory, {appName, namespace, fieldValidation?, health?})` → ComparisonResult
//     For each desired object (hooks and `Skip` excluded): a dry-run server-side apply and a live
//     read, both as the client's identity, compared after normalization (managedFields,
//     resourceVersion, uid, creationTimestamp, generation, status, last-applied annotation
//     removed; defaults come with the dry-run result). `resources[]` holds {group, version, kind,
//     namespace, name, status: Synced|OutOfSync|Unknown, health, diff, requiresPruning, message?,
//     target?, live?}; objects the inventory (the Application's previous status.resources) holds,
//     Git no longer does and the live object's tracking id still claims are OutOfSync with
//     requiresPruning. `syncStatus` is Unknown when any object could not be compared (`errors`
//     holds Argo CD's "Failed to compare desired state to live state: ..." messages), else
//     OutOfSync when any object is, else Synced. `health` aggregates resource health the way
//     Argo CD does. `identity` names who compared. Never throws for API errors.
// - `refusedComparison(message, desired)`: spec §5's deny/error as a comparison: Unknown, the
//     decision's message as the only error, nothing Synced.
// - `planSync(client, desired, inventory, {appName, namespace, revision?, prune?, dryRun?,
//     syncOptions?, resources?, fieldValidation?, signal?, health?, startedAt?, prior?,
//     pruneWaves?, diff?, tracking?, filter?, takeover?, pruneConfirmed?, syncStrategy?,
//     managedNamespaceMetadata?})` → {kind: 'plan', plan} | {kind: 'done', result: SyncResult}
//     A sync as Argo CD plans one, made again at each step of an operation: PreSync, Sync, PostSync
//     phases; sync waves; Argo CD's kind order; hooks (none for a selective sync or syncStrategy
//     apply); prunes in reverse wave order; SyncFail hooks apart; CreateNamespace=true (with
//     managedNamespaceMetadata), PruneLast=true, ApplyOutOfSyncOnly=true, Validate=false,
//     RespectIgnoreDifferences=true, FailOnSharedResource=true, Replace=true, Force=true (and
//     syncStrategy force), the client-side apply migration (takeover), PrunePropagationPolicy and Prune=false|confirm
//     (app-level) and Prune=false|confirm, PruneLast=true, Validate=false, Replace=true, Force=true
//     (annotation). `prior` (the operation's results so far) says where each task stood; each task
//     carries its (phase, wave) `group`. Bad input, a shared resource refused, or no task at all,
//     is `done` at once. `awaitsConfirmation(plan, task)`: a Prune=confirm prune the Application has
//     not approved (argocd.argoproj.io/deletion-approved since `startedAt`): its group waits.
// - `applyGroup(ctx, tasks)`: one group's pending tasks applied (prunes, hooks, kind runs, CRDs
//     briefly waited on until served), never waiting for health, nor for what Replace/Force or
//     BeforeHookCreation delete to create again (created at a later step); `observe(ctx, tasks)` reads the
//     running ones once; `isRunning`, `isPending`; `deleteHooks` by policy; Argo CD's messages
//     (`failureMessage`: "one or more objects failed to apply, reason: ...", `waitingMessage`:
//     "waiting for healthy state of ..."). The controller runs these one reconcile at a time
//     (controller/sync-step.ts), the rules of what comes next in controller/operation-machine.ts.
//     Every object applied carries `argocd.argoproj.io/tracking-id`. No retries: a 403 fails its
//     object with the API server's message and ends the sync after that wave.
// - `deleteResources(client, inventory, appName)` → {ok, message, remaining}: the resources
//     finalizer's deletion of what the inventory lists and still carries the app's tracking id.
// - `inventoryOf(app)`, `resourceStatusOf(comparison)`, `trackingTarget(app, controllerNamespace)`:
//     status.resources to an inventory and back, and the app name and namespace every call needs.
// - `resourceScopes(client, objects)`: namespaced or not, per kind, from the identity's discovery.
// - `HealthAssessor`: how live objects' health is judged, passed as the `health` option of
//     compare() and sync() (default `builtinAssessor`, Argo CD's built-in checks; health/).
//     `aggregateHealth`: the Application's health, naming what caused it.
// - `formatTrackingId`, `parseTrackingId`, `appInstanceName`, `trackingIdFor`: tracking ids.
// - `parseSyncOptions(list)`: the sync options this engine understands (and those it ignores).
//
// sync/ imports nothing from kube/ but its types (kube/types.ts): it cannot reach a credential.
export { compare, compareResources, refusedComparison } from './compare.ts';
export type { ComparisonResult, CompareOptions, InventoryEntry, ResourceComparison } from './compare.ts';
export { applyGroup, awaitsConfirmation, isPending, isRunning, observe, planSync, toResult } from './sync.ts';
export type { Applied, Planned, SyncPlan } from './sync.ts';
export { failureMessage, waitingMessage } from './tasks.ts';
export { deleteHooks } from './hook-tasks.ts';
export type { SyncTask } from './tasks.ts';
export { deleteResources } from './delete.ts';
export type { DeletionResult } from './delete.ts';
export { deletionInventoryOf, inventoryOf, resourceStatusOf, trackingTarget } from './inventory.ts';
export { resourceScopes } from './scopes.ts';
export type { ResourceScopes } from './scopes.ts';
export type { SyncOptions, SyncResult } from './plan.ts';
export * from './health/index.ts';
export {
  ANNOTATION_TRACKING_ID,
  appInstanceName,
  formatTrackingId,
  parseTrackingId,
  trackedApp,
  trackingIdFor,
  withTrackingId,
} from './tracking.ts';
export { parseSyncOptions, requiresDeletionConfirmation, deletedWithApplication } from './options.ts';
export { readSyncSettings } from './settings.ts';
export type { SyncSettings, StatusRule } from './settings.ts';
export type { ComparisonRules } from './compare.ts';
export type { IgnoreRule, DiffRules } from './ignore.ts';
export { normalizeIgnored, respectIgnored, rulesFor } from './ignore.ts';
export { FieldsTooComplexError, tooComplex } from './managed-fields.ts';
export type { ResourceFilter } from './filter.ts';
export { isExcludedResource } from './filter.ts';
export { JqRunner } from './jq/runner.ts';
export { takeoverManagers } from './takeover.ts';
export type { TrackingConfig, TrackingMethod } from './tracking.ts';
export { DEFAULT_TRACKING } from './tracking.ts';
export type { AppSyncOptions } from './options.ts';
export { KIND_ORDER, kindRank, sortTasks } from './order.ts';
export { unifiedDiff, toYaml } from './differ.ts';
export { normalizeForCompare } from './normalize.ts';
