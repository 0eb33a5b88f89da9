// Argo CD's annotations on manifests, read with Argo CD's meaning: comma-separated values, trimmed,
// de-duplicated; unknown values ignored.
import type { HookType, KubeObject, SyncPhase } from '../api/index.ts';
import { ANNOTATION_SYNC_OPTIONS, annotationCSV, annotationsOf } from '../api/annotations.ts';

export {
  ANNOTATION_COMPARE_OPTIONS,
  ANNOTATION_SYNC_OPTIONS,
  annotationCSV,
  annotationsOf,
  hasCompareOption,
  hasSyncOption,
} from '../api/annotations.ts';

export const ANNOTATION_SYNC_WAVE = 'argocd.argoproj.io/sync-wave';
export const ANNOTATION_HOOK = 'argocd.argoproj.io/hook';
export const ANNOTATION_HOOK_DELETE_POLICY = 'argocd.argoproj.io/hook-delete-policy';
export const ANNOTATION_IGNORE_RESTART_POLICY = 'argocd.argoproj.io/ignore-restart-policy';
/** Helm's `keep`: never deleted with the Application (Argo CD's shouldBeDeleted). */
export const HELM_RESOURCE_POLICY = 'helm.sh/resource-policy';
// Helm's own hook annotations, honoured when no Argo CD hook annotation is present (as Argo CD does).
export const HELM_HOOK = 'helm.sh/hook';
export const HELM_HOOK_WEIGHT = 'helm.sh/hook-weight';
export const HELM_HOOK_DELETE_POLICY = 'helm.sh/hook-delete-policy';

export type HookDeletePolicy = 'HookSucceeded' | 'HookFailed' | 'BeforeHookCreation';

const HOOK_TYPES: readonly string[] = ['PreSync', 'Sync', 'PostSync', 'SyncFail', 'Skip'];
const DELETE_POLICIES: readonly string[] = ['HookSucceeded', 'HookFailed', 'BeforeHookCreation'];
const HELM_HOOK_TYPES: Record<string, SyncPhase> = {
  'pre-install': 'PreSync',
  'pre-upgrade': 'PreSync',
  'post-install': 'PostSync',
  'post-upgrade': 'PostSync',
};
const HELM_DELETE_POLICIES: Record<string, HookDeletePolicy> = {
  'before-hook-creation': 'BeforeHookCreation',
  'hook-succeeded': 'HookSucceeded',
  'hook-failed': 'HookFailed',
};

/**
 * The value of a `Key=value` item of a comma-separated option list (gitops-engine's
 * GetAnnotationOptionValue), the first one when repeated; undefined when absent.
 */
export function optionValue(items: readonly string[], key: string): string | undefined {
  for (const item of items) if (item.startsWith(`${key}=`)) return item.slice(key.length + 1);
  return undefined;
}

/** `Key=value` from an object's sync-options annotation. */
export function syncOptionValue(obj: KubeObject | null | undefined, key: string): string | undefined {
  return optionValue(annotationCSV(obj, ANNOTATION_SYNC_OPTIONS), key);
}

function integerAnnotation(obj: KubeObject, key: string): number | undefined {
  const raw = annotationsOf(obj)[key];
  // Go's strconv.Atoi: an optional sign and digits, nothing else (no spaces).
  if (typeof raw === 'string' && /^[+-]?\d+$/.test(raw)) return Number.parseInt(raw, 10);
  return undefined;
}

/** The sync wave: the annotation when it is an integer, else Helm's hook weight, else 0. */
export function waveOf(obj: KubeObject): number {
  return integerAnnotation(obj, ANNOTATION_SYNC_WAVE) ?? integerAnnotation(obj, HELM_HOOK_WEIGHT) ?? 0;
}

/** Argo CD hook types; Helm's are used only when there is no Argo CD one. */
export function hookTypes(obj: KubeObject): HookType[] {
  const own = annotationCSV(obj, ANNOTATION_HOOK).filter((t): t is HookType => HOOK_TYPES.includes(t));
  if (own.length) return own;
  return annotationCSV(obj, HELM_HOOK).flatMap((t) => (HELM_HOOK_TYPES[t] ? [HELM_HOOK_TYPES[t]] : []));
}

/**
 * A hook is an object with the Argo CD hook annotation, unless its only type is Skip, or with
 * Helm's hook annotation (except `crd-install`, which Helm uses for CRDs that are not hooks).
 */
export function isHook(obj: KubeObject | null | undefined): boolean {
  if (!obj) return false;
  const a = annotationsOf(obj);
  if (a[ANNOTATION_HOOK] !== undefined) return !isSkipped(obj);
  return a[HELM_HOOK] !== undefined && a[HELM_HOOK] !== 'crd-install';
}

/** `argocd.argoproj.io/hook: Skip` (alone): the object is neither applied nor compared. */
export function isSkipped(obj: KubeObject | null | undefined): boolean {
  if (!obj) return false;
  const types = hookTypes(obj);
  return types.length === 1 && types[0] === 'Skip';
}

/** The phases a hook runs in (an object may be a hook for several); plain resources run in Sync. */
export function syncPhasesOf(obj: KubeObject): SyncPhase[] {
  if (!isHook(obj)) return ['Sync'];
  return hookTypes(obj).filter((t): t is SyncPhase => t !== 'Skip');
}

/** Delete policies; with none given, a hook is deleted before it is created again. */
export function hookDeletePolicies(obj: KubeObject): HookDeletePolicy[] {
  const out = annotationCSV(obj, ANNOTATION_HOOK_DELETE_POLICY).filter((p): p is HookDeletePolicy =>
    DELETE_POLICIES.includes(p),
  );
  for (const p of annotationCSV(obj, HELM_HOOK_DELETE_POLICY)) {
    const mapped = HELM_DELETE_POLICIES[p];
    if (mapped && !out.includes(mapped)) out.push(mapped);
  }
  return out.length ? out : ['BeforeHookCreation'];
}
