// Server-side diff as the identity: for each desired object, a dry-run apply and a read of the live
// object, both through the one DestinationClient; equal after normalization means Synced. Objects
// the inventory holds and Git no longer does are OutOfSync and require pruning.
import type { KubeObject, ResourceRef, SyncStatusCode } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import type { DestinationClient, FieldValidation, KubeError } from '../kube/types.ts';
import { DEFAULT_FIELD_MANAGER, describeIdentity, isExtrasRefusal } from '../kube/types.ts';
import { hasCompareOption, isHook, isSkipped } from './annotations.ts';
import { toYaml, unifiedDiff } from './differ.ts';
import { isExcludedResource } from './filter.ts';
import type { AggregateHealth, HealthAssessor, HealthStatus } from './health/index.ts';
import { aggregateHealth, builtinAssessor, healthCheckErrors } from './health/index.ts';
import type { DiffRules } from './ignore.ts';
import { NO_DIFF_RULES, normalizeIgnored } from './ignore.ts';
import { tooComplex } from './managed-fields.ts';
import { jsonEqual, maskSecrets, normalizeForCompare } from './normalize.ts';
import { requiresDeletionConfirmation } from './options.ts';
import type { Prepared, PreparedObject, PrepareOptions } from './prepare.ts';
import { prepareDesired } from './prepare.ts';
import type { StatusRule } from './settings.ts';
import { afterTakeover } from './takeover.ts';
import { DEFAULT_TRACKING, selfReferenced, trackedApp } from './tracking.ts';
import { mapLimit, refOf } from './util.ts';
import { removeWebhookMutation, schemaFor } from './webhook-mutation.ts';

/** An inventory entry: one of the Application's previous `status.resources`. */
export type InventoryEntry = ResourceRef & { version?: string | undefined };

export interface ResourceComparison {
  group: string;
  version: string;
  kind: string;
  namespace: string;
  name: string;
  status: SyncStatusCode;
  health: HealthStatus | null;
  /** Unified diff, live → what applying would leave, when asked for (`diffs`); '' when Synced. Secret values masked. */
  diff: string;
  requiresPruning: boolean;
  /** Prune=confirm or Delete=confirm (annotation, else the Application's sync option). */
  requiresDeletionConfirmation?: boolean;
  /** A live object to prune whose compare-options say IgnoreExtraneous: it leaves the app Synced. */
  ignoreExtraneous?: boolean;
  /** Why the status is Unknown, or a note on an OutOfSync object (the dry-run's refusal). */
  message?: string;
  /** What would be applied (tracking id included); absent for a prune. */
  target?: KubeObject;
  /** The live object as the identity read it; null when missing. */
  live?: KubeObject | null;
  /**
   * The pair the sync status was decided on (Argo CD's NormalizedLive and PredictedLive): the live
   * object and the dry-run's answer, both normalized; null where there is none. Secrets unmasked.
   */
  normalizedLive?: KubeObject | null;
  predictedLive?: KubeObject | null;
}

export interface ComparisonResult {
  /** Who compared: `system:serviceaccount:<ns>:<name>` or the controller's own credential. */
  identity: string;
  syncStatus: SyncStatusCode;
  /** The aggregate; its message names the resources that made it Degraded, Progressing, ... */
  health: AggregateHealth;
  resources: ResourceComparison[];
  /** Comparison errors, as Application condition messages; empty when everything was compared. */
  errors: string[];
  /**
   * A health check that failed (a Lua error), as Argo CD's ComparisonError words it. Apart from
   * `errors` because it does not make the sync status Unknown.
   */
  healthError?: string;
  warnings: string[];
  /** Argo CD's ExcludedResourceWarning messages (argocd-cm resource.exclusions / inclusions). */
  excluded: string[];
  /** Argo CD's SharedResourceWarning messages: live objects another Application's tracking claims. */
  shared: string[];
}

/** How objects are compared: ignoreDifferences, aggregated roles, and whose status is left out. */
export interface ComparisonRules extends DiffRules {
  status: StatusRule;
}

export const DEFAULT_COMPARISON_RULES: ComparisonRules = { ...NO_DIFF_RULES, status: 'all' };

