// Where the health checks Argo CD bundles come from: the pinned Argo CD release's
// resource_customizations/ (scripts/health-scripts downloads it; the image installs it), impersync's
// default library. It ranks below argocd-cm's keys and the operator's folder, above the built-in
// checks, as Argo CD's own bundled scripts do. Found at run time, never at import.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The Argo CD release whose bundled checks impersync runs by default (scripts/health-scripts pins it). */
export const ARGOCD_HEALTH_VERSION = 'v3.6.1';
/** Names the default library's folder; `none` runs without one. */
export const HEALTH_SCRIPTS_DIR_ENV = 'IMPERSYNC_HEALTH_SCRIPTS_DIR';
/** Where the image installs it (Dockerfile). */
export const IMAGE_HEALTH_SCRIPTS_DIR = '/usr/share/impersync/health-scripts';

/** Where scripts/health-scripts caches the pinned release, for runs outside the image. */
function cachedDir(env: NodeJS.ProcessEnv): string {
  const root = env['IMPERSYNC_CACHE'] || join(env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'impersync');
  return join(root, 'health-scripts', `argo-cd-${ARGOCD_HEALTH_VERSION}`);
}

/**
 * The default library's folder: the env var when set (even a folder that does not exist, whose
 * read error then says so on every object it would assess), else the image's folder or the
 * download cache when present; undefined when there is none.
 */
export function defaultHealthScriptsDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const named = env[HEALTH_SCRIPTS_DIR_ENV]?.trim();
  if (named === 'none') return undefined;
  if (named) return named;
  return [IMAGE_HEALTH_SCRIPTS_DIR, cachedDir(env)].find((dir) => existsSync(dir));
}
