// Health customizations from argocd-cm, read as Argo CD's settings manager reads them
// (util/settings GetResourceOverrides): first the `resource.customizations` map (YAML, keyed by
// `group/Kind`), then every `resource.customizations.<type>.<group_kind>` key, whose fields replace
// the map's. `<group_kind>` is `group_Kind`, a bare `Kind` for the core group, or `all` for `*/*`;
// keys may be globs. Only health matters here; the other types are accepted and left to their own
// readers, and an unknown type or malformed value is the error Argo CD would report.
import { parse } from 'yaml';

export const RESOURCE_CUSTOMIZATIONS_KEY = 'resource.customizations';
/** impersync's own key: a folder laid out like Argo CD's resource_customizations/<group>/<Kind>/health.lua. */
export const HEALTH_LIBRARY_KEY = 'impersync.health.customizationsDir';

export interface HealthOverride {
  healthLua: string;
  useOpenLibs: boolean;
}

export interface HealthCustomizations {
  /** By override key (`group/Kind`, `Kind`, or a glob such as `*.example.com/*`), in argocd-cm order. */
  overrides: Map<string, HealthOverride>;
  /** The folder of health.lua files named by impersync.health.customizationsDir, if any. */
  libraryDir?: string;
  /** Why the customizations cannot be used (Argo CD then assesses nothing); absent when they can. */
  error?: string;
}

const SPLIT_TYPES = new Set([
  'health',
  'useOpenLibs',
  'actions',
  'ignoreDifferences',
  'ignoreResourceUpdates',
  'knownTypeFields',
]);

/** Go's strconv.ParseBool. */
function parseBool(v: string): boolean | Error {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return new Error(`strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`);
}

/** Argo CD's convertToOverrideKey. */
export function overrideKey(groupKind: string): string | Error {
  const parts = groupKind.split('_');
  if (parts.length === 2) return `${parts[0]}/${parts[1]}`;
  if (parts.length === 1 && groupKind !== '') return groupKind;
  return new Error(
    `group kind should be in format \`resource.customizations.<type>.<group_kind>\` or resource.customizations.<type>.<kind>\`, got group kind: '${groupKind}'`,
  );
}

/** encoding/json's case-insensitive field match, for the map form's `health.lua` keys. */
function fieldOf(o: Record<string, unknown>, name: string): unknown {
  let found: unknown;
  for (const key of Object.keys(o).sort()) if (key.toLowerCase() === name.toLowerCase()) found = o[key];
  return found;
}

function readMap(text: string, into: Map<string, HealthOverride>): string | undefined {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    return `${RESOURCE_CUSTOMIZATIONS_KEY}: ${(err as Error).message}`;
  }
  if (doc === null || doc === undefined) return undefined;
  if (typeof doc !== 'object' || Array.isArray(doc))
    return `${RESOURCE_CUSTOMIZATIONS_KEY}: expected a map of group/Kind to customizations`;
  for (const [key, raw] of Object.entries(doc as Record<string, unknown>)) {
    const o = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
    const lua = fieldOf(o, 'health.lua');
    const open = fieldOf(o, 'health.lua.useOpenLibs');
    if (lua !== undefined && lua !== null && typeof lua !== 'string')
      return `${RESOURCE_CUSTOMIZATIONS_KEY}: ${key}: health.lua must be a string`;
    if (open !== undefined && open !== null && typeof open !== 'boolean')
      return `${RESOURCE_CUSTOMIZATIONS_KEY}: ${key}: health.lua.useOpenLibs must be true or false`;
    into.set(key, { healthLua: typeof lua === 'string' ? lua : '', useOpenLibs: open === true });
  }
  return undefined;
}

export function readHealthCustomizations(data: Readonly<Record<string, string>> | undefined): HealthCustomizations {
  const overrides = new Map<string, HealthOverride>();
  const out = (error?: string): HealthCustomizations => {
    const dir = data?.[HEALTH_LIBRARY_KEY]?.trim();
    return { overrides, ...(dir ? { libraryDir: dir } : {}), ...(error ? { error } : {}) };
  };
  if (!data) return out();
  const map = data[RESOURCE_CUSTOMIZATIONS_KEY];
  if (map) {
    const err = readMap(map, overrides);
    if (err) return out(err);
  }
  for (const [k, v] of Object.entries(data)) {
    if (!k.startsWith(RESOURCE_CUSTOMIZATIONS_KEY)) continue;
    const parts = k.split('.');
    if (parts.length < 4) continue;
    // strings.SplitN(k, ".", 4): the fourth part keeps its dots (cert-manager.io_Certificate).
    const type = parts[2] as string;
    const key = overrideKey(parts.slice(3).join('.'));
    if (key instanceof Error) return out(key.message);
    const name = key === 'all' ? '*/*' : key;
    if (!SPLIT_TYPES.has(type)) return out(`resource customization type ${type} not supported`);
    const current = overrides.get(name) ?? { healthLua: '', useOpenLibs: false };
    if (type === 'health') current.healthLua = v;
    else if (type === 'useOpenLibs') {
      const b = parseBool(v);
      if (b instanceof Error) return out(b.message);
      current.useOpenLibs = b;
    } else if (type !== 'actions') {
      try {
        parse(v);
      } catch (err) {
        return out(`${k}: ${(err as Error).message}`);
      }
    }
    overrides.set(name, current);
  }
  return out();
}
