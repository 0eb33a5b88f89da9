// The Go program of ./go, built once per version of its source into ~/.cache/impersync/: decodes
// a cache value as Argo CD does and writes it again as Argo CD does (see main.go).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { goProgram } from '../support/go-program.ts';

const dir = fileURLToPath(new URL('./go', import.meta.url));

function binary(): string {
  return goProgram(dir, 'argocd-cache-decoder', 'the Go decoder of test/argocd-cache/go');
}

/** Go's round trip of a value: what Argo CD's reader decodes and its writer would have written. */
export function goRoundTrip(kind: 'tree' | 'managed' | 'cluster', compression: 'gzip' | 'none', value: Buffer): string {
  const r = spawnSync(binary(), [kind, compression], { input: value });
  if (r.status !== 0) throw new Error(`Go decoder failed: ${r.stderr.toString()}`);
  return r.stdout.toString('utf8');
}
