// A sync as Argo CD runs one, to completion in a single call: hooks and resources in phases
// (PreSync, Sync, PostSync) and waves, kind order within a wave, each wave healthy before the
// next, prune as asked, SyncFail hooks on failure. Every request goes through the one
// DestinationClient it is given (ARCHITECTURE.md, the identity rule).
import type { CompletedPhase, KubeObject, ResourceRef, ResourceResult, SyncPhase } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import { describeIdentity } from '../kube/types.ts';
import { hookDeletePolicies } from './annotations.ts';
import { respectIgnored } from './ignore.ts';
import { managedNamespace } from './namespace.ts';
import type { CompareOptions, ComparisonResult, InventoryEntry } from './compare.ts';
import { compareResources } from './compare.ts';
import { builtinAssessor } from './health/index.ts';
import { expandPhases } from './hooks.ts';
import { parseSyncOptions, pruneLastOn, pruneNeedsConfirmation } from './options.ts';
import { sortTasks, taskObject, taskWave } from './order.ts';
import { prepareDesired } from './prepare.ts';
import type { SyncTask, TaskContext } from './tasks.ts';
import { applyTask } from './apply.ts';
import {
  deleteAndWait,
  deleteHooks,
  hookTypeOf,
  isPrune,
  pruneTask,
  refreshRunning,
  setResult,
  waitForCrd,
  waitingMessage,
} from './tasks.ts';
import { mapLimit, refOf, sleep } from './util.ts';

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
  /** How long one wave (or the hooks of one phase) may take to become healthy. Default 5 minutes. */
  waitTimeoutMs?: number;
  pollIntervalMs?: number;
  signal?: AbortSignal;
  /** Called with Argo CD's running messages ("waiting for healthy state of ..."). */
  onProgress?: (message: string) => void;
  /**
   * Called before each wave after the first (the caller checks what it needs before calling
   * sync()): a message stops the sync there, Failed with that message, nothing more applied and
   * what was applied reported. It carries no identity: the caller owns whatever it checks with.
   */
  beforeWave?: () => Promise<string | null>;
  startedAt?: Date;
  /** The Application's deletion-approved annotation is at or after this operation's start. */
  pruneConfirmed?: boolean;
  /** operation.sync.syncStrategy: `apply` runs no hooks; `force` forces every object. */
  syncStrategy?:
    | { apply?: { force?: boolean | undefined } | undefined; hook?: { force?: boolean | undefined } | undefined }
    | undefined;
  /** syncPolicy.managedNamespaceMetadata, applied to the namespace CreateNamespace=true manages. */
  managedNamespaceMetadata?:
    { labels?: Record<string, string> | undefined; annotations?: Record<string, string> | undefined } | undefined;
}

export interface SyncResult {
  /** Running: the sync waits for something outside it (pruning confirmation); run it again later. */
  phase: CompletedPhase | 'Running';
  message: string;
  identity: string;
  resources: ResourceResult[];
  /** The comparison the sync started from (absent when it stopped before comparing). */
  comparison?: ComparisonResult;
}

const DEFAULT_WAIT_MS = 5 * 60_000;
const CRD_WAIT_MS = 60_000;
const APPLY_CONCURRENCY = 8;

function matchesSelection(o: KubeObject, sel: readonly ResourceRef[]): boolean {
  return sel.some(
    (r) =>
      (r.group ?? '') === groupOf(o.apiVersion) &&
      r.kind === o.kind &&
      r.name === o.metadata.name &&
      (r.namespace === undefined || r.namespace === '' || r.namespace === (o.metadata.namespace ?? '')),
  );
}

function toResult(t: SyncTask): ResourceResult {
  const o = taskObject(t);
  const slash = o.apiVersion.indexOf('/');
  const hookType = hookTypeOf(t);
  return {
    group: groupOf(o.apiVersion),
    version: slash < 0 ? o.apiVersion : o.apiVersion.slice(slash + 1),
    kind: o.kind,
    namespace: o.metadata.namespace ?? '',
    name: o.metadata.name,
    status: t.result ?? 'SyncFailed',
    message: t.message,
    ...(hookType ? { hookType } : {}),
    hookPhase: t.operationState ?? 'Running',
    syncPhase: t.phase,
  };
}

/** Argo CD's failure message: `<what>, reason: <messages of the failed tasks>`. */
function failureMessage(what: string, tasks: readonly SyncTask[]): string {
  // Tasks in Error after a successful apply (the live object unreadable) say why too.
  const reasons = [
    ...new Set(
      tasks
        .filter((t) => (t.result === 'SyncFailed' || t.operationState === 'Error') && t.message)
        .map((t) => t.message),
    ),
  ];
  return reasons.length ? `${what}, reason: ${reasons.join(',')}` : what;
}

