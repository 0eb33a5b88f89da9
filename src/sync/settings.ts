// The argocd-cm keys that shape comparison and sync, read as Argo CD's settings manager reads them
// (util/settings/settings.go): resource tracking (`application.resourceTrackingMethod`,
// `application.instanceLabelKey`, `installationID`), ignored differences and ignored updates from
// `resource.customizations` and `resource.customizations.{ignoreDifferences,ignoreResourceUpdates}.<group_kind>`,
// `resource.compareoptions`, `resource.ignoreResourceUpdatesEnabled`, and the resource filter
// (`resource.exclusions`, `resource.inclusions`; filter.ts). Reading never fails: a value that does
// not parse keeps its default and is named in `errors`.
import { parse } from 'yaml';
import { overrideKey } from './health/customizations.ts';
import type { FilteredResource, ResourceFilter } from './filter.ts';
import { INSTALL_DEFAULT_EXCLUSIONS } from './filter.ts';
import type { IgnoreRule } from './ignore.ts';
import type { KnownTypeField } from './known-types.ts';
import { knownTypeFieldsOf } from './known-types.ts';
import type { TrackingConfig, TrackingMethod } from './tracking.ts';
import { DEFAULT_INSTANCE_LABEL_KEY } from './tracking.ts';

export const TRACKING_METHOD_KEY = 'application.resourceTrackingMethod';
export const INSTANCE_LABEL_KEY = 'application.instanceLabelKey';
export const INSTALLATION_ID_KEY = 'installationID';
export const COMPARE_OPTIONS_KEY = 'resource.compareoptions';
export const EXCLUSIONS_KEY = 'resource.exclusions';
export const INCLUSIONS_KEY = 'resource.inclusions';
export const IGNORE_RESOURCE_UPDATES_ENABLED_KEY = 'resource.ignoreResourceUpdatesEnabled';
const CUSTOMIZATIONS_KEY = 'resource.customizations';
export const RESPECT_RBAC_KEY = 'resource.respectRBAC';

/** resource.compareoptions ignoreResourceStatusField: whose status is left out of the comparison. */
export type StatusRule = 'all' | 'crd' | 'none';