export interface CompareOptions extends PrepareOptions {
  /** Validate=false → Ignore; Strict when the Application asks for strict validation. */
  fieldValidation?: FieldValidation | undefined;
  /** How live objects' health is assessed (argocd-cm customizations); default: the built-in checks. */
  health?: HealthAssessor | undefined;
  /**
   * Make each OutOfSync object's text diff (`impersync diff` shows them). Off by default: nothing
   * on the controller's path reads them, and a diff costs time in proportion to the object's size.
   */
  diffs?: boolean | undefined;
  /** spec.ignoreDifferences and argocd-cm's, compare options; default: status ignored, nothing else. */
  diff?: ComparisonRules | undefined;
  /** The Application's syncOptions: its Prune= and Delete= defaults for deletion confirmation. */
  appSyncOptions?: readonly string[] | undefined;
  /** `<namespace>/<name>` of the Application, for SharedResourceWarning; default appName. */
  qualifiedName?: string | undefined;
  /** Managers whose fields a sync takes over (takeover.ts), so the diff shows what it will remove. */
  takeover?: readonly string[] | undefined;
  /**
   * Leave out of the prediction what mutating webhooks change (Argo CD's default with ServerSideDiff,
   * off with IncludeMutationWebhook=true): sync/webhook-mutation.ts. Off: the dry-run's answer as is.
   */
  ignoreMutationWebhook?: boolean | undefined;
}

const COMPARE_CONCURRENCY = 8;

function keepStatus(rule: StatusRule, o: KubeObject): boolean {
  if (rule === 'all') return false;
  if (rule === 'none') return true;
  return !(o.kind === 'CustomResourceDefinition' && groupOf(o.apiVersion) === 'apiextensions.k8s.io');
}

/** Both sides as the comparison sees them: ignored fields, server bookkeeping and (per rule) status gone. */
async function comparable(
  rules: ComparisonRules,
  live: KubeObject | null,
  predicted: KubeObject | null,
): Promise<{ live: KubeObject | null; predicted: KubeObject | null }> {
  const n = await normalizeIgnored(rules, live, predicted);
  const subject = predicted ?? live;
  const opts = { keepStatus: subject !== null && keepStatus(rules.status, subject) };
  return {
    live: n.live && normalizeForCompare(n.live, opts),
    predicted: n.predicted && normalizeForCompare(n.predicted, opts),
  };
}

/** Where an object is, as a resource's status and a sync result name it. */
export function coordinates(
  o: KubeObject,
): Pick<ResourceComparison, 'group' | 'version' | 'kind' | 'namespace' | 'name'> {
  const slash = o.apiVersion.indexOf('/');
  return {
    group: groupOf(o.apiVersion),
    version: slash < 0 ? o.apiVersion : o.apiVersion.slice(slash + 1),
    kind: o.kind,
    namespace: o.metadata.namespace ?? '',
    name: o.metadata.name,
  };
}

function renderDiff(
  pair: { live: KubeObject | null; predicted: KubeObject | null },
  opts: { diffs?: boolean | undefined },
): string {
  if (!opts.diffs) return '';
  const masked = maskSecrets(pair.live, pair.predicted);
  return unifiedDiff(toYaml(masked.live), toYaml(masked.predicted));
}

/** Why `live` cannot be compared: what the server says it owns costs too much to read. */
function notComparable(live: KubeObject, e: Error): string {
  return `failed to calculate diff: ${live.kind}/${live.metadata.name}: ${e.message}`;
}

/** The diff of an object Git no longer has; none when its managedFields cannot be read. */
async function extraDiff(opts: CompareOptions, live: KubeObject): Promise<string> {
  try {
    return renderDiff(await comparable(opts.diff ?? DEFAULT_COMPARISON_RULES, live, null), opts);
  } catch (e) {
    if (tooComplex(e)) return '';
    throw e;
  }
}