export async function sync(
  client: DestinationClient,
  desired: readonly KubeObject[],
  inventory: readonly InventoryEntry[],
  options: SyncOptions,
): Promise<SyncResult> {
  const app = parseSyncOptions(options.syncOptions);
  const startedAt = options.startedAt ?? new Date();
  const waitMs = options.waitTimeoutMs ?? DEFAULT_WAIT_MS;
  const selection = options.resources && options.resources.length ? options.resources : undefined;
  const strategy = options.syncStrategy;
  // The apply strategy, like a selective sync, runs no hooks (gitops-engine skipHooks).
  const skipHooks = selection !== undefined || strategy?.apply !== undefined;
  let order = 0;
  const ctx: TaskContext = {
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
    pollMs: options.pollIntervalMs ?? 1000,
    health: options.health ?? builtinAssessor,
    signal: options.signal,
    nextOrder: () => order++,
  };
  const identity = describeIdentity(client.identity);
  const all: SyncTask[] = [];
  const finish = (phase: SyncResult['phase'], message: string, comparison?: ComparisonResult): SyncResult => ({
    phase,
    message,
    identity,
    resources: all
      .filter((t) => t.order !== undefined)
      .sort((a, b) => (a.order ?? 0) - (b.order ?? 0))
      .map(toResult),
    ...(comparison ? { comparison } : {}),
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
      all.push(t);
      setResult(ctx, t, 'SyncFailed', 'Failed', p.error?.message ?? 'invalid');
    }
    const reasons = [...new Set(invalid.map((p) => p.error?.message ?? ''))].sort();
    return finish('Failed', `one or more synchronization tasks are not valid: ${reasons.join('; ')}`);
  }

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
      all.push(t);
      if (!live.ok) setResult(ctx, t, 'SyncFailed', 'Failed', `namespace auto creation failed: ${live.error.message}`);
      else await applyTask(ctx, t);
      if (t.result === 'SyncFailed') return finish('Failed', failureMessage('the namespace failed to apply', [t]));
      if (t.operationState === 'Running') setResult(ctx, t, undefined, 'Succeeded', '');
    }
  }

  const comparison = await compareResources(client, prepared, inventory, {
    ...options,
    fieldValidation: ctx.fieldValidation,
  });
  // FailOnSharedResource=true (controller/sync.go): another Application's object stops the sync.
  if (app.failOnSharedResource && comparison.shared.length > 0)
    return finish('Failed', `Shared resource found: ${comparison.shared[0]}`, comparison);
  for (const r of comparison.resources) {
    if (r.requiresPruning) {
      if (r.live) all.push({ phase: 'Sync', target: null, live: r.live, hook: false, message: '' });
    } else if (r.target) {
      // RespectIgnoreDifferences=true: ignored fields are applied with their live values.
      const target =
        app.respectIgnoreDifferences && options.diff
          ? await respectIgnored(options.diff, r.target, r.live ?? null)
          : r.target;
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
      for (const phase of phasesOf.get(p.source) ?? [])
        all.push({ phase, target: p.target, live: got.ok ? got.value : null, hook: true, message: '' });
    }
  }
  let tasks = all.filter((t) => !selection || matchesSelection(taskObject(t), selection));
  if (app.applyOutOfSyncOnly)
    tasks = tasks.filter((t) => t.hook || isPrune(t) || !(t.comparison === 'Synced' && t.live));

  // Prunes run in reverse wave order; PruneLast ones after the last Sync wave.
  const pruneWaves = [...new Set(tasks.filter(isPrune).map(taskWave))].sort((a, b) => a - b);
  const reversed = new Map(pruneWaves.map((w, i) => [w, pruneWaves[pruneWaves.length - 1 - i] as number]));
  for (const t of tasks.filter(isPrune)) t.waveOverride = reversed.get(taskWave(t));
  const lastWave = Math.max(0, ...tasks.filter((t) => t.phase === 'Sync').map(taskWave)) + 1;
  for (const t of tasks.filter(isPrune)) if (app.pruneLast || pruneLastOn(t.live)) t.waveOverride = lastWave;
  sortTasks(tasks);

  const syncFail = tasks.filter((t) => t.phase === 'SyncFail');
  const main = tasks.filter((t) => t.phase !== 'SyncFail');
  if (main.length === 0) return finish('Succeeded', 'successfully synced (no more tasks)', comparison);

  const fail = async (what: string): Promise<SyncResult> => {
    await deleteHooks(ctx, main, 'HookFailed');
    let message = failureMessage(what, main);
    if (syncFail.length) {
      const ok = await runGroup(ctx, syncFail, Date.now() + waitMs, true);
      // The operation failed, so only HookFailed applies, to these hooks too (as Argo CD).
      await deleteHooks(ctx, syncFail, 'HookFailed');
      const failed = syncFail.filter((t) => t.operationState !== 'Succeeded');
      if (!ok || failed.length) message += `\n${failureMessage('one or more SyncFail hooks failed', failed)}`;
    }
    return finish('Failed', message, comparison);
  };

  // Contiguous runs of one (phase, wave), in order.
  const groups: SyncTask[][] = [];
  for (const t of main) {
    const last = groups[groups.length - 1];
    const head = last?.[0];
    if (last && head && head.phase === t.phase && taskWave(head) === taskWave(t)) last.push(t);
    else groups.push([t]);
  }
  for (let i = 0; i < groups.length; i++) {
    const group = groups[i] as SyncTask[];
    if (options.signal?.aborted) return finish('Failed', 'Operation terminated', comparison);
    const stop = i > 0 && options.beforeWave ? await options.beforeWave() : null;
    if (stop !== null) return finish('Failed', stop, comparison);
    // Prune=confirm: the wave waits, nothing of it done, until the Application is approved (gitops-engine).
    const unconfirmed =
      ctx.prune && !options.pruneConfirmed
        ? group.filter((t) => isPrune(t) && pruneNeedsConfirmation(t.live, ctx.pruneDefault))
        : [];
    if (unconfirmed.length)
      return finish('Running', waitingMessage(unconfirmed, 'pruning confirmation of'), comparison);
    options.onProgress?.('one or more tasks are running');
    const waitForIt = !ctx.dryRun && (i < groups.length - 1 || group.some((t) => t.hook));
    const applied = await runGroup(ctx, group, Date.now() + waitMs, waitForIt, options.onProgress);
    if (!applied) return fail('one or more objects failed to apply');
    if (options.signal?.aborted) return finish('Failed', 'Operation terminated', comparison);
    const unfinished = group.filter(
      (t) => t.operationState === 'Running' || (t.result === 'Pruned' && !t.gone && !ctx.dryRun),
    );
    if (waitForIt && unfinished.length)
      return fail(
        `one or more synchronization tasks completed unsuccessfully, reason: timed out after ${Math.round(waitMs / 1000)}s ${waitingMessage(unfinished)}`,
      );
    if (group.some((t) => t.operationState === 'Failed' || t.operationState === 'Error'))
      return fail('one or more synchronization tasks completed unsuccessfully');
  }
  await deleteHooks(ctx, main, 'HookSucceeded');
  return finish('Succeeded', 'successfully synced (all tasks run)', comparison);
}

