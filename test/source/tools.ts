// The helm, kustomize and impersync-jsonnet the source tests render with: the pinned ones
// scripts/tool-binaries builds (once per machine, minutes). When it cannot provide them, the test
// fails with how to get them.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { DEFAULT_LIMITS, type RenderEnvironment } from '../../src/source/render.ts';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const cached = new Map<string, string>();

/** The helm (Helm 4, Argo CD v3.6.1's) and kustomize the renderer runs by default. */
export function toolsDir(): string {
  return built({});
}

/**
 * The same folder with Helm 3 (the renderer's helm before Argo CD v3.6.1 moved to Helm 4), for the
 * tests that render under both majors. Its own folder: IMPERSYNC_TOOLS_DIR is not used for it.
 */
export function helm3ToolsDir(): string {
  return built({ IMPERSYNC_HELM_VERSION: HELM3_VERSION, IMPERSYNC_TOOLS_DIR: '' });
}
export const HELM3_VERSION = 'v3.22.0';

function built(extra: Record<string, string>): string {
  const key = JSON.stringify(extra);
  const known = cached.get(key);
  if (known) return known;
  const res = spawnSync('bash', [path.join(repoRoot, 'scripts/tool-binaries')], {
    encoding: 'utf8',
    timeout: 40 * 60_000,
    env: { ...process.env, ...extra },
  });
  const dir = res.stdout.trim().split('\n').at(-1) ?? '';
  if (res.status !== 0 || dir === '') {
    throw new Error(
      `helm and kustomize are needed and scripts/tool-binaries could not provide them (exit ${res.status}):\n${res.stderr}\n` +
        `Install Go 1.26+ (https://go.dev/doc/install) and run ${extra.IMPERSYNC_HELM_VERSION ? `IMPERSYNC_HELM_VERSION=${extra.IMPERSYNC_HELM_VERSION} ` : ''}scripts/tool-binaries, or set IMPERSYNC_TOOLS_DIR to a folder ` +
        'holding helm, kustomize and impersync-jsonnet, or IMPERSYNC_TOOLS_FROM_PATH=true to use the ones on PATH.',
    );
  }
  cached.set(key, dir);
  return dir;
}

/** The environment renderCheckout runs in, with the pinned tools and its folders under `cacheDir`. */
export function renderEnvironment(cacheDir: string): RenderEnvironment {
  return {
    tools: { dir: toolsDir() },
    limits: DEFAULT_LIMITS,
    workRoot: path.join(cacheDir, 'work'),
    helmHome: path.join(cacheDir, 'helm'),
    env: process.env,
  };
}
