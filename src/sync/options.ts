// Sync options with Argo CD's meaning (gitops-engine pkg/sync/common/types.go, controller/sync.go):
// the Application's `syncPolicy.syncOptions` (or the operation's) as a list of `Key=value` strings,
// and the per-resource annotation `argocd.argoproj.io/sync-options` of the same names, which wins
// where both are given.
import type { KubeObject } from '../api/index.ts';
import { HELM_RESOURCE_POLICY, annotationCSV, hasSyncOption, optionValue, syncOptionValue } from './annotations.ts';

export type PropagationPolicy = 'Foreground' | 'Background' | 'Orphan';

export interface AppSyncOptions {
  /** CreateNamespace=true: create the destination namespace (as the identity) when it is missing. */
  createNamespace: boolean;
  /** PruneLast=true: prune after every wave of the Sync phase. */
  pruneLast: boolean;
  /** ApplyOutOfSyncOnly=true: skip objects the comparison found Synced. */
  applyOutOfSyncOnly: boolean;
  /** Validate=false: the API server ignores unknown and duplicate fields. */
  validate: boolean;
  /** PrunePropagationPolicy=foreground|background|orphan (default foreground). */
  prunePropagationPolicy: PropagationPolicy;
  /** Replace=true: replace (PUT) or create instead of apply. */
  replace: boolean;
  /** Force=true: delete and re-create what the server refuses to change in place. */
  force: boolean;
  /** FailOnSharedResource=true: a sync fails while another Application's tracking claims an object. */
  failOnSharedResource: boolean;
  /** RespectIgnoreDifferences=true: ignored fields keep their live values when applied. */
  respectIgnoreDifferences: boolean;
  /** Prune=false|confirm: the default for objects without their own Prune= annotation. */
  prune: string | undefined;
  /** Delete=false|confirm: the default for deleting the Application's resources with it. */
  delete: string | undefined;
  /** ClientSideApplyMigration=false turns off taking over fields of Argo CD's managers (default on). */
  clientSideApplyMigration: boolean;
  /** Options this engine does not act on, so a caller can say so rather than pretend. */
  ignored: string[];
}

const POLICIES: Record<string, PropagationPolicy> = {
  foreground: 'Foreground',
  background: 'Background',
  orphan: 'Orphan',
};

// Options whose effect is already how this engine always works (server-side apply), that are read
// where they act (SkipDryRunOnMissingResource: prepare.ts) or that ask for the default; they are
// accepted silently.
const ALWAYS_ON = new Set([
  'ServerSideApply=true',
  // Refused where a sync starts (clientSideApplyRefusal), not warned.
  'ServerSideApply=false',
  'RespectIgnoreDifferences=false',
  'ApplyOutOfSyncOnly=false',
  'CreateNamespace=false',
  'PruneLast=false',
  'Validate=true',
  'SkipDryRunOnMissingResource=true',
  'SkipDryRunOnMissingResource=false',
  'Replace=false',
  'Force=false',
  'FailOnSharedResource=false',
  'Prune=true',
  'Delete=true',
  'ClientSideApplyMigration=true',
]);

export function parseSyncOptions(list: readonly string[] | undefined): AppSyncOptions {
  const out: AppSyncOptions = {
    createNamespace: false,
    pruneLast: false,
    applyOutOfSyncOnly: false,
    validate: true,
    prunePropagationPolicy: 'Foreground',
    replace: false,
    force: false,
    failOnSharedResource: false,
    respectIgnoreDifferences: false,
    prune: undefined,
    delete: undefined,
    clientSideApplyMigration: true,
    ignored: [],
  };
  const items = (list ?? []).map((o) => o.trim());
  for (const opt of items) {
    if (opt === 'CreateNamespace=true') out.createNamespace = true;
    else if (opt === 'PruneLast=true') out.pruneLast = true;
    else if (opt === 'ApplyOutOfSyncOnly=true') out.applyOutOfSyncOnly = true;
    else if (opt === 'Validate=false') out.validate = false;
    else if (opt === 'Replace=true') out.replace = true;
    else if (opt === 'Force=true') out.force = true;
    else if (opt === 'FailOnSharedResource=true') out.failOnSharedResource = true;
    else if (opt === 'RespectIgnoreDifferences=true') out.respectIgnoreDifferences = true;
    else if (opt === 'ClientSideApplyMigration=false') out.clientSideApplyMigration = false;
    else if (opt === 'Prune=false' || opt === 'Prune=confirm' || opt === 'Delete=false' || opt === 'Delete=confirm') {
      // read below, first occurrence wins
    } else if (opt.startsWith('PrunePropagationPolicy=') && POLICIES[opt.slice('PrunePropagationPolicy='.length)]) {
      out.prunePropagationPolicy = POLICIES[opt.slice('PrunePropagationPolicy='.length)] as PropagationPolicy;
    } else if (!ALWAYS_ON.has(opt)) out.ignored.push(opt);
  }
  out.prune = optionValue(items, 'Prune');
  out.delete = optionValue(items, 'Delete');
  return out;
}

