// The Go program of ./go (the real structured-merge-diff and schemaconv), built once per version of
// its source into ~/.cache/impersync/, the module proxy supplying its modules: what the Go library
// answers for one case, to hold src/sync/smd to.
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('./go', import.meta.url));

function binary(): string {
  const hash = createHash('sha256');
  for (const f of ['main.go', 'go.mod', 'go.sum']) hash.update(readFileSync(path.join(dir, f)));
  const cache = path.join(os.homedir(), '.cache', 'impersync');
  mkdirSync(cache, { recursive: true });
  const out = path.join(cache, `smd-reference-${hash.digest('hex').slice(0, 12)}`);
  if (existsSync(out)) return out;
  try {
    execFileSync('go', ['build', '-o', out, '.'], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
    });
  } catch (err) {
    throw new Error(
      `cannot build the Go reference of test/sync/smd/go (is Go installed? apt-get install golang, or Go from go.dev): ${(err as Error).message}`,
    );
  }
  return out;
}

export interface GoCase {
  document: unknown;
  typeName: string;
  predicted: unknown;
  live: unknown;
  manager: string;
  /** An OpenAPI v2 document: the schema built from it as Argo CD builds its parser, not from `document`. */
  documentV2?: unknown;
  /** A FieldsV1 set to remove from `predicted`. */
  remove?: unknown;
}

export interface GoAnswer {
  fieldSet?: unknown;
  removed?: unknown;
  merged?: unknown;
  removeItems?: unknown;
  result?: unknown;
  error?: string;
  validate?: string;
}

export function goReference(c: GoCase): GoAnswer {
  const r = spawnSync(binary(), [], { input: JSON.stringify(c) });
  if (r.status !== 0) throw new Error(`Go reference failed: ${r.stderr.toString()}`);
  return JSON.parse(r.stdout.toString('utf8')) as GoAnswer;
}
