// The helm and kustomize the source tests render with: the pinned ones scripts/tool-binaries builds
// (once per machine, minutes). When it cannot provide them, the test fails with how to get them.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { DEFAULT_LIMITS, type RenderEnvironment } from '../../src/source/render.ts';

const repoRoot = path.resolve(import.meta.dirname, '../..');
let cached: string | undefined;

export function toolsDir(): string {
  if (cached) return cached;
  const res = spawnSync('bash', [path.join(repoRoot, 'scripts/tool-binaries')], {
    encoding: 'utf8',
    timeout: 40 * 60_000,
  });
  const dir = res.stdout.trim().split('\n').at(-1) ?? '';
  if (res.status !== 0 || dir === '') {
    throw new Error(
      `helm and kustomize are needed and scripts/tool-binaries could not provide them (exit ${res.status}):\n${res.stderr}\n` +
        'Install Go 1.26+ (https://go.dev/doc/install) and run scripts/tool-binaries, or set IMPERSYNC_TOOLS_DIR to a folder ' +
        'holding helm and kustomize, or IMPERSYNC_TOOLS_FROM_PATH=true to use the ones on PATH.',
    );
  }
  cached = dir;
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
