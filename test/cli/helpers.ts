// Runs a subcommand in-process with captured output, files from a temporary folder or the repo.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CommandIO } from '../../src/cli/io.ts';

export interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCommand(
  run: (argv: string[], io: CommandIO) => Promise<number>,
  argv: string[],
  stdin = '',
): Promise<Captured> {
  let stdout = '';
  let stderr = '';
  const io: CommandIO = {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    readFile: (p) => readFile(p, 'utf8'),
    readStdin: async () => stdin,
  };
  const code = await run(argv, io);
  return { code, stdout, stderr };
}

/** Writes `files` (name → text) into a new temporary folder and returns their paths by name. */
export function writeFiles(files: Record<string, string>): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'impersync-cli-'));
  const out: Record<string, string> = {};
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name);
    writeFileSync(path, text);
    out[name] = path;
  }
  return out;
}

export const repoFile = (rel: string) => new URL(`../../${rel}`, import.meta.url).pathname;

export const ENABLED_CM = `apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd}
data:
  application.sync.impersonation.enabled: "true"
`;

export function appYaml(name: string, destination: string, project = 'my-project', namespace = 'argocd'): string {
  return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  project: ${project}
  source: {repoURL: https://example.com/repo.git, path: app}
  destination: ${destination}
`;
}

export function projectYaml(name: string, entries: string, extra = ''): string {
  return `apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: ${name}, namespace: argocd${extra}}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  destinationServiceAccounts: ${entries}
`;
}
