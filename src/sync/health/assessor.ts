// Health as Argo CD assesses it (gitops-engine GetResourceHealth with Argo CD's Lua overrides):
// an object being deleted is Progressing; else a Lua check, if one applies (argocd-cm exact key,
// then its globs in argocd-cm order, then the operator's folder, then the default library of
// Argo CD's bundled checks, each exact then globs); else the built-in check; else no health at all.
import type { KubeObject } from '../../api/index.ts';
import { groupOf } from '../../api/index.ts';
import { globMatch } from '../../impersonation/glob.ts';
import type { HealthAssessor } from './builtin.ts';
import { builtinHealth, pendingDeletion } from './builtin.ts';
import { HEALTH_SCRIPTS_DIR_ENV } from './bundled.ts';
import type { HealthCustomizations, HealthOverride } from './customizations.ts';
import { HEALTH_LIBRARY_KEY } from './customizations.ts';
import { HealthLibraries, libraryScript } from './library.ts';
import { healthFromLua } from './lua/result.ts';
import type { LuaRunner } from './lua/runner.ts';
import type { HealthStatus } from './types.ts';
import { meta } from './values.ts';

export interface AssessorOptions {
  customizations: HealthCustomizations;
  /** Runs the Lua checks; required when any applies. */
  runner?: LuaRunner;
  /** The folder of Argo CD's bundled checks (bundled.ts), below argocd-cm and the operator's folder. */
  defaultLibraryDir?: string | undefined;
  /** How long a read of a folder of checks is reused. Default 60 s (a mounted ConfigMap changes within about that). */
  libraryTtlMs?: number;
  /** The folders' reads, shared by several assessors; default: this assessor's own (libraryTtlMs). */
  libraries?: HealthLibraries | undefined;
  /** What a script printed (print, io.write): `impersync health` shows it; the controller drops it. */
  onPrint?: (obj: KubeObject, line: string) => void;
}

type Script = { lua: string; useOpenLibs: boolean };

function failed(error: string): HealthStatus {
  return { status: 'Unknown', message: error, error };
}

/** Argo CD's GetConfigMapKey: `group/Kind`, or `Kind` for the core group. */
export function overrideKeyOf(obj: KubeObject): string {
  const group = groupOf(String(obj.apiVersion ?? ''));
  return group ? `${group}/${String(obj.kind)}` : String(obj.kind);
}

function fromOverrides(overrides: ReadonlyMap<string, HealthOverride>, key: string): Script | undefined {
  const exact = overrides.get(key);
  if (exact && exact.healthLua !== '') return { lua: exact.healthLua, useOpenLibs: exact.useOpenLibs };
  for (const [pattern, o] of overrides)
    if (o.healthLua !== '' && globMatch(pattern, key)) return { lua: o.healthLua, useOpenLibs: o.useOpenLibs };
  return undefined;
}

export function createHealthAssessor(opts: AssessorOptions): HealthAssessor {
  const c = opts.customizations;
  const libraries = opts.libraries ?? new HealthLibraries(opts.libraryTtlMs);
  // The operator's folder, then the default library; scripts from both run with the standard
  // libraries open, as Argo CD runs its bundled ones.
  const folders = [
    ...(c.libraryDir ? [{ dir: c.libraryDir, label: HEALTH_LIBRARY_KEY }] : []),
    ...(opts.defaultLibraryDir ? [{ dir: opts.defaultLibraryDir, label: HEALTH_SCRIPTS_DIR_ENV }] : []),
  ];
  return async (obj) => {
    const deleting = pendingDeletion({ ...obj, metadata: meta(obj) as KubeObject['metadata'] });
    if (deleting) return deleting;
    if (c.error) return failed(`argocd-cm: ${c.error}`);
    const key = overrideKeyOf(obj);
    let script = fromOverrides(c.overrides, key);
    for (const folder of folders) {
      if (script) break;
      const lib = await libraries.read(folder.dir, folder.label);
      if (lib instanceof Error) return failed(lib.message);
      const lua = libraryScript(lib, key);
      if (lua !== undefined) script = { lua, useOpenLibs: true };
    }
    if (!script) return builtinHealth(obj);
    if (!opts.runner) return failed('no Lua runner was given to assess this kind');
    const result = await opts.runner.run(script.lua, script.useOpenLibs, obj);
    for (const line of result.printed) opts.onPrint?.(obj, line);
    return healthFromLua(result);
  };
}
