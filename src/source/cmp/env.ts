// The environment Argo CD's repo-server gives a plugin (reposerver/repository/repository.go
// getPluginEnvs, and ApplicationSourcePluginParameters.Environ in the Application types): the
// build variables, KUBE_VERSION and KUBE_API_VERSIONS, each plugin.env entry as ARGOCD_ENV_<name>
// with the build variables substituted, the parameters as ARGOCD_APP_PARAMETERS (JSON) and as
// PARAM_<NAME>[_<key or index>]. Nothing else: no variable of the renderer, no credential.
import type { ApplicationSource } from '../../api/application.ts';
import { envsubst, type BuildEnv } from '../build-env.ts';

type Plugin = NonNullable<ApplicationSource['plugin']>;
type Parameter = NonNullable<Plugin['parameters']>[number];

export interface PluginEnvInput {
  buildEnv?: BuildEnv | undefined;
  kubeVersion?: string | undefined;
  apiVersions?: readonly string[] | undefined;
  plugin: Plugin;
}

/** The variables in Argo CD's order, as NAME=value entries become EnvEntry messages. */
export function pluginEnv(input: PluginEnvInput): Array<{ name: string; value: string }> {
  const base: Array<{ name: string; value: string }> = [
    ...Object.entries(input.buildEnv ?? {}).map(([name, value]) => ({ name, value })),
    { name: 'KUBE_VERSION', value: kubeVersion(input.kubeVersion) },
    { name: 'KUBE_API_VERSIONS', value: (input.apiVersions ?? []).join(',') },
  ];
  const known: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const e of base) known[e.name] = e.value;
  const out = [...base];
  for (const e of input.plugin.env ?? []) out.push({ name: `ARGOCD_ENV_${e.name}`, value: envsubst(e.value, known) });
  const params = input.plugin.parameters ?? [];
  out.push({ name: 'ARGOCD_APP_PARAMETERS', value: goJSON(params.map(parameterJSON)) });
  for (const p of params) {
    const name = `PARAM_${escaped(p.name)}`;
    if (p.string !== undefined) out.push({ name, value: p.string });
    for (const [k, v] of Object.entries(p.map ?? {})) out.push({ name: `${name}_${escaped(k)}`, value: v });
    (p.array ?? []).forEach((v, i) => out.push({ name: `${name}_${i}`, value: v }));
  }
  return out;
}

/** k8s.io/apimachinery's ParseGeneric(...).String(): the version's numbers, without a `v` or a suffix. */
function kubeVersion(v: string | undefined): string {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(v ?? '');
  if (!m) return '';
  return m[3] === undefined ? `${m[1]}.${m[2]}` : `${m[1]}.${m[2]}.${m[3]}`;
}

/** Upper case, and every character but A-Z, 0-9 and `_` made `_` (Argo CD's escaped). */
function escaped(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}

/** One parameter as Go marshals ApplicationSourcePluginParameter: its fields in order, empty ones left out. */
function parameterJSON(p: Parameter): Record<string, unknown> {
  return {
    ...(p.name ? { name: p.name } : {}),
    ...(p.string !== undefined ? { string: p.string } : {}),
    ...(p.map !== undefined ? { map: p.map } : {}),
    ...(p.array !== undefined ? { array: p.array } : {}),
  };
}

/** JSON as Go's encoding/json writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped, map keys sorted. */
function goJSON(value: unknown): string {
  const sorted = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.entries(v)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([k, x]) => [k, sorted(x)]),
      );
    }
    return v;
  };
  // Only a parameter's map is a Go map (sorted keys); the struct fields keep their order.
  const withSortedMaps = Array.isArray(value)
    ? value.map((p: Record<string, unknown>) => (p['map'] ? { ...p, map: sorted(p['map']) } : p))
    : value;
  return JSON.stringify(withSortedMaps).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