async function compareOne(
  client: DestinationClient,
  p: PreparedObject,
  opts: CompareOptions,
): Promise<ResourceComparison> {
  const confirm = requiresDeletionConfirmation(p.target, opts.appSyncOptions);
  const base = {
    ...coordinates(p.target),
    requiresPruning: false,
    target: p.target,
    ...(confirm ? { requiresDeletionConfirmation: true } : {}),
  };
  if (p.error) return { ...base, status: 'Unknown', health: null, diff: '', message: p.error.message };
  let live: KubeObject | null = null;
  let predicted: KubeObject = p.target;
  let note: KubeError | undefined;
  if (!p.pendingCrd) {
    // Neither request needs the other's answer: one round trip instead of two. A failed read still
    // decides the result, as if the dry-run (which writes nothing) had not been sent.
    const [got, dry] = await Promise.all([
      client.get(refOf(p.target)),
      client.apply(p.target, {
        dryRun: true,
        ...(opts.fieldValidation ? { fieldValidation: opts.fieldValidation } : {}),
      }),
    ]);
    if (!got.ok) return { ...base, status: 'Unknown', health: null, diff: '', message: got.error.message };
    // Impersonation itself refused (argocd-cm requireExtras, and the controller may not impersonate
    // the extras): nothing can be compared as the identity, present or missing. The read may have
    // come from the shared watch, which carries no extras, so the dry-run is where it shows.
    if (!dry.ok && isExtrasRefusal(dry.error))
      return { ...base, status: 'Unknown', health: null, diff: '', message: dry.error.message };
    live = got.value;
    // The object exists and cannot be compared: its live state and health are still shown.
    const unknownLive = async (obj: KubeObject, message: string): Promise<ResourceComparison> => ({
      ...base,
      live: obj,
      status: 'Unknown',
      health: await (opts.health ?? builtinAssessor)(obj),
      diff: '',
      message,
    });
    if (dry.ok) {
      let answer = dry.value;
      if (live && opts.ignoreMutationWebhook) {
        try {
          answer = removeWebhookMutation(answer, live, await schemaFor(client, p.target), DEFAULT_FIELD_MANAGER);
        } catch (e) {
          // Argo CD's words: the diff of this object fails, and with it the comparison.
          return unknownLive(live, `failed to calculate diff: serverSideDiff error: ${(e as Error).message}`);
        }
      }
      try {
        predicted =
          live && opts.takeover?.length
            ? afterTakeover(answer, p.target, live, DEFAULT_FIELD_MANAGER, opts.takeover)
            : answer;
      } catch (e) {
        if (tooComplex(e) && live) return unknownLive(live, notComparable(live, e));
        throw e;
      }
    } else if (live) return unknownLive(live, dry.error.message);
    // A missing object is OutOfSync whatever the dry-run said; its refusal is worth showing, except
    // "namespace not found", which the sync itself resolves by creating the namespace first.
    else if (dry.error.code !== 404) note = dry.error;
  }
  let pair: Awaited<ReturnType<typeof comparable>>;
  try {
    pair = await comparable(opts.diff ?? DEFAULT_COMPARISON_RULES, live, predicted);
  } catch (e) {
    if (!tooComplex(e) || !live) throw e;
    const health = await (opts.health ?? builtinAssessor)(live);
    return { ...base, live, status: 'Unknown', health, diff: '', message: notComparable(live, e) };
  }
  const synced = live !== null && jsonEqual(pair.live, pair.predicted);
  const liveConfirm = !confirm && requiresDeletionConfirmation(live, opts.appSyncOptions);
  return {
    ...base,
    ...(liveConfirm ? { requiresDeletionConfirmation: true } : {}),
    live,
    status: synced ? 'Synced' : 'OutOfSync',
    health: live ? await (opts.health ?? builtinAssessor)(live) : { status: 'Missing' },
    diff: synced ? '' : renderDiff(pair, opts),
    normalizedLive: pair.live,
    predictedLive: pair.predicted,
    ...(note ? { message: note.message } : {}),
  };
}

async function compareExtra(
  client: DestinationClient,
  entry: InventoryEntry,
  opts: CompareOptions,
): Promise<ResourceComparison | null> {
  const health = opts.health ?? builtinAssessor;
  const tracking = opts.tracking ?? DEFAULT_TRACKING;
  if (opts.filter && isExcludedResource(opts.filter.rules, entry.group ?? '', entry.kind, opts.filter.cluster))
    return null;
  const coords = {
    group: entry.group ?? '',
    version: entry.version ?? '',
    kind: entry.kind,
    namespace: entry.namespace ?? '',
    name: entry.name,
  };
  const unknown = (e: KubeError): ResourceComparison => ({
    ...coords,
    status: 'Unknown',
    health: null,
    diff: '',
    requiresPruning: false,
    message: e.message,
  });
  // The recorded version may no longer be served; the group's preferred one finds the same object.
  let info = entry.version
    ? await client.resolve(entry.group ? `${entry.group}/${entry.version}` : entry.version, entry.kind)
    : undefined;
  if (!info || (!info.ok && info.error.code === 404))
    info = await client.resolveGroupKind(entry.group ?? '', entry.kind);
  // The kind is gone from the server (its CRD was deleted): so are its objects.
  if (!info.ok) return info.error.code === 404 ? null : unknown(info.error);
  const got = await client.get({
    apiVersion: info.value.apiVersion,
    kind: entry.kind,
    name: entry.name,
    namespace: entry.namespace,
  });
  if (!got.ok) return unknown(got.error);
  const live = got.value;
  // Gone already, no longer ours (someone else's object of the same name), or carrying a copy of
  // another object's tracking id (Argo CD's isSelfReferencedObj): nothing to prune.
  if (!live || trackedApp(live, tracking) !== opts.appName || !selfReferenced(live, tracking)) return null;
  const confirm = requiresDeletionConfirmation(live, opts.appSyncOptions);
  return {
    ...coordinates(live),
    live,
    status: 'OutOfSync',
    health: await health(live),
    diff: opts.diffs ? await extraDiff(opts, live) : '',
    requiresPruning: true,
    ...(confirm ? { requiresDeletionConfirmation: true } : {}),
    ...(hasCompareOption(live, 'IgnoreExtraneous') ? { ignoreExtraneous: true } : {}),
  };
}

