// Server-side diff as the identity: for each desired object, a dry-run apply and a read of the live
// object, both through the one DestinationClient; equal after normalization means Synced. Objects
// the inventory holds and Git no longer does are OutOfSync and require pruning.
import type { KubeObject, ResourceRef, SyncStatusCode } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import type { DestinationClient, FieldValidation, KubeError } from '../kube/types.ts';
import { describeIdentity } from '../kube/types.ts';
import { isHook, isSkipped } from './annotations.ts';
import { toYaml, unifiedDiff } from './differ.ts';
import type { AggregateHealth, HealthAssessor, HealthStatus } from './health/index.ts';
import { aggregateHealth, builtinAssessor, healthCheckErrors } from './health/index.ts';
import { jsonEqual, maskSecrets, normalizeForCompare } from './normalize.ts';
import type { Prepared, PreparedObject, PrepareOptions } from './prepare.ts';
import { prepareDesired } from './prepare.ts';
import { trackedApp } from './tracking.ts';
import { mapLimit, refOf } from './util.ts';

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
  /** Why the status is Unknown, or a note on an OutOfSync object (the dry-run's refusal). */
  message?: string;
  /** What would be applied (tracking id included); absent for a prune. */
  target?: KubeObject;
  /** The live object as the identity read it; null when missing. */
  live?: KubeObject | null;
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
}

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
}

const COMPARE_CONCURRENCY = 8;

function coordinates(o: KubeObject): Pick<ResourceComparison, 'group' | 'version' | 'kind' | 'namespace' | 'name'> {
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
  live: KubeObject | null,
  predicted: KubeObject | null,
  opts: { diffs?: boolean | undefined },
): string {
  if (!opts.diffs) return '';
  const masked = maskSecrets(live && normalizeForCompare(live), predicted && normalizeForCompare(predicted));
  return unifiedDiff(toYaml(masked.live), toYaml(masked.predicted));
}

async function compareOne(
  client: DestinationClient,
  p: PreparedObject,
  opts: CompareOptions,
): Promise<ResourceComparison> {
  const base = { ...coordinates(p.target), requiresPruning: false, target: p.target };
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
    live = got.value;
    if (dry.ok) predicted = dry.value;
    else if (live)
      return {
        ...base,
        live,
        status: 'Unknown',
        health: await (opts.health ?? builtinAssessor)(live),
        diff: '',
        message: dry.error.message,
      };
    // A missing object is OutOfSync whatever the dry-run said; its refusal is worth showing, except
    // "namespace not found", which the sync itself resolves by creating the namespace first.
    else if (dry.error.code !== 404) note = dry.error;
  }
  const synced = live !== null && jsonEqual(normalizeForCompare(live), normalizeForCompare(predicted));
  return {
    ...base,
    live,
    status: synced ? 'Synced' : 'OutOfSync',
    health: live ? await (opts.health ?? builtinAssessor)(live) : { status: 'Missing' },
    diff: synced ? '' : renderDiff(live, predicted, opts),
    ...(note ? { message: note.message } : {}),
  };
}

async function compareExtra(
  client: DestinationClient,
  entry: InventoryEntry,
  appName: string,
  health: HealthAssessor,
  opts: { diffs?: boolean | undefined },
): Promise<ResourceComparison | null> {
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
  // Gone already, or no longer ours (someone else's object of the same name): nothing to prune.
  if (!live || trackedApp(live) !== appName) return null;
  return {
    ...coordinates(live),
    live,
    status: 'OutOfSync',
    health: await health(live),
    diff: renderDiff(live, null, opts),
    requiresPruning: true,
  };
}

function keyOfEntry(e: InventoryEntry): string {
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
    ...(
      await mapLimit(extras, COMPARE_CONCURRENCY, (e) =>
        compareExtra(client, e, opts.appName, opts.health ?? builtinAssessor, opts),
      )
    ).filter((r): r is ResourceComparison => r !== null),
  ];
  const errors = resources
    .filter((r) => r.status === 'Unknown')
    .map(
      (r) =>
        `Failed to compare desired state to live state: ${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}: ${r.message ?? 'unknown error'}`,
    );
  const syncStatus: SyncStatusCode = errors.length
    ? 'Unknown'
    : resources.some((r) => r.status === 'OutOfSync')
      ? 'OutOfSync'
      : 'Synced';
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
  };
}
