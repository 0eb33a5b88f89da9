// Where the kustomize, helm and impersync-jsonnet binaries are: a path configured for the tool, else a tools folder
// (what scripts/tool-binaries prints), else the PATH. Not finding one is an error that says how to
// get it, because skipping a source type would silently deploy nothing.
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { SourceError } from './errors.ts';

/** impersync-jsonnet: this repository's tools/jsonnet, go-jsonnet as Argo CD runs it (source/jsonnet.ts). */
export type ToolName = 'helm' | 'kustomize' | 'impersync-jsonnet';

export interface ToolLocations {
  /** Exact paths, e.g. { helm: '/opt/helm/bin/helm' }; git and prlimit for the ones helm and kustomize start. */
  paths?: Partial<Record<ToolName | 'git' | 'prlimit', string | undefined>>;
  /** A folder holding both, such as the one scripts/tool-binaries prints. */
  dir?: string | undefined;
  /** Searched last (default: this process's PATH). */
  searchPath?: string | undefined;
}

export function howToGet(tool: ToolName): string {
  return `run scripts/tool-binaries (it builds ${tool} with Go and prints its folder; pass that folder as the tools dir) or put ${tool} on PATH`;
}

/** The binary to run for `tool`; throws a ToolMissing SourceError when there is none. */
export function findTool(tool: ToolName, where: ToolLocations): string {
  const configured = where.paths?.[tool];
  if (configured) {
    if (isExecutable(configured)) return configured;
    throw new SourceError('ToolMissing', `${tool} not found at '${configured}' (configured path): ${howToGet(tool)}`);
  }
  if (where.dir) {
    const inDir = path.join(where.dir, tool);
    if (isExecutable(inDir)) return inDir;
  }
  for (const dir of (where.searchPath ?? process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, tool);
    if (isExecutable(candidate)) return candidate;
  }
  const looked = where.dir ? ` in '${where.dir}' or on PATH` : ' on PATH';
  throw new SourceError('ToolMissing', `${tool} not found${looked}: ${howToGet(tool)}`);
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
