// A sync's plan, made again at each step of its operation (the controller advances a sync step by
// step across reconciles, controller/sync-step.ts): the tasks Argo CD would run (hooks and resources
// in phases and waves, Argo CD's kind order, prunes in reverse wave order), each with where it
// stood at the end of the previous step (the operation's results so far, `prior`), grouped into
// the (phase, wave) runs a sync applies one after the other. Nothing here waits.
import type { CompletedPhase, KubeObject, ResourceRef, ResourceResult, SyncPhase } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import { describeIdentity } from '../kube/types.ts';
import type { CompareOptions, ComparisonResult, InventoryEntry } from './compare.ts';
import { compareResources, coordinates } from './compare.ts';
import { builtinAssessor } from './health/index.ts';
import { expandPhases } from './hooks.ts';
import { withHookFinalizer } from './hook-finalizer.ts';
import { clientSideApplyRefusal, parseSyncOptions, pruneLastOn } from './options.ts';
import { sortTasks, taskObject, taskWave } from './order.ts';
import { prepareDesired } from './prepare.ts';
import type { Recreating, SyncTask, TaskContext } from './tasks.ts';
import { applyTask } from './apply.ts';
import { respectIgnored } from './ignore.ts';
import { tooComplex } from './managed-fields.ts';
import { managedNamespace } from './namespace.ts';
import type { NamespaceMetadata } from './namespace.ts';
import { failureMessage, hookTypeOf, isPrune, setResult } from './tasks.ts';
import { refOf } from './util.ts';
import { waveOf } from './annotations.ts';

export interface SyncOptions extends CompareOptions {
  /** The commit being synced; names `generateName` hooks. */
  revision?: string;
  /** Delete what the inventory holds and Git no longer does. */
  prune?: boolean;
  /** Send everything as a dry run: nothing changes, results say what would. */
  dryRun?: boolean;
  /** The Application's (or the operation's) syncOptions: CreateNamespace=true, PruneLast=true, ... */
  syncOptions?: readonly string[] | undefined;
  /** Selective sync: only these resources, and no hooks (as Argo CD). */
  resources?: readonly ResourceRef[] | undefined;
  fieldManager?: string;
  signal?: AbortSignal;
  /** When the operation started: names `generateName` hooks, the same at every step. */
  startedAt?: Date;
  /** The operation's results so far (operationState.syncResult.resources): where each task stood. */
  prior?: readonly ResourceResult[] | undefined;
  /**
   * The distinct sync waves of the prunes when the operation began: prunes run in their reverse
   * order, which must not move as pruned objects disappear between steps.
   */
  pruneWaves?: readonly number[] | undefined;
  /** The Application's deletion-approved annotation is at or after this operation's start (Prune=confirm). */
  pruneConfirmed?: boolean;
  /** operation.sync.syncStrategy: `apply` runs no hooks; `force` forces every object. */
  syncStrategy?:
    | { apply?: { force?: boolean | undefined } | undefined; hook?: { force?: boolean | undefined } | undefined }
    | undefined;
  /** syncPolicy.managedNamespaceMetadata, applied to the namespace CreateNamespace=true manages. */
  managedNamespaceMetadata?: NamespaceMetadata | undefined;
  /** The deletes of Replace=true / Force=true earlier steps sent, still to see go (progress.recreating). */
  recreating?: readonly Recreating[] | undefined;
  /** The clock of the operation (a delete's timeout is measured by it); Date.now unless told. */
  now?: (() => number) | undefined;
}

export interface SyncResult {
  phase: CompletedPhase;
  message: string;
  identity: string;
  resources: ResourceResult[];
  /** The comparison the sync started from (absent when it stopped before comparing). */
  comparison?: ComparisonResult;
}

export interface SyncPlan {
  ctx: TaskContext;
  identity: string;
  /** PreSync, Sync and PostSync tasks, in the order they run; `group` is their (phase, wave) run. */
  tasks: SyncTask[];
  /** The SyncFail hooks: they run only when the sync fails. */
  syncFail: SyncTask[];
  /** How many (phase, wave) groups `tasks` has. */
  groups: number;
  comparison: ComparisonResult;
  /** The prune waves reversal was made over (persist them with the operation). */
  pruneWaves: number[];
  /** The Application approved deletions since the operation started (Prune=confirm prunes may go). */
  pruneConfirmed: boolean;
  /** The results so far: the prior ones, updated and added to by this step, in the order they ran. */
  results(): ResourceResult[];
}

export type Planned = { kind: 'plan'; plan: SyncPlan } | { kind: 'done'; result: SyncResult };

function matchesSelection(o: KubeObject, sel: readonly ResourceRef[]): boolean {
  return sel.some(
    (r) =>
      (r.group ?? '') === groupOf(o.apiVersion) &&
      r.kind === o.kind &&
      r.name === o.metadata.name &&
      (r.namespace === undefined || r.namespace === '' || r.namespace === (o.metadata.namespace ?? '')),
  );
}

