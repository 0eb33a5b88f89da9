// Reading the documents given with -f: files or `-` (stdin), each any mix of YAML 1.1 and JSON
// documents (source/parse.ts reads them as kubectl does). Every object keeps its file and document
// number so that an error can name them.
import type { ParseOptions } from '../source/parse.ts';
import { parseManifests } from '../source/parse.ts';
import type { CommandIO } from './io.ts';

export interface Where {
  /** The file name, `<stdin>`, or `cluster` for objects read live. */
  file: string;
  /** 1-based document number in the file (0 for live objects). */
  document: number;
}

export interface RawDocument {
  object: Record<string, unknown>;
  where: Where;
}

export type Loaded<T> = { ok: true; value: T } | { ok: false; error: string };

export function describeWhere(where: Where): string {
  return where.document > 0 ? `${where.file}: document ${where.document}` : where.file;
}

/** Reads and parses every file in order; the first unreadable or unparsable one is the error. */
export async function readDocuments(
  files: readonly string[],
  io: Pick<CommandIO, 'readFile' | 'readStdin'>,
  opts: Pick<ParseOptions, 'anyObject'> = {},
): Promise<Loaded<RawDocument[]>> {
  const out: RawDocument[] = [];
  let stdinUsed = false;
  for (const file of files) {
    let text: string;
    const name = file === '-' ? '<stdin>' : file;
    try {
      if (file === '-') {
        if (stdinUsed) return { ok: false, error: '-f - (stdin) can be given only once' };
        stdinUsed = true;
        text = await io.readStdin();
      } else {
        text = await io.readFile(file);
      }
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const reason =
        e.code === 'ENOENT'
          ? 'no such file'
          : e.code === 'EISDIR'
            ? 'is a directory (give the files in it)'
            : e.message;
      return { ok: false, error: `${name}: cannot read: ${reason}` };
    }
    try {
      for (const parsed of parseManifests(text, name, opts)) {
        out.push({
          object: parsed.object as unknown as Record<string, unknown>,
          where: { file: name, document: parsed.location.document },
        });
      }
    } catch (err) {
      // parseManifests' messages already start with the file name (and line or document).
      return { ok: false, error: err instanceof Error ? err.message : `${name}: ${String(err)}` };
    }
  }
  return { ok: true, value: out };
}
