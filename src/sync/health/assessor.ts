// Health as Argo CD assesses it (gitops-engine GetResourceHealth with Argo CD's Lua overrides):
// an object being deleted is Progressing; else a Lua check, if one applies (argocd-cm exact key,
// then its globs in argocd-cm order, then the operator's folder, exact then globs); else the
// built-in check; else no health at all.
import type { KubeObject } from '../../api/index.ts';
import { groupOf } from '../../api/index.ts';
import { globMatch } from '../../impersonation/glob.ts';
import type { HealthAssessor } from './builtin.ts';
import { builtinHealth, pendingDeletion } from './builtin.ts';
import type { HealthCustomizations, HealthOverride } from './customizations.ts';
import type { HealthLibrary } from './library.ts';
import { libraryScript, readHealthLibrary } from './library.ts';
import { healthFromLua } from './lua/result.ts';
import type { LuaRunner } from './lua/runner.ts';
import type { HealthStatus } from './types.ts';
import { meta } from './values.ts';

export interface AssessorOptions {
  customizations: HealthCustomizations;
  /** Runs the Lua checks; required when any applies. */
  runner?: LuaRunner;
  /** How long a read of the operator's folder is reused. Default 60 s (a mounted ConfigMap changes within about that). */
  libraryTtlMs?: number;
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
  const ttl = opts.libraryTtlMs ?? 60_000;
  let library: { at: number; read: Promise<HealthLibrary | Error> } | undefined;
  const readLibrary = (dir: string): Promise<HealthLibrary | Error> => {
    if (!library || Date.now() - library.at > ttl)
      library = { at: Date.now(), read: readHealthLibrary(dir).catch((err: unknown) => err as Error) };
    return library.read;
  };
  return async (obj) => {
    const deleting = pendingDeletion({ ...obj, metadata: meta(obj) as KubeObject['metadata'] });
    if (deleting) return deleting;
    if (c.error) return failed(`argocd-cm: ${c.error}`);
    const key = overrideKeyOf(obj);
    let script = fromOverrides(c.overrides, key);
    if (!script && c.libraryDir) {
      const lib = await readLibrary(c.libraryDir);
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
