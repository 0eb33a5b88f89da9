// Argo CD's bundled health checks of the pinned release (scripts/health-scripts downloads them once)
// and the cases of their own test suite: every <group>/<Kind>/health_test.yaml of the folder.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

export const healthScriptsScript = path.resolve(import.meta.dirname, '../../scripts/health-scripts');

/** The folder of Argo CD's resource_customizations/ (the env var, else the script); throws saying how to get it. */
export function healthScriptsDir(env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync('bash', [healthScriptsScript], { encoding: 'utf8', timeout: 10 * 60_000, env });
  const dir = (r.stdout ?? '').trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || dir === '') {
    throw new Error(
      `these tests need Argo CD's bundled health checks and scripts/health-scripts could not provide them (exit ${r.status}):\n${r.stderr ?? r.error?.message}\n` +
        "Run scripts/health-scripts with network access to the Go module proxy, or set IMPERSYNC_HEALTH_SCRIPTS_DIR to a copy of Argo CD's resource_customizations/ folder.",
    );
  }
  return dir;
}

export interface SuiteCase {
  /** `group/Kind` (or a `_` glob folder), as the folder names it. */
  kind: string;
  /** The case's input, an absolute path. */
  input: string;
  /** The input as health_test.yaml names it. */
  inputPath: string;
  status: string;
  message: string;
}

/** The folders that hold a health.lua, as `group/Kind` (or `Kind` for the core group). */
export function scriptKinds(dir: string): string[] {
  const out: string[] = [];
  for (const top of readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory())) {
    if (existsSync(path.join(dir, top.name, 'health.lua'))) out.push(top.name);
    for (const kind of readdirSync(path.join(dir, top.name), { withFileTypes: true }))
      if (kind.isDirectory() && existsSync(path.join(dir, top.name, kind.name, 'health.lua')))
        out.push(`${top.name}/${kind.name}`);
  }
  return out.sort();
}

/** encoding/json's field match, as Argo CD's test reads its tables: names match case-insensitively. */
function field(o: unknown, name: string): unknown {
  if (o === null || typeof o !== 'object') return undefined;
  const entry = Object.entries(o).find(([k]) => k.toLowerCase() === name.toLowerCase());
  return entry?.[1];
}

/** Every case of every health_test.yaml, in folder order. */
export function suiteCases(dir: string): SuiteCase[] {
  const out: SuiteCase[] = [];
  for (const kind of scriptKinds(dir)) {
    const table = path.join(dir, kind, 'health_test.yaml');
    if (!existsSync(table)) continue;
    const tests = field(parse(readFileSync(table, 'utf8')), 'tests');
    for (const t of Array.isArray(tests) ? tests : []) {
      const inputPath = String(field(t, 'inputPath') ?? '');
      const health = field(t, 'healthStatus');
      out.push({
        kind,
        input: path.join(dir, kind, inputPath),
        inputPath,
        status: String(field(health, 'status') ?? ''),
        message: String(field(health, 'message') ?? ''),
      });
    }
  }
  return out;
}

/**
 * An argocd-cm that supplies every script of the folder as Argo CD's keys: `resource.customizations.
 * health.<group>_<Kind>` (a `_` glob folder as `*`), with the standard libraries open, as Argo CD
 * runs its bundled ones.
 */
export function argocdCmOf(dir: string): string {
  const lines = ['apiVersion: v1', 'kind: ConfigMap', 'metadata: {name: argocd-cm, namespace: argocd}', 'data:'];
  for (const kind of scriptKinds(dir)) {
    const [group, name] = kind.includes('/') ? kind.split('/') : ['', kind];
    const key = [group, name]
      .filter((p) => p !== '')
      .map((p) => (p as string).replaceAll('_', '*'))
      .join('_');
    const script = readFileSync(path.join(dir, kind, 'health.lua'), 'utf8');
    lines.push(`  resource.customizations.health.${key}: ${JSON.stringify(script)}`);
    lines.push(`  resource.customizations.useOpenLibs.${key}: "true"`);
  }
  return lines.join('\n') + '\n';
}