/**
 * One (phase, wave): prunes, then hooks deleted before being created again, then applies in runs
 * of one kind (CRDs waited on until served), then, when asked, waiting until nothing runs.
 * False when something failed to apply or prune.
 */
async function runGroup(
  ctx: TaskContext,
  group: SyncTask[],
  deadline: number,
  wait: boolean,
  onProgress?: (m: string) => void,
): Promise<boolean> {
  const prunes = group.filter(isPrune);
  const creates = group.filter((t) => !isPrune(t));
  // Results list tasks in the order they were started, not the order the server answered.
  const start = (tasks: SyncTask[]) => tasks.forEach((t) => (t.order ??= ctx.nextOrder()));
  start(prunes);
  const pruned = await mapLimit(prunes, APPLY_CONCURRENCY, (t) => pruneTask(ctx, t));
  if (pruned.includes(false)) return false;
  for (const t of creates) {
    if (!t.hook || !t.live || ctx.dryRun || !hookDeletePolicies(taskObject(t)).includes('BeforeHookCreation')) continue;
    const err = await deleteAndWait(ctx, t.live, deadline);
    if (err) {
      setResult(ctx, t, 'SyncFailed', 'Error', err);
      return false;
    }
    t.live = null;
  }
  let ok = true;
  for (let i = 0; i < creates.length;) {
    const kind = (creates[i] as SyncTask).target?.kind;
    let j = i;
    while (j < creates.length && (creates[j] as SyncTask).target?.kind === kind) j++;
    const run = creates.slice(i, j);
    start(run);
    const results = await mapLimit(run, APPLY_CONCURRENCY, (t) => applyTask(ctx, t));
    if (results.includes(false)) ok = false;
    if (!ctx.dryRun) {
      for (const t of run) {
        if (
          t.result === 'Synced' &&
          t.target?.kind === 'CustomResourceDefinition' &&
          groupOf(t.target.apiVersion) === 'apiextensions.k8s.io'
        ) {
          await waitForCrd(ctx, t.target, Math.min(deadline, Date.now() + CRD_WAIT_MS));
        }
      }
    }
    i = j;
  }
  if (!ok || !wait) return ok;
  while (Date.now() < deadline && !ctx.signal?.aborted) {
    if (!(await refreshRunning(ctx, group))) break;
    onProgress?.(
      waitingMessage(group.filter((t) => t.operationState === 'Running' || (t.result === 'Pruned' && !t.gone))),
    );
    await sleep(ctx.pollMs, ctx.signal);
  }
  return true;
}
