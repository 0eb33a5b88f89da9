// argocd-cm's settings of the rendering tools, read as Argo CD v3.6.1 reads them
// (util/settings/settings.go GetKustomizeSettings, GetEnabledSourceTypes) and sent with each render
// request (renderer/protocol.ts): an admin's input, so the kustomize binaries named here are the
// only ones besides the renderer's own that a render may run.
import { z } from 'zod';

/** Source types whose manifest generation an argocd-cm key turns off; `Directory` is jsonnet's. */
export const TOOL_SWITCH_KEYS = {
  Kustomize: 'kustomize.enable',
  Helm: 'helm.enable',
  Directory: 'jsonnet.enable',
} as const;
export type SwitchedSourceType = keyof typeof TOOL_SWITCH_KEYS;

const KUSTOMIZE_BUILD_OPTIONS = 'kustomize.buildOptions';
const VALUES_FILE_SCHEMES = 'helm.valuesFileSchemes';
const KUSTOMIZE_VERSION_PREFIXES = ['kustomize.version', 'kustomize.path'] as const;

export const ToolSettingsSchema = z.strictObject({
  /** Source types argocd-cm turned off (a key set to anything but "true"). */
  disabled: z
    .array(z.enum(['Kustomize', 'Helm', 'Directory']))
    .max(3)
    .optional(),
  kustomize: z
    .strictObject({
      /** kustomize.buildOptions: `kustomize build` flags for every version, space separated. */
      buildOptions: z
        .string()
        .max(64 * 1024)
        .optional(),
      /** kustomize.path.<name> (or kustomize.version.<name>) and kustomize.buildOptions.<name>. */
      versions: z
        .array(
          z.strictObject({
            name: z.string().max(253),
            path: z.string().max(4096),
            buildOptions: z
              .string()
              .max(64 * 1024)
              .optional(),
          }),
        )
        .max(100)
        .optional(),
    })
    .optional(),
  /** argocd-cm helm.valuesFileSchemes, split on commas; absent: Argo CD's default, https and http. */
  valuesFileSchemes: z.array(z.string().max(64)).max(64).optional(),
  /** Argo CD's "failed to get Kustomize settings" error: every render of a Kustomize source fails with it. */
  error: z.string().max(4096).optional(),
});
export type ToolSettings = z.infer<typeof ToolSettingsSchema>;

/** The tool settings of argocd-cm's data; undefined when it sets none (so requests stay as they were). */
export function readToolSettings(data: Readonly<Record<string, string>> | undefined): ToolSettings | undefined {
  if (!data) return undefined;
  const out: ToolSettings = {};
  // Argo CD: a key present and non-empty enables its type only when it is exactly "true".
  const disabled = (Object.keys(TOOL_SWITCH_KEYS) as SwitchedSourceType[]).filter((type) => {
    const value = data[TOOL_SWITCH_KEYS[type]];
    return value !== undefined && value !== '' && value !== 'true';
  });
  if (disabled.length > 0) out.disabled = disabled;
  // As Argo CD's GetHelmSettings: present (even empty) replaces the default list.
  const schemes = data[VALUES_FILE_SCHEMES];
  if (schemes !== undefined)
    out.valuesFileSchemes = schemes
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
      .slice(0, 64)
      .map((s) => s.slice(0, 64));

  const versions = new Map<string, { name: string; path: string; buildOptions?: string }>();
  const perVersionOptions = new Map<string, string>();
  // Sorted, so which of two duplicate keys is named does not depend on the order of the data.
  for (const key of Object.keys(data).sort()) {
    const value = data[key] as string;
    for (const prefix of KUSTOMIZE_VERSION_PREFIXES) {
      // Argo CD matches the prefix alone and takes the name after one more character.
      if (!key.startsWith(prefix)) continue;
      const name = key.slice(prefix.length + 1);
      if (name === '') continue;
      if (versions.has(name)) {
        out.error ??= `failed to get Kustomize settings: failed to add kustomize version from "${key}": found duplicate kustomize version: ${name}`;
        continue;
      }
      versions.set(name, { name, path: value });
    }
    if (key.startsWith(KUSTOMIZE_BUILD_OPTIONS) && key !== KUSTOMIZE_BUILD_OPTIONS)
      perVersionOptions.set(key.slice(KUSTOMIZE_BUILD_OPTIONS.length + 1), value);
  }
  for (const [name, options] of perVersionOptions) {
    const v = versions.get(name);
    if (v) v.buildOptions = options;
  }
  const buildOptions = data[KUSTOMIZE_BUILD_OPTIONS];
  if (buildOptions !== undefined || versions.size > 0) {
    out.kustomize = {
      ...(buildOptions !== undefined ? { buildOptions } : {}),
      ...(versions.size > 0 ? { versions: [...versions.values()] } : {}),
    };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** readToolSettings of argocd-cm as the controller's cache holds it (absent or unreadable: none). */
export function toolSettingsOf(
  cm: { data?: Record<string, string> | undefined } | undefined | Error,
): ToolSettings | undefined {
  return cm instanceof Error ? undefined : readToolSettings(cm?.data);
}
