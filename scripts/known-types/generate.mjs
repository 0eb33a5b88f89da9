#!/usr/bin/env node
// Generates src/sync/known-types.json: how Go's encoding/json reads and writes each Kubernetes type
// Argo CD's knownTypeFields may name (core/v1/<Type>), so that sync/known-types.ts can round-trip a
// custom resource's field through it as Argo CD's knownTypesNormalizer does (json.Unmarshal into
// the Go struct, json.Marshal back). For each struct: its JSON fields (name, omitempty, and the
// field's type: a pointer, a slice, a map, a struct, a scalar, or one of the types with their own
// JSON form: Quantity, IntOrString, Duration, Time, MicroTime, bytes).
//
// The list of names is the one Argo CD v3.6.1 registers (util/argo/normalizers/corev1_known_types.go
// in its Go module), the types are reflected from k8s.io/api at the version Argo CD v3.6.1 pins.
// Needs `go` and the Go module proxy (or a module cache holding both modules). Run:
//   node scripts/known-types/generate.mjs
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ARGOCD = 'github.com/argoproj/argo-cd/v3@v3.6.1';
const K8S_API = 'v0.37.0';
const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', '..', 'src', 'sync', 'known-types.json');

const go = (args, cwd) =>
  execFileSync('go', args, { cwd, encoding: 'utf8', env: { ...process.env, GOFLAGS: '-mod=mod' } });
const dir = mkdtempSync(join(tmpdir(), 'known-types-'));
try {
  // `go mod download` fetches the module, then may complain that its go.mod needs a newer Go: the
  // files are in the module cache either way.
  try {
    go(['mod', 'download', ARGOCD], dir);
  } catch {
    /* read below, or fail there */
  }
  const cache = go(['env', 'GOMODCACHE'], dir).trim();
  const listed = readFileSync(
    join(cache, 'github.com/argoproj/argo-cd/v3@v3.6.1/util/argo/normalizers/corev1_known_types.go'),
    'utf8',
  );
  const names = [...listed.matchAll(/knownTypes\["core\/v1\/(\w+)"\]/g)].map((m) => m[1]).sort();
  if (names.length < 100) throw new Error(`only ${names.length} type names read from Argo CD`);
  writeFileSync(join(dir, 'go.mod'), `module knowntypes\n\ngo 1.24\n\nrequire k8s.io/api ${K8S_API}\n`);
  const main = readFileSync(join(here, 'main.go.txt'), 'utf8').replace(
    '// TYPES',
    names.map((n) => `\t"${n}": reflect.TypeOf(corev1.${n}{}),`).join('\n'),
  );
  writeFileSync(join(dir, 'main.go'), main);
  go(['mod', 'tidy'], dir);
  const json = go(['run', '.'], dir);
  const parsed = JSON.parse(json);
  writeFileSync(out, JSON.stringify({ source: `k8s.io/api ${K8S_API}, names from Argo CD v3.6.1`, ...parsed }) + '\n');
  console.log(`${out}: ${Object.keys(parsed.roots).length} names, ${Object.keys(parsed.structs).length} structs`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