/** An inventory entry's identity: group/kind/namespace/name. */
export function keyOfEntry(e: InventoryEntry): string {
  return `${e.group ?? ''}/${e.kind}/${e.namespace ?? ''}/${e.name}`;
}

/** Compares prepared objects (hooks excluded) and the inventory's extras with the cluster. */
export async function compareResources(
  client: DestinationClient,
  prepared: Prepared,
  inventory: readonly InventoryEntry[],
  opts: CompareOptions,
): Promise<ComparisonResult> {
  const managed = prepared.objects.filter((p) => !p.hook);
  const wanted = new Set(managed.map((p) => p.key));
  const extras = inventory.filter((e) => !wanted.has(keyOfEntry(e)));
  const resources = [
    ...(await mapLimit(managed, COMPARE_CONCURRENCY, (p) => compareOne(client, p, opts))),
    ...(await mapLimit(extras, COMPARE_CONCURRENCY, (e) => compareExtra(client, e, opts))).filter(
      (r): r is ResourceComparison => r !== null,
    ),
  ];
  const errors = resources
    .filter((r) => r.status === 'Unknown')
    .map(
      (r) =>
        `Failed to compare desired state to live state: ${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}: ${r.message ?? 'unknown error'}`,
    );
  // An extraneous object marked IgnoreExtraneous is listed OutOfSync but leaves the app Synced (Argo CD).
  const syncStatus: SyncStatusCode = errors.length
    ? 'Unknown'
    : resources.some((r) => r.status === 'OutOfSync' && !r.ignoreExtraneous)
      ? 'OutOfSync'
      : 'Synced';
  const tracking = opts.tracking ?? DEFAULT_TRACKING;
  const shared = resources.flatMap((r) => {
    const owner = r.live ? trackedApp(r.live, tracking) : null;
    if (!r.live || owner === null || owner === opts.appName || r.requiresPruning) return [];
    // Argo CD's words (controller/state.go): the other app's instance name with `_` read as `/`.
    return [
      `${r.kind}/${r.name} is part of applications ${opts.qualifiedName ?? opts.appName} and ${owner.replaceAll('_', '/')}`,
    ];
  });
  const health = aggregateHealth(resources);
  const healthError = healthCheckErrors(resources);
  return {
    identity: describeIdentity(client.identity),
    syncStatus,
    health,
    resources,
    errors,
    ...(healthError ? { healthError } : {}),
    warnings: prepared.warnings,
    excluded: prepared.excluded,
    shared,
  };
}

/** Compares Git's objects with the cluster, as the client's identity. Never throws for API errors. */
export async function compare(
  client: DestinationClient,
  desired: readonly KubeObject[],
  inventory: readonly InventoryEntry[],
  opts: CompareOptions,
): Promise<ComparisonResult> {
  return compareResources(client, await prepareDesired(client, desired, opts), inventory, opts);
}

/**
 * spec §5: when the identity decision denies or fails, the comparison fails with its message and
 * nothing is Synced; the desired objects are listed as Unknown so the user still sees what they are.
 */
export function refusedComparison(message: string, desired: readonly KubeObject[]): ComparisonResult {
  const managed = desired.filter((o) => !isHook(o) && !isSkipped(o));
  const resources: ResourceComparison[] = managed.map((o) => ({
    ...coordinates(o),
    status: 'Unknown',
    health: null,
    diff: '',
    requiresPruning: false,
    message: message,
  }));
  return {
    identity: 'none',
    syncStatus: 'Unknown',
    health: { status: 'Unknown', message: message },
    resources,
    errors: [message],
    warnings: [],
    excluded: [],
    shared: [],
  };
}