export function toResult(t: SyncTask): ResourceResult {
  const hookType = hookTypeOf(t);
  return {
    ...coordinates(taskObject(t)),
    status: t.result ?? 'SyncFailed',
    message: t.message,
    ...(hookType ? { hookType } : {}),
    hookPhase: t.operationState ?? 'Running',
    syncPhase: t.phase,
  };
}

/** What identifies a task's result across steps: its phase and its object. */
function resultKey(r: Pick<ResourceResult, 'syncPhase' | 'group' | 'kind' | 'namespace' | 'name'>): string {
  return `${r.syncPhase}/${r.group}/${r.kind}/${r.namespace}/${r.name}`;
}

/** The context every task of a sync runs in. */
export function taskContext(client: DestinationClient, options: SyncOptions, firstOrder: number): TaskContext {
  const app = parseSyncOptions(options.syncOptions);
  const strategy = options.syncStrategy;
  let order = firstOrder;
  return {
    client,
    dryRun: options.dryRun ?? false,
    prune: options.prune ?? false,
    fieldManager: options.fieldManager ?? 'impersync',
    fieldValidation: app.validate ? options.fieldValidation : 'Ignore',
    prunePropagationPolicy: app.prunePropagationPolicy,
    pruneDefault: app.prune,
    replace: app.replace,
    force: app.force || strategy?.apply?.force === true || strategy?.hook?.force === true,
    takeover: app.clientSideApplyMigration ? options.takeover : undefined,
    pollMs: 1000,
    health: options.health ?? builtinAssessor,
    signal: options.signal,
    nextOrder: () => order++,
    recreating: (options.recreating ?? []).map((r) => ({ ...r })),
    now: options.now ?? Date.now,
  };
}

