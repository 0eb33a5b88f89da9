// Limits of the operating system on every git, helm and kustomize process of the renderer: an
// address-space limit (RLIMIT_AS), so a runaway template or a hostile repository cannot take the
// renderer's memory, and a limit on the size of any one file a tool writes (RLIMIT_FSIZE), so a
// fetch or a render cannot fill its disk with one file. Node cannot set limits on a child, so each
// command runs through util-linux's `prlimit`, which sets them and then executes the command; the
// limits are inherited by everything the tool starts (git's helpers, kustomize's git).
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { SourceError } from './errors.ts';

export interface ToolLimits {
  /** Address space of each process, bytes. */
  memoryBytes: number;
  /** Largest file each process may write, bytes. */
  writeBytes: number;
  /** The prlimit binary (default: found on PATH, /usr/bin or /bin). */
  prlimit?: string | undefined;
}

export const DEFAULT_TOOL_LIMITS: ToolLimits = {
  memoryBytes: 2 * 1024 * 1024 * 1024,
  writeBytes: 256 * 1024 * 1024,
};

const PRLIMIT_HOW_TO =
  'the renderer runs git, helm and kustomize under prlimit to limit their memory and file sizes; install util-linux (for example `apt-get install util-linux`)';

let prlimit: string | undefined;

/** The prlimit binary (looked up once); a ToolMissing error saying how to get it when there is none. */
export function findPrlimit(configured?: string): string {
  if (configured !== undefined) {
    if (isExecutable(configured)) return configured;
    throw new SourceError('ToolMissing', `prlimit not found at '${configured}' (configured path): ${PRLIMIT_HOW_TO}`);
  }
  if (prlimit) return prlimit;
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/bin', '/bin', '/usr/sbin', '/sbin'];
  for (const dir of dirs) {
    if (dir === '') continue;
    const candidate = path.join(dir, 'prlimit');
    if (isExecutable(candidate)) return (prlimit = candidate);
  }
  throw new SourceError('ToolMissing', `prlimit not found: ${PRLIMIT_HOW_TO}`);
}

/** The command line that runs `command args` under `limits`. */
export function limitedCommand(command: string, args: readonly string[], limits: ToolLimits): [string, string[]] {
  return [
    findPrlimit(limits.prlimit),
    [`--as=${Math.floor(limits.memoryBytes)}`, `--fsize=${Math.floor(limits.writeBytes)}`, '--', command, ...args],
  ];
}

/**
 * Where `command` is, as prlimit (execvp) would find it on `searchPath`; undefined when it is not
 * there. Checked before starting, since prlimit would turn a missing tool into its own exit code.
 */
export function resolveCommand(command: string, searchPath: string | undefined): string | undefined {
  if (command.includes('/')) return isExecutable(command) ? command : undefined;
  for (const dir of (searchPath ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, command);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

const WRITE_LIMIT = /file size limit exceeded|file too large|died of signal 25\b/i;
const MEMORY_LIMIT = /out of memory|cannot allocate memory|failed to reserve|malloc failed|mmap failed/i;

/**
 * The error for a process stopped by one of the limits (killed by SIGXFSZ, or failing with an
 * allocation error, its own or a child's), or undefined when the failure looks like anything else.
 */
export function limitFailure(
  label: string,
  limits: ToolLimits,
  exit: { code: number | null; signal: NodeJS.Signals | null; stderr: string },
): SourceError | undefined {
  if (exit.code === 0) return undefined;
  if (exit.signal === 'SIGXFSZ' || WRITE_LIMIT.test(exit.stderr)) {
    return new SourceError(
      'TooLarge',
      `${label} exceeded the renderer's limit of ${formatBytes(limits.writeBytes)} for one file it writes`,
    );
  }
  if (MEMORY_LIMIT.test(exit.stderr)) {
    return new SourceError(
      'TooLarge',
      `${label} exceeded the renderer's memory limit of ${formatBytes(limits.memoryBytes)}`,
    );
  }
  return undefined;
}

export function formatBytes(n: number): string {
  const units: [number, string][] = [
    [1024 ** 3, 'GiB'],
    [1024 ** 2, 'MiB'],
    [1024, 'KiB'],
  ];
  for (const [size, unit] of units) {
    if (n >= size) return `${Number((n / size).toFixed(n % size === 0 ? 0 : 1))} ${unit}`;
  }
  return `${n} bytes`;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
