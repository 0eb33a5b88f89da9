// A test's own Go program (a folder with main.go, and go.mod/go.sum when it needs modules, which the
// module proxy supplies), built once per version of its source into ~/.cache/impersync/ and reused.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The built program of `dir`, named `<name>-<hash of its source>`; `what` names it in the error. */
export function goProgram(dir: string, name: string, what: string): string {
  const hash = createHash('sha256');
  for (const f of ['main.go', 'go.mod', 'go.sum']) {
    const file = path.join(dir, f);
    if (existsSync(file)) hash.update(readFileSync(file));
  }
  const cache = path.join(os.homedir(), '.cache', 'impersync');
  mkdirSync(cache, { recursive: true });
  const out = path.join(cache, `${name}-${hash.digest('hex').slice(0, 12)}`);
  if (existsSync(out)) return out;
  try {
    execFileSync('go', ['build', '-o', out, '.'], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
    });
  } catch (err) {
    throw new Error(
      `cannot build ${what} (is Go installed? apt-get install golang, or Go from go.dev): ${(err as Error).message}`,
    );
  }
  return out;
}
