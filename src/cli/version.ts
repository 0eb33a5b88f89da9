// `impersync --version`: the package's version and the Argo CD release whose bundled health checks
// are the default library, since the two together say what a health assessment means.
import { readFileSync } from 'node:fs';
import { ARGOCD_HEALTH_VERSION } from '../sync/health/bundled.ts';

/** package.json sits two folders up from src/cli/ and from dist/cli/ alike (the image keeps it beside dist/). */
function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export function versionText(): string {
  return `impersync ${packageVersion()}\nArgo CD health checks: ${ARGOCD_HEALTH_VERSION}\n`;
}
