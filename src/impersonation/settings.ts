// Reading impersync's settings from the `argocd-cm` ConfigMap: the two impersonation switches
// (spec §4), `globalProjects` (§7), `timeout.reconciliation`, and impersync's own
// `impersync.impersonation.allowSystemNamespaces` (docs/impersonation.md §10) and
// `impersync.impersonation.requireExtras` (§11). Reading never fails: every problem
// becomes a message in `errors` and the affected setting keeps its default.
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { ConfigMap } from '../api/index.ts';
import { formatPath } from '../api/index.ts';
import { parseDurationSeconds } from './duration.ts';
import { LabelSelectorSchema, type LabelSelector } from './label-selector.ts';
import { ALLOW_SYSTEM_NAMESPACES_KEY } from './system-namespaces.ts';

export const IMPERSONATION_ENABLED_KEY = 'application.sync.impersonation.enabled';
export const IMPERSONATION_ENFORCED_KEY = 'application.sync.impersonation.enforced';
export const GLOBAL_PROJECTS_KEY = 'globalProjects';
export const RECONCILIATION_TIMEOUT_KEY = 'timeout.reconciliation';
/** The most a periodic refresh is delayed by at random (Argo CD's ARGOCD_RECONCILIATION_JITTER). */
export const RECONCILIATION_JITTER_KEY = 'timeout.reconciliation.jitter';
/** How old a comparison may get before a periodic refresh is a hard one (ARGOCD_HARD_RECONCILIATION_TIMEOUT). */
export const HARD_RECONCILIATION_TIMEOUT_KEY = 'timeout.hard.reconciliation';
/** impersync's own: the Impersonate-Extra attribution is required, not dropped when refused (docs/impersonation.md §11). */
export const REQUIRE_EXTRAS_KEY = 'impersync.impersonation.requireExtras';

export const DEFAULT_IMPERSONATION_ENABLED = false;
export const DEFAULT_IMPERSONATION_ENFORCED = true;
export const DEFAULT_RECONCILIATION_TIMEOUT_SECONDS = 120;
/** Argo CD's controller defaults: a jitter of up to 60 s, no periodic hard refresh. */
export const DEFAULT_RECONCILIATION_JITTER_SECONDS = 60;
export const DEFAULT_HARD_RECONCILIATION_TIMEOUT_SECONDS = 0;

export interface GlobalProjectSetting {
  projectName: string;
  labelSelector: LabelSelector;
}

export interface ImpersonationSettings {
  /** spec §4: on only when the value is exactly "true". */
  enabled: boolean;
  /** spec §4: on unless the value is exactly "false"; an absent key is on. */
  enforced: boolean;
  /**
   * Beyond Argo CD: ServiceAccounts in kube-system, kube-public and kube-node-lease may be
   * impersonated only when `impersync.impersonation.allowSystemNamespaces` is exactly "true".
   */
  allowSystemNamespaces: boolean;
  /**
   * Beyond Argo CD: when the controller may not impersonate impersync's user extras (the
   * Application, project and revision every request names), requests fail rather than go on
   * without them. On only when `impersync.impersonation.requireExtras` is exactly "true".
   */
  requireExtras: boolean;
  /** spec §7, in argocd-cm order. Entries with an invalid selector are kept (global-projects.ts stops at them). */
  globalProjects: GlobalProjectSetting[];
  reconciliationTimeoutSeconds: number;
  /** Each periodic refresh waits a random part of this longer, as Argo CD's controller (0: none). */
  reconciliationJitterSeconds: number;
  /** A periodic refresh of a comparison older than this is hard: nothing cached is reused (0: never). */
  hardReconciliationTimeoutSeconds: number;
  /** `configmap` when read, `absent` when there is none (defaults), `error` when it could not be read. */
  source: 'configmap' | 'absent' | 'error';
  /** Read errors (spec §4 wording) and unusable values, in key order; empty when all is well. */
  errors: string[];
}

/** The spec §4 message for a ConfigMap that could not be read. */
export function settingsReadError(key: string, reason: string): string {
  return `error checking ${key} property in configmap: ${reason}`;
}

function defaults(source: ImpersonationSettings['source'], errors: string[] = []): ImpersonationSettings {
  return {
    enabled: DEFAULT_IMPERSONATION_ENABLED,
    enforced: DEFAULT_IMPERSONATION_ENFORCED,
    allowSystemNamespaces: false,
    requireExtras: false,
    globalProjects: [],
    reconciliationTimeoutSeconds: DEFAULT_RECONCILIATION_TIMEOUT_SECONDS,
    reconciliationJitterSeconds: DEFAULT_RECONCILIATION_JITTER_SECONDS,
    hardReconciliationTimeoutSeconds: DEFAULT_HARD_RECONCILIATION_TIMEOUT_SECONDS,
    source,
    errors,
  };
}

