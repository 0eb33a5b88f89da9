// Waiting for a started process to become ready, failing fast when it exits instead.
import { readFile } from 'node:fs/promises';
import type { ManagedProcess } from './processes.ts';

/**
 * Polls `check` every 100 ms until it returns a value other than undefined or false. Fails with a
 * message naming `what` when the process exits first or the time runs out.
 */
export async function waitFor<T>(
  proc: ManagedProcess,
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined | false>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    if (proc.exit) {
      const how = proc.exit.signal ? `signal ${proc.exit.signal}` : `code ${proc.exit.code}`;
      throw new Error(`${proc.name} exited (${how}) while waiting for ${what}`);
    }
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The last lines of a log file, or a note that it cannot be read. */
export async function tailOf(path: string, lines = 25): Promise<string> {
  try {
    const text = await readFile(path, 'utf8');
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  } catch (err) {
    return `(cannot read ${path}: ${(err as Error).message})`;
  }
}
