// Runs git, kustomize and helm: argument arrays (never a shell), a time limit that kills the whole
// process group (git forks helpers such as git-remote-http), a cap on what is read from stdout, and
// the operating system's limits on memory and written file size (limits.ts), so a runaway render
// cannot take the renderer's memory or disk. stderr is scrubbed before it is returned (scrub.ts).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { SourceError } from './errors.ts';
import type { Scrub } from './scrub.ts';
import { formatBytes, limitFailure, limitedCommand, resolveCommand, type ToolLimits } from './limits.ts';

export { formatBytes } from './limits.ts';

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** Bytes of stdout kept; more is an error (stderr keeps only its last 64 KiB). */
  maxStdoutBytes?: number;
  stdin?: string | Buffer;
  /** How to name the command in errors, e.g. "git fetch" or "helm template". */
  label: string;
  /** Sentence for the ToolMissing error, e.g. "run scripts/tool-binaries or put helm on PATH". */
  howToGet: string;
  /** Applied to stderr and to every message made here, before anyone sees them (scrub.ts). */
  scrub: Scrub;
  /** Address space and file size limits of the process and all it starts. */
  limits: ToolLimits;
  /** Stops the command (its whole process group); rejects with the signal's reason when it is a SourceError. */
  signal?: AbortSignal | undefined;
}

export interface RunResult {
  code: number;
  stdout: Buffer;
  /** Already scrubbed: fit to put in a message. */
  stderr: string;
}

const STDERR_KEEP = 64 * 1024;
const DEFAULT_MAX_STDOUT = 64 * 1024 * 1024;

/** Runs `command args`, resolving with its exit code; rejects only when it cannot run or must be stopped. */
export function run(command: string, args: readonly string[], opts: RunOptions): Promise<RunResult> {
  const maxStdout = opts.maxStdoutBytes ?? DEFAULT_MAX_STDOUT;
  const env = opts.env ?? process.env;
  // prlimit would report a missing tool as its own failure: look first, and say how to get it.
  if (resolveCommand(command, env.PATH) === undefined) {
    return Promise.reject(new SourceError('ToolMissing', `${command} not found: ${opts.howToGet}`));
  }
  let limited: [string, string[]];
  try {
    limited = limitedCommand(command, args, opts.limits);
  } catch (err) {
    return Promise.reject(err as Error);
  }
  return new Promise((resolve, reject) => {
    const child = spawn(limited[0], limited[1], {
      cwd: opts.cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true, // own process group, so a timeout can kill git's helpers too
    });
    const chunks: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    let failure: SourceError | undefined;
    let settled = false;

    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      failure = new SourceError('Timeout', `${opts.label} timed out after ${opts.timeoutMs / 1000}s`);
      killGroup();
    }, opts.timeoutMs);
    const onAbort = (): void => {
      const reason: unknown = opts.signal?.reason;
      failure ??= reason instanceof SourceError ? reason : new SourceError('Timeout', `${opts.label} was stopped`);
      killGroup();
    };
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxStdout) {
        if (!failure) {
          failure = new SourceError(
            'TooLarge',
            `${opts.label} produced more than ${formatBytes(maxStdout)} of output; refusing to read more`,
          );
          killGroup();
        }
        return;
      }
      chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      if (stderr.length > STDERR_KEEP) stderr = stderr.slice(-STDERR_KEEP);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (err.code === 'ENOENT' && opts.cwd !== undefined && !existsSync(opts.cwd)) {
        reject(
          new SourceError(
            'Unexpected',
            opts.scrub(`${opts.label} could not be started: its working directory ${opts.cwd} does not exist`),
            { cause: err },
          ),
        );
      } else if (err.code === 'ENOENT') {
        reject(new SourceError('ToolMissing', `${command} not found: ${opts.howToGet}`, { cause: err }));
      } else {
        reject(
          new SourceError('ToolFailed', opts.scrub(`${opts.label} could not be started: ${err.message}`), {
            cause: err,
          }),
        );
      }
    });
    child.on('close', (code, signal) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (failure) return reject(failure);
      const overLimit = limitFailure(opts.label, opts.limits, { code, signal, stderr });
      if (overLimit) return reject(overLimit);
      if (code === null) {
        return reject(new SourceError('ToolFailed', `${opts.label} was killed by ${signal ?? 'a signal'}`));
      }
      resolve({ code, stdout: Buffer.concat(chunks), stderr: opts.scrub(stderr) });
    });
    // A child that exits before reading its stdin makes the write fail with EPIPE: its exit code says why.
    child.stdin.on('error', () => {});
    child.stdin.end(opts.stdin ?? '');
  });
}

/** The last few meaningful lines of a tool's stderr, for an error message. */
export function tail(stderr: string, lines = 6): string {
  const kept = stderr
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '');
  return kept.slice(-lines).join('\n');
}
