// The Go program of ./go, built once per version of its source into the temporary folder: decodes
// a cache value as Argo CD does and writes it again as Argo CD does (see main.go).
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('./go', import.meta.url));

function binary(): string {
  const source = readFileSync(path.join(dir, 'main.go'));
  const out = path.join(
    os.tmpdir(),
    `impersync-argocache-decode-${createHash('sha256').update(source).digest('hex').slice(0, 12)}`,
  );
  if (existsSync(out)) return out;
  try {
    execFileSync('go', ['build', '-o', out, '.'], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
    });
  } catch (err) {
    throw new Error(
      `cannot build the Go decoder of test/argocd-cache/go (is Go installed? apt-get install golang, or Go from go.dev): ${(err as Error).message}`,
    );
  }
  return out;
}

/** Go's round trip of a value: what Argo CD's reader decodes and its writer would have written. */
export function goRoundTrip(kind: 'tree' | 'managed' | 'cluster', compression: 'gzip' | 'none', value: Buffer): string {
  const r = spawnSync(binary(), [kind, compression], { input: value });
  if (r.status !== 0) throw new Error(`Go decoder failed: ${r.stderr.toString()}`);
  return r.stdout.toString('utf8');
}