/**
 * Settings from `argocd-cm`: pass the ConfigMap, `undefined` when there is none, or the Error met
 * reading it (then both switches take their defaults and each reports the spec §4 message).
 */
export function readImpersonationSettings(configMap: ConfigMap | undefined | Error): ImpersonationSettings {
  if (configMap === undefined) return defaults('absent');
  if (configMap instanceof Error) {
    const reason = configMap.message;
    return defaults('error', [
      settingsReadError(IMPERSONATION_ENABLED_KEY, reason),
      settingsReadError(IMPERSONATION_ENFORCED_KEY, reason),
    ]);
  }
  const data = configMap.data ?? {};
  const settings = defaults('configmap');
  settings.enabled = data[IMPERSONATION_ENABLED_KEY] === 'true';
  const enforced = data[IMPERSONATION_ENFORCED_KEY];
  settings.enforced = enforced === undefined ? DEFAULT_IMPERSONATION_ENFORCED : enforced !== 'false';
  // Exactly "true", like enabled: a typo keeps the safe side.
  settings.allowSystemNamespaces = data[ALLOW_SYSTEM_NAMESPACES_KEY] === 'true';
  settings.requireExtras = data[REQUIRE_EXTRAS_KEY] === 'true';

  const globals = data[GLOBAL_PROJECTS_KEY];
  if (globals !== undefined) {
    const parsed = parseGlobalProjects(globals);
    if (parsed.ok) settings.globalProjects = parsed.value;
    else
      settings.errors.push(
        `${configMapName(configMap)} data.${GLOBAL_PROJECTS_KEY}: ${parsed.error}; no global projects are used`,
      );
  }
  const timeout = data[RECONCILIATION_TIMEOUT_KEY];
  if (timeout !== undefined && timeout.trim() !== '') {
    const parsed = parseDurationSeconds(timeout);
    if (parsed.ok) settings.reconciliationTimeoutSeconds = parsed.seconds;
    else
      settings.errors.push(
        `${configMapName(configMap)} data.${RECONCILIATION_TIMEOUT_KEY}: ${parsed.error}; using ${DEFAULT_RECONCILIATION_TIMEOUT_SECONDS}s`,
      );
  }
  // As Argo CD's env.ParseDurationFromEnv: a value that does not parse keeps the default.
  for (const [key, field, fallback] of [
    [RECONCILIATION_JITTER_KEY, 'reconciliationJitterSeconds', DEFAULT_RECONCILIATION_JITTER_SECONDS],
    [HARD_RECONCILIATION_TIMEOUT_KEY, 'hardReconciliationTimeoutSeconds', DEFAULT_HARD_RECONCILIATION_TIMEOUT_SECONDS],
  ] as const) {
    const value = data[key];
    if (value === undefined || value.trim() === '') continue;
    const parsed = parseDurationSeconds(value);
    if (parsed.ok) settings[field] = parsed.seconds;
    else settings.errors.push(`${configMapName(configMap)} data.${key}: ${parsed.error}; using ${fallback}s`);
  }
  return settings;
}

function configMapName(cm: ConfigMap): string {
  return `ConfigMap ${cm.metadata.namespace ? `${cm.metadata.namespace}/` : ''}${cm.metadata.name}`;
}

const GlobalProjectsSchema = z
  .array(z.looseObject({ projectName: z.string().min(1), labelSelector: LabelSelectorSchema.nullish() }))
  .nullable();

type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** Parses the `globalProjects` value: a YAML list of {projectName, labelSelector}. */
export function parseGlobalProjects(text: string): Parsed<GlobalProjectSetting[]> {
  let raw: unknown;
  try {
    raw = parseYaml(text, { version: '1.1' });
  } catch (err) {
    return { ok: false, error: `not valid YAML: ${(err as Error).message.split('\n')[0]}` };
  }
  const result = GlobalProjectsSchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    return {
      ok: false,
      error: `${issue ? formatPath(issue.path) || '(value)' : '(value)'}: ${issue?.message ?? 'invalid'} (expected a list of {projectName, labelSelector})`,
    };
  }
  const out: GlobalProjectSetting[] = [];
  for (const item of result.data ?? [])
    out.push({ projectName: item.projectName, labelSelector: item.labelSelector ?? {} });
  return { ok: true, value: out };
}