export async function planSync(
  client: DestinationClient,
  desired: readonly KubeObject[],
  inventory: readonly InventoryEntry[],
  options: SyncOptions,
): Promise<Planned> {
  const app = parseSyncOptions(options.syncOptions);
  const startedAt = options.startedAt ?? new Date();
  const selection = options.resources && options.resources.length ? options.resources : undefined;
  // The apply strategy, like a selective sync, runs no hooks (gitops-engine skipHooks).
  const skipHooks = selection !== undefined || options.syncStrategy?.apply !== undefined;
  const prior = options.prior ?? [];
  const ctx = taskContext(client, options, prior.length);
  const identity = describeIdentity(client.identity);
  const started: SyncTask[] = [];
  const results = (): ResourceResult[] => {
    const byKey = new Map(prior.map((r) => [resultKey(r), r]));
    const run = started.filter((t) => t.order !== undefined).sort((a, b) => (a.order ?? 0) - (b.order ?? 0));
    for (const t of run) {
      const r = toResult(t);
      byKey.set(resultKey(r), r);
    }
    return [...byKey.values()];
  };
  const done = (phase: CompletedPhase, message: string, comparison?: ComparisonResult): Planned => ({
    kind: 'done',
    result: { phase, message, identity, resources: results(), ...(comparison ? { comparison } : {}) },
  });

  // Hooks run once per phase they name (a generateName hook under a name per phase).
  const phasesOf = new Map<KubeObject, SyncPhase[]>();
  for (const o of desired) {
    for (const { obj, phase } of expandPhases(o, options.revision ?? '', startedAt))
      phasesOf.set(obj, [...(phasesOf.get(obj) ?? []), phase]);
  }
  const prepared = await prepareDesired(client, [...phasesOf.keys()], options);

  // Bad input stops everything before the first write (Argo CD: "tasks are not valid").
  const invalid = prepared.objects.filter((p) => p.error && (!selection || matchesSelection(p.target, selection)));
  if (invalid.length) {
    for (const p of invalid) {
      const t: SyncTask = { phase: 'Sync', target: p.target, live: null, hook: p.hook, message: '' };
      started.push(t);
      setResult(ctx, t, 'SyncFailed', 'Failed', p.error?.message ?? 'invalid');
    }
    const reasons = [...new Set(invalid.map((p) => p.error?.message ?? ''))].sort();
    return done('Failed', `one or more synchronization tasks are not valid: ${reasons.join('; ')}`);
  }

  // ServerSideApply=false: refused before the first write, not applied server-side regardless.
  const refusal = clientSideApplyRefusal(
    options.syncOptions,
    prepared.objects.map((p) => p.source),
  );
  if (refusal) return done('Failed', refusal);

  // CreateNamespace=true: the destination namespace first, as the identity (spec §5); with
  // managedNamespaceMetadata its labels and annotations are applied to it even when it exists.
  if (
    app.createNamespace &&
    options.namespace &&
    !prepared.objects.some(
      (p) =>
        p.target.kind === 'Namespace' &&
        groupOf(p.target.apiVersion) === '' &&
        p.target.metadata.name === options.namespace,
    )
  ) {
    const ns = managedNamespace(options.namespace, options.managedNamespaceMetadata);
    const live = await client.get(refOf(ns));
    if (!live.ok || live.value === null || options.managedNamespaceMetadata) {
      const t: SyncTask = { phase: 'PreSync', target: ns, live: null, hook: false, message: '' };
      started.push(t);
      if (!live.ok) setResult(ctx, t, 'SyncFailed', 'Failed', `namespace auto creation failed: ${live.error.message}`);
      else await applyTask(ctx, t);
      if (t.result === 'SyncFailed') return done('Failed', failureMessage('the namespace failed to apply', [t]));
      if (t.operationState === 'Running') setResult(ctx, t, undefined, 'Succeeded', '');
    }
  }

  const comparison = await compareResources(client, prepared, inventory, {
    ...options,
    fieldValidation: ctx.fieldValidation,
  });
  // FailOnSharedResource=true (controller/sync.go): another Application's object stops the sync.
  if (app.failOnSharedResource && comparison.shared.length > 0)
    return done('Failed', `Shared resource found: ${comparison.shared[0]}`, comparison);
  const all: SyncTask[] = [];
  for (const r of comparison.resources) {
    if (r.requiresPruning) {
      if (r.live) all.push({ phase: 'Sync', target: null, live: r.live, hook: false, message: '' });
    } else if (r.target) {
      // RespectIgnoreDifferences=true: ignored fields are applied with their live values.
      let target = r.target;
      try {
        if (app.respectIgnoreDifferences && options.diff)
          target = await respectIgnored(options.diff, r.target, r.live ?? null);
      } catch (e) {
        if (!tooComplex(e)) throw e;
        const what = `${r.target.kind}/${r.target.metadata.name}`;
        return done('Failed', `failed to respect ignored differences of ${what}: ${e.message}`, comparison);
      }
      all.push({
        phase: 'Sync',
        target,
        live: r.live ?? null,
        hook: false,
        comparison: r.status,
        message: '',
      });
    }
  }
  // Selective syncs and the apply strategy run no hooks (as Argo CD).
  if (!skipHooks) {
    for (const p of prepared.objects.filter((x) => x.hook)) {
      const got = await client.get(refOf(p.target));
      // Created with Argo CD's hook finalizer, taken off when the hook completes (hook-finalizer.ts).
      const target = withHookFinalizer(p.target);
      for (const phase of phasesOf.get(p.source) ?? [])
        all.push({ phase, target, live: got.ok ? got.value : null, hook: true, message: '' });
    }
  }
  // Where each task stood at the end of the last step.
  const before = new Map(prior.map((r, i) => [resultKey(r), { r, i }]));
  for (const t of all) {
    const p = before.get(resultKey(toResult(t)));
    if (!p) continue;
    t.result = p.r.status;
    t.operationState = p.r.hookPhase;
    t.message = p.r.message;
    t.order = p.i;
  }
  let tasks = all.filter((t) => !selection || matchesSelection(taskObject(t), selection));
  // ApplyOutOfSyncOnly leaves out what is in sync already; never a task this operation started.
  if (app.applyOutOfSyncOnly)
    tasks = tasks.filter(
      (t) => t.order !== undefined || t.hook || isPrune(t) || !(t.comparison === 'Synced' && t.live),
    );
  started.push(...tasks);

  // Prunes run in reverse wave order (over the waves the operation began with); PruneLast ones
  // after the last Sync wave.
  const pruneWaves = [...new Set([...(options.pruneWaves ?? []), ...tasks.filter(isPrune).map(taskWave)])].sort(
    (a, b) => a - b,
  );
  const reversed = new Map(pruneWaves.map((w, i) => [w, pruneWaves[pruneWaves.length - 1 - i] as number]));
  for (const t of tasks.filter(isPrune)) t.waveOverride = reversed.get(waveOf(taskObject(t)));
  const lastWave = Math.max(0, ...tasks.filter((t) => t.phase === 'Sync').map(taskWave)) + 1;
  for (const t of tasks.filter(isPrune)) if (app.pruneLast || pruneLastOn(t.live)) t.waveOverride = lastWave;
  sortTasks(tasks);

  const syncFail = tasks.filter((t) => t.phase === 'SyncFail');
  const main = tasks.filter((t) => t.phase !== 'SyncFail');
  if (main.length === 0) return done('Succeeded', 'successfully synced (no more tasks)', comparison);
  // Contiguous runs of one (phase, wave), in order.
  let groups = 0;
  for (let i = 0; i < main.length; i++) {
    const t = main[i] as SyncTask;
    const prev = main[i - 1];
    if (prev && (prev.phase !== t.phase || taskWave(prev) !== taskWave(t))) groups++;
    t.group = groups;
  }
  return {
    kind: 'plan',
    plan: {
      ctx,
      identity,
      tasks: main,
      syncFail,
      groups: groups + 1,
      comparison,
      pruneWaves,
      pruneConfirmed: options.pruneConfirmed === true,
      results,
    },
  };
}