export interface SyncSettings {
  tracking: TrackingConfig;
  /** resource.customizations ignoreDifferences, as rules (`all` is `*` / `*`). */
  ignoreDifferences: IgnoreRule[];
  /** What a live-object change must touch beyond these to be worth a refresh. */
  ignoreResourceUpdates: IgnoreRule[];
  ignoreResourceUpdatesEnabled: boolean;
  ignoreAggregatedRoles: boolean;
  ignoreResourceStatusField: StatusRule;
  ignoreDifferencesOnResourceUpdates: boolean;
  /** resource.customizations knownTypeFields, with Argo CD's default for Argo Rollouts. */
  knownTypeFields: KnownTypeField[];
  /** resource.respectRBAC: unset is `disabled`; another value is an error (Argo CD's cache fails). */
  respectRBAC: 'disabled' | 'normal' | 'strict';
  respectRBACError?: string;
  filter: ResourceFilter;
  errors: string[];
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** An OverrideIgnoreDiff value (YAML) as the rule for `key`. */
function ruleOf(key: string, value: unknown): IgnoreRule | Error {
  if (value !== null && value !== undefined && (typeof value !== 'object' || Array.isArray(value)))
    return new Error(`${key}: expected jsonPointers, jqPathExpressions or managedFieldsManagers`);
  const v = (value ?? {}) as Record<string, unknown>;
  const parts = key.split('/');
  if (parts.length > 2) return new Error(`override key must be <group>/<kind> or <kind>, got: '${key}' `);
  return {
    group: parts.length === 2 ? (parts[0] ?? '') : '',
    kind: parts.length === 2 ? (parts[1] ?? '') : (parts[0] ?? ''),
    jsonPointers: strings(v['jsonPointers']),
    jqPathExpressions: strings(v['jqPathExpressions']),
    managedFieldsManagers: strings(v['managedFieldsManagers']),
  };
}

function yamlOf(text: string): unknown {
  return parse(text, { version: '1.1' });
}

/**
 * One customization of argocd-cm by override key (group/kind), as Argo CD reads them: the
 * resource.customizations map first (`mapValue` takes it out of each entry; undefined: none), then
 * each `resource.customizations.<type>.<group_kind>` key, which wins. `all` names every kind where
 * the type allows it. A map that does not parse is named once, by the caller that says `nameBlobError`.
 */
function readCustomization<T>(
  data: Record<string, string>,
  type: string,
  errors: string[],
  opts: {
    of: (key: string, value: unknown) => T | Error;
    mapValue: (entry: Record<string, unknown> | null) => unknown;
    allKinds: boolean;
    nameBlobError: boolean;
  },
): Map<string, T> {
  const byKey = new Map<string, T>();
  const add = (key: string, value: unknown, where: string) => {
    const r = opts.of(key, value);
    if (r instanceof Error) errors.push(`argocd-cm ${where}: ${r.message}`);
    else byKey.set(key, r);
  };
  const blob = data[CUSTOMIZATIONS_KEY];
  if (blob) {
    try {
      const map = yamlOf(blob);
      if (map && typeof map === 'object')
        for (const [key, o] of Object.entries(map as Record<string, unknown>)) {
          const value = opts.mapValue(o as Record<string, unknown> | null);
          if (value !== undefined) add(key, value, `${CUSTOMIZATIONS_KEY} ${key}.${type}`);
        }
    } catch (err) {
      if (opts.nameBlobError) errors.push(`argocd-cm ${CUSTOMIZATIONS_KEY}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  const prefix = `${CUSTOMIZATIONS_KEY}.${type}.`;
  for (const [k, v] of Object.entries(data)) {
    if (!k.startsWith(prefix)) continue;
    const gk = k.slice(prefix.length);
    const key = opts.allKinds && gk === 'all' ? '*/*' : overrideKey(gk);
    if (key instanceof Error) {
      errors.push(`argocd-cm ${k}: ${key.message}`);
      continue;
    }
    try {
      add(key, yamlOf(v), k);
    } catch (err) {
      errors.push(`argocd-cm ${k}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  return byKey;
}

function readOverrides(
  data: Record<string, string>,
  type: 'ignoreDifferences' | 'ignoreResourceUpdates',
  errors: string[],
): IgnoreRule[] {
  const byKey = readCustomization(data, type, errors, {
    of: ruleOf,
    // The map form holds each override's value as a YAML string, as Argo CD's rawResourceOverride.
    mapValue: (o) => {
      const field = o?.[type];
      return typeof field === 'string' ? yamlOf(field) : undefined;
    },
    allKinds: true,
    nameBlobError: true,
  });
  return [...byKey.values()];
}

/** A knownTypeFields value (a list of {field, type}) for the override `key`. */
function knownFieldsOf(key: string, value: unknown): KnownTypeField[] | Error {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) return new Error(`${key}: expected a list of {field, type}`);
  const parts = key.split('/');
  if (parts.length > 2) return new Error(`override key must be <group>/<kind> or <kind>, got: '${key}' `);
  const group = parts.length === 2 ? (parts[0] ?? '') : '';
  const kind = parts.length === 2 ? (parts[1] ?? '') : (parts[0] ?? '');
  return value.map((f: Record<string, unknown> | null) => ({
    group,
    kind,
    field: typeof f?.['field'] === 'string' ? f['field'] : '',
    type: typeof f?.['type'] === 'string' ? f['type'] : '',
  }));
}

/** knownTypeFields by override key: the resource.customizations map first, then each own key. */
function readKnownTypeFields(data: Record<string, string>, errors: string[]): KnownTypeField[] {
  const byKey = readCustomization(data, 'knownTypeFields', errors, {
    of: knownFieldsOf,
    // The map form holds the list itself (rawResourceOverride's KnownTypeFields), not a string.
    mapValue: (o) => o?.['knownTypeFields'],
    allKinds: false,
    // Named by readOverrides, which reads the same map.
    nameBlobError: false,
  });
  const { fields, errors: unknown } = knownTypeFieldsOf([...byKey.values()].flat());
  errors.push(...unknown.map((e) => `argocd-cm ${e}`));
  return fields;
}

function readFilter(data: Record<string, string>, key: string, errors: string[]): FilteredResource[] | undefined {
  const text = data[key];
  if (text === undefined) return undefined;
  try {
    const list = yamlOf(text) ?? [];
    if (!Array.isArray(list)) throw new Error('expected a list of {apiGroups, kinds, clusters}');
    return list.map((r: Record<string, unknown> | null) => ({
      apiGroups: strings(r?.['apiGroups']),
      kinds: strings(r?.['kinds']),
      clusters: strings(r?.['clusters']),
    }));
  } catch (err) {
    errors.push(`argocd-cm ${key}: ${(err as Error).message.split('\n')[0]}`);
    return [];
  }
}

/** Go's strconv.ParseBool: undefined for what it refuses. */
export function parseBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

export function readSyncSettings(data: Record<string, string> | undefined): SyncSettings {
  const d = data ?? {};
  const errors: string[] = [];
  const method = d[TRACKING_METHOD_KEY];
  const tracking: TrackingConfig = {
    // An unknown value tracks by annotation, as Argo CD's switch defaults.
    method: method === 'label' || method === 'annotation+label' ? (method as TrackingMethod) : 'annotation',
    labelKey: d[INSTANCE_LABEL_KEY] || DEFAULT_INSTANCE_LABEL_KEY,
    installationID: d[INSTALLATION_ID_KEY] ?? '',
  };
  if (method && method !== 'label' && method !== 'annotation' && method !== 'annotation+label')
    errors.push(`argocd-cm ${TRACKING_METHOD_KEY}: unknown tracking method '${method}'; tracking by annotation`);
  // Argo CD's defaults (GetDefaultDiffOptions): status ignored everywhere, ignoreDifferences also ignore updates.
  const settings: SyncSettings = {
    tracking,
    ignoreDifferences: readOverrides(d, 'ignoreDifferences', errors),
    ignoreResourceUpdates: readOverrides(d, 'ignoreResourceUpdates', errors),
    ignoreResourceUpdatesEnabled: true,
    ignoreAggregatedRoles: false,
    ignoreResourceStatusField: 'all',
    ignoreDifferencesOnResourceUpdates: true,
    knownTypeFields: readKnownTypeFields(d, errors),
    respectRBAC: 'disabled',
    filter: {
      exclusions: readFilter(d, EXCLUSIONS_KEY, errors) ?? INSTALL_DEFAULT_EXCLUSIONS,
      inclusions: readFilter(d, INCLUSIONS_KEY, errors) ?? [],
    },
    errors,
  };
  // Argo CD's RespectRBAC(): '' is unset; a value other than normal and strict is an error.
  const rbac = d[RESPECT_RBAC_KEY];
  if (rbac === 'normal' || rbac === 'strict') settings.respectRBAC = rbac;
  else if (rbac !== undefined && rbac !== '')
    settings.respectRBACError = `error getting value for ${RESPECT_RBAC_KEY}: invalid value for ${RESPECT_RBAC_KEY}: ${rbac}`;
  const enabled = d[IGNORE_RESOURCE_UPDATES_ENABLED_KEY];
  if (enabled !== undefined && enabled !== '') {
    const b = parseBool(enabled);
    if (b === undefined) errors.push(`argocd-cm ${IGNORE_RESOURCE_UPDATES_ENABLED_KEY}: not a boolean '${enabled}'`);
    else settings.ignoreResourceUpdatesEnabled = b;
  }
  const compare = d[COMPARE_OPTIONS_KEY];
  if (compare !== undefined) {
    try {
      const o = (yamlOf(compare) ?? {}) as Record<string, unknown>;
      if (typeof o['ignoreAggregatedRoles'] === 'boolean') settings.ignoreAggregatedRoles = o['ignoreAggregatedRoles'];
      if (typeof o['ignoreDifferencesOnResourceUpdates'] === 'boolean')
        settings.ignoreDifferencesOnResourceUpdates = o['ignoreDifferencesOnResourceUpdates'];
      const status = o['ignoreResourceStatusField'];
      // YAML 1.1 reads an unquoted `off` as false; Argo CD accepts "none", "off" and "false" alike.
      if (status === 'crd') settings.ignoreResourceStatusField = 'crd';
      else if (status === 'none' || status === 'off' || status === 'false' || status === false)
        settings.ignoreResourceStatusField = 'none';
      else if (status !== undefined && status !== '' && status !== 'all')
        errors.push(
          `argocd-cm ${COMPARE_OPTIONS_KEY}: Unrecognized value for ignoreResourceStatusField - ${String(status)}, ignore status for all resources`,
        );
    } catch (err) {
      errors.push(`argocd-cm ${COMPARE_OPTIONS_KEY}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  return settings;
}