/** The object's own Prune= value, else the Application's (gitops-engine isPruningDisabled). */
function pruneValue(live: KubeObject | null, appDefault: string | undefined): string | undefined {
  return syncOptionValue(live, 'Prune') ?? appDefault;
}

/** `Prune=false` on the live object, or as the Application's default: never prune it. */
export function pruneDisabled(live: KubeObject | null, appDefault?: string): boolean {
  return pruneValue(live, appDefault) === 'false';
}

/** `Prune=confirm`: pruning waits for the Application's deletion-approved annotation. */
export function pruneNeedsConfirmation(live: KubeObject | null, appDefault?: string): boolean {
  return pruneValue(live, appDefault) === 'confirm';
}

/** Argo CD's isObjRequiresDeletionConfirmation (controller/state.go): Delete=confirm or Prune=confirm. */
export function requiresDeletionConfirmation(
  obj: KubeObject | null | undefined,
  appSyncOptions: readonly string[] | undefined,
): boolean {
  if (!obj) return false;
  const items = (appSyncOptions ?? []).map((o) => o.trim());
  const del = syncOptionValue(obj, 'Delete') ?? optionValue(items, 'Delete');
  const prune = syncOptionValue(obj, 'Prune') ?? optionValue(items, 'Prune');
  return del === 'confirm' || prune === 'confirm';
}

/**
 * Argo CD's shouldBeDeleted (controller/appcontroller.go): deleting the Application deletes this
 * live object unless it is a CRD, says Delete=false (or the Application does), or Helm's
 * resource-policy says keep.
 */
export function deletedWithApplication(live: KubeObject, appDefault: string | undefined): boolean {
  if (live.kind === 'CustomResourceDefinition' && live.apiVersion.startsWith('apiextensions.k8s.io/')) return false;
  if ((syncOptionValue(live, 'Delete') ?? appDefault) === 'false') return false;
  return !annotationCSV(live, HELM_RESOURCE_POLICY).includes('keep');
}

export function pruneLastOn(live: KubeObject | null): boolean {
  return hasSyncOption(live, 'PruneLast=true');
}

export function validationDisabled(target: KubeObject | null): boolean {
  return hasSyncOption(target, 'Validate=false');
}

/** Replace=true on the Application, the desired object or the live one (gitops-engine applyObject). */
export function replaceOn(app: boolean, target: KubeObject | null, live: KubeObject | null): boolean {
  return app || hasSyncOption(target, 'Replace=true') || hasSyncOption(live, 'Replace=true');
}

/** Force=true on the Application (or the operation's strategy), the desired object or the live one. */
export function forceOn(app: boolean, target: KubeObject | null, live: KubeObject | null): boolean {
  return app || hasSyncOption(target, 'Force=true') || hasSyncOption(live, 'Force=true');
}

/**
 * ServerSideApply=false (the sync's option, or an object's sync-options annotation) asks for
 * Argo CD's client-side apply: a three-way strategic merge patch against the
 * `kubectl.kubernetes.io/last-applied-configuration` annotation, which needs each built-in kind's
 * patch strategies and which impersync does not implement. Such a sync is refused before anything
 * is written, with this message; undefined when nothing asks for it.
 */
export function clientSideApplyRefusal(
  syncOptions: readonly string[] | undefined,
  objects: readonly KubeObject[],
): string | undefined {
  const asked = (syncOptions ?? []).some((o) => o.trim() === 'ServerSideApply=false');
  const by = objects
    .filter((o) => hasSyncOption(o, 'ServerSideApply=false'))
    .map((o) => `${o.kind}/${o.metadata.name}`);
  if (!asked && by.length === 0) return undefined;
  const where = asked ? "the sync's options" : by.join(', ');
  return (
    `ServerSideApply=false (${where}) is not supported: impersync applies every object server-side ` +
    '(client-side apply with last-applied-configuration is not implemented); nothing was applied'
  );
}
