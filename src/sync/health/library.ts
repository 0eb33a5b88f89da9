// A folder of health checks laid out like Argo CD's resource_customizations/: <group>/<Kind>/health.lua
// (<Kind>/health.lua for the core group). A path segment that contains `_` is a glob in which `_`
// stands for `*` (`_.crossplane.io/_`), as in Argo CD's built-in scripts; `*` never crosses `/`.
// Exact folders win over globs, globs are tried in sorted order. Scripts from here run with the
// standard libraries open, as Argo CD runs its own.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HEALTH_LIBRARY_KEY } from './customizations.ts';

const SCRIPT = 'health.lua';

export interface HealthLibrary {
  dir: string;
  exact: Map<string, string>;
  globs: Array<{ key: string; match: RegExp; script: string }>;
}

function globOf(key: string): RegExp {
  const escaped = key.replace(/[.+?^${}()|[\]\\*]/g, '\\$&').replaceAll('_', '[^/]*');
  return new RegExp(`^${escaped}$`);
}

async function dirsIn(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  return entries.filter((e) => e.isDirectory()).map((e) => e.name);
}

async function scriptIn(dir: string): Promise<string | undefined> {
  try {
    return await readFile(join(dir, SCRIPT), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EISDIR')
      return undefined;
    throw err;
  }
}

/** Reads every health.lua of the folder; throws a message naming `label` (what named it) and the folder. */
export async function readHealthLibrary(dir: string, label: string = HEALTH_LIBRARY_KEY): Promise<HealthLibrary> {
  const exact = new Map<string, string>();
  try {
    for (const top of (await dirsIn(dir)).sort()) {
      const core = await scriptIn(join(dir, top));
      if (core !== undefined) exact.set(top, core);
      for (const kind of (await dirsIn(join(dir, top))).sort()) {
        const script = await scriptIn(join(dir, top, kind));
        if (script !== undefined) exact.set(`${top}/${kind}`, script);
      }
    }
  } catch (err) {
    throw new Error(`${label} ${dir}: ${(err as Error).message}`, { cause: err });
  }
  const globs = [...exact.entries()]
    .filter(([key]) => key.includes('_'))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, script]) => ({ key, match: globOf(key), script }));
  return { dir, exact, globs };
}

/** The folder's script for a `group/Kind` (or core `Kind`) key. */
export function libraryScript(lib: HealthLibrary, key: string): string | undefined {
  return lib.exact.get(key) ?? lib.globs.find((g) => g.match.test(key))?.script;
}

/**
 * Folders of checks as read, each reused for `ttlMs` (a mounted ConfigMap changes within about a
 * minute): shared by the assessors of one process, so that a new argocd-cm, or each run of
 * `impersync health`, does not read the default library again.
 */
export class HealthLibraries {
  readonly #ttlMs: number;
  readonly #read = new Map<string, { at: number; read: Promise<HealthLibrary | Error> }>();

  constructor(ttlMs = 60_000) {
    this.#ttlMs = ttlMs;
  }

  /** The folder's checks, or the error reading it (naming `label`, what named the folder). */
  read(dir: string, label: string): Promise<HealthLibrary | Error> {
    const key = `${label}\0${dir}`;
    const last = this.#read.get(key);
    if (last && Date.now() - last.at <= this.#ttlMs) return last.read;
    const read = readHealthLibrary(dir, label).catch((err: unknown) => err as Error);
    this.#read.set(key, { at: Date.now(), read });
    return read;
  }
}
