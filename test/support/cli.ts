// Running a command in-process (src/cli/*.ts `run(argv, io)`) with its output captured.
import { readFile } from 'node:fs/promises';
import type { CommandIO } from '../../src/cli/io.ts';

/** A CommandIO that keeps what the command prints; files are read from disk, stdin is empty. */
export function captureIO(): { io: CommandIO; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    io: {
      stdout: (t) => void (out += t),
      stderr: (t) => void (err += t),
      readFile: (p) => readFile(p, 'utf8'),
      readStdin: async () => '',
    },
    out: () => out,
    err: () => err,
  };
}
