// The helm kustomize runs for helmCharts (with the operator's --enable-helm). kustomize builds helm's
// command line from the chart's fields: `releaseName` lands where helm reads a flag
// (`--post-renderer=./run.sh` runs a program of the repository), `name` and `chartHome` make the
// chart's folder (anywhere on the disk), and `helmGlobals.configHome` becomes helm's homes (the
// plugins of a folder of the repository, which helm runs as downloaders). So kustomize is given,
// as --helm-command, a `helm` of ours (helm-guard.ts, run by this Node) that lets through only the
// commands kustomize makes, rebuilt so that no value is read as a flag, with every folder and file
// inside the checkout or the render's own temporary folder, chart repositories the project's
// sourceRepos allow, the chart's schemas held to helm-schema.ts, and helm's homes the renderer's.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeShim } from './kustomize-git.ts';

export const HELM_GUARD_POLICY_ENV = 'IMPERSYNC_KUSTOMIZE_HELM_POLICY';

export interface HelmGuardPolicy {
  /** The real helm, an absolute path ('' when there is none). */
  helm: string;
  /** Physical folders that every chart, values file and pulled chart must be inside. */
  roots: string[];
  /** The AppProject's sourceRepos: where charts may be pulled from (null: nowhere). */
  sourceRepos: readonly string[] | null;
  /** helm's config, cache and data homes (never a folder the repository names). */
  home: string;
}

const GUARD = fileURLToPath(new URL(`./helm-guard${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url));

/** Writes the `helm` kustomize is told to run, into `binDir`. */
export function writeHelmShim(binDir: string): Promise<string> {
  return writeShim(binDir, 'helm', GUARD);
}
