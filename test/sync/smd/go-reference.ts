// The Go program of ./go (the real structured-merge-diff and schemaconv), built once per version of
// its source into ~/.cache/impersync/, the module proxy supplying its modules: what the Go library
// answers for one case, to hold src/sync/smd to.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { goProgram } from '../../support/go-program.ts';

const dir = fileURLToPath(new URL('./go', import.meta.url));

function binary(): string {
  return goProgram(dir, 'smd-reference', 'the Go reference of test/sync/smd/go');
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
