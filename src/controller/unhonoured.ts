// The UnsupportedFieldWarning of one Application (issue 14's rule: honoured, or said): everything
// it, its AppProject, argocd-cm, its cluster Secret and the repository Secrets its sources read set
// that Argo CD defines and impersync does not act on, each named with why (field-support.ts). Pure.
import type { AppCondition, AppProject, Application, ApplicationSource } from '../api/index.ts';
import { CONDITION } from '../api/index.ts';
import { ANNOTATION_COMPARE_OPTIONS, ANNOTATION_HOOK, annotationCSV } from '../sync/annotations.ts';
import { parseSyncOptions } from '../sync/options.ts';
import { repositorySecretsFor } from '../repository/access.ts';
import type { RepositoryState } from '../repository/access.ts';
import type { FieldRule } from './field-support.ts';
import {
  ANNOTATION_RULES,
  APPLICATION_RULES,
  APPPROJECT_RULES,
  ARGOCD_CM_RULES,
  CLUSTER_SECRET_RULES,
  COMPARE_OPTION_RULES,
  FINALIZER_RULES,
  HOOK_RULES,
  REPOSITORY_SECRET_RULES,
  SYNC_OPTION_RULES,
  ruleFor,
} from './field-support.ts';

export interface UnhonouredInput {
  app: Application;
  project: AppProject;
  /** argocd-cm's data. */
  settings?: Record<string, string> | undefined;
  /** The destination's cluster Secret, decoded: its data keys and its config's keys. */
  clusterSecret?: { data: Record<string, string>; config: Record<string, unknown> } | undefined;
  /** The repository Secrets and credential templates its sources read ("namespace/name"), with the keys each sets. */
  repositorySecrets?: ReadonlyArray<{ secret: string; keys: readonly string[] }> | undefined;
  /** The rendered objects, for the hook types their annotations name. */
  objects?: ReadonlyArray<{ metadata?: { annotations?: Record<string, string> | undefined } }> | undefined;
}

function isSet(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === '') return false;
  if (Array.isArray(v)) return v.some(isSet);
  if (typeof v === 'object') return Object.values(v as object).some(isSet);
  return true;
}

/** Every path (arrays as `[]`) at which `value` holds something set, down to `stop`'s leaves. */
function setPaths(value: unknown, prefix: string, out: Set<string>): void {
  if (!isSet(value)) return;
  if (Array.isArray(value)) {
    for (const item of value) setPaths(item, `${prefix}[]`, out);
    return;
  }
  if (value !== null && typeof value === 'object') {
    out.add(prefix);
    for (const [k, v] of Object.entries(value)) setPaths(v, prefix ? `${prefix}.${k}` : k, out);
    return;
  }
  out.add(prefix);
}

function warned(rules: readonly FieldRule[], names: Iterable<string>, label: (n: string) => string): string[] {
  const out: string[] = [];
  const seen = new Set<FieldRule>();
  for (const n of names) {
    const rule = ruleFor(rules, n);
    if (rule?.support !== 'warned' || seen.has(rule)) continue;
    seen.add(rule);
    out.push(`${label(rule.pattern.replace(/\.\*\*$/, ''))} (${rule.note})`);
  }
  return out;
}

/** The names of everything set that is warned about, in a stable order. */
export function unhonouredFields(input: UnhonouredInput): string[] {
  const { app, project } = input;
  const appPaths = new Set<string>();
  setPaths({ spec: app.spec, operation: (app as { operation?: unknown }).operation }, '', appPaths);
  const projectPaths = new Set<string>();
  setPaths({ spec: project.spec }, '', projectPaths);
  const options = [...(app.spec.syncPolicy?.syncOptions ?? []), ...(app.operation?.sync?.syncOptions ?? [])];
  const ignoredOptions = parseSyncOptions(options).ignored;
  const annotations = app.metadata.annotations ?? {};
  const hookTypes = new Set<string>();
  for (const o of input.objects ?? []) for (const t of annotationCSV(o as never, ANNOTATION_HOOK)) hookTypes.add(t);
  const out = [
    ...warned(APPLICATION_RULES, appPaths, (p) => `Application ${p}`),
    ...warned(APPPROJECT_RULES, projectPaths, (p) => `AppProject ${project.metadata.name} ${p}`),
    ...warned(SYNC_OPTION_RULES, ignoredOptions, (p) => `sync option ${p}`),
    ...ignoredOptions
      .filter((o) => !ruleFor(SYNC_OPTION_RULES, o))
      .map((o) => `sync option ${o} (not an option Argo CD defines)`),
    ...warned(
      COMPARE_OPTION_RULES,
      annotationCSV(app as never, ANNOTATION_COMPARE_OPTIONS),
      (p) => `compare option ${p}`,
    ),
    ...warned(ANNOTATION_RULES, Object.keys(annotations), (p) => `annotation ${p}`),
    ...warned(FINALIZER_RULES, app.metadata.finalizers ?? [], (p) => `finalizer ${p}`),
    ...warned(HOOK_RULES, hookTypes, (p) => `hook ${p}`),
    ...warned(
      ARGOCD_CM_RULES,
      Object.entries(input.settings ?? {})
        .filter(([, v]) => v !== '')
        .map(([k]) => k),
      (p) => `argocd-cm ${p}`,
    ),
  ];
  if (input.clusterSecret) {
    const keys = [
      ...Object.keys(input.clusterSecret.data).map((k) => `data.${k}`),
      ...Object.entries(input.clusterSecret.config)
        .filter(([, v]) => isSet(v))
        .map(([k]) => `data.config.${k}`),
    ];
    out.push(...warned(CLUSTER_SECRET_RULES, keys, (p) => `cluster Secret ${p}`));
  }
  for (const { secret, keys } of input.repositorySecrets ?? []) {
    out.push(
      ...warned(
        REPOSITORY_SECRET_RULES,
        keys.map((k) => `data.${k}`),
        (p) => `repository Secret ${secret} ${p}`,
      ),
    );
  }
  return out;
}

/** The repository Secrets and templates the sources read, each once, for UnhonouredInput.repositorySecrets. */
export function repositorySecretsOf(
  state: RepositoryState,
  sources: readonly ApplicationSource[],
  project: AppProject,
): Array<{ secret: string; keys: readonly string[] }> {
  const out = new Map<string, readonly string[]>();
  for (const source of sources) {
    const { secret, template } = repositorySecretsFor(state.configs, source.repoURL, project.metadata.name);
    for (const c of [secret, template]) if (c) out.set(c.secret, c.keys);
  }
  return [...out].map(([secret, keys]) => ({ secret, keys }));
}

/** The condition, or none when everything set is acted on. */
export function unhonouredCondition(input: UnhonouredInput): AppCondition | undefined {
  const fields = unhonouredFields(input);
  if (fields.length === 0) return undefined;
  return { type: CONDITION.UnsupportedFieldWarning, message: `impersync does not act on: ${fields.join('; ')}` };
}
