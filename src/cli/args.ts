// Flag parsing for the subcommands, on node:util parseArgs; a bad flag is an error value whose
// message says what was wrong and shows the usage line.
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;
export type Flags = Record<string, string | boolean | string[] | boolean[] | undefined>;

export type ParsedFlags = { ok: true; values: Flags; positionals: string[] } | { ok: false; error: string };

export function parseFlags(argv: string[], options: Options, allowPositionals = false): ParsedFlags {
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals, strict: true });
    return { ok: true, values: values as Flags, positionals };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

/** A string flag's value, or `fallback`. */
export function stringFlag(values: Flags, name: string, fallback: string): string {
  const v = values[name];
  return typeof v === 'string' ? v : fallback;
}

/** A repeatable string flag's values (empty when absent). */
export function listFlag(values: Flags, name: string): string[] {
  const v = values[name];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return typeof v === 'string' ? [v] : [];
}

/** `-o` must be `text` or `json`. */
export function outputFormat(values: Flags): { ok: true; format: 'text' | 'json' } | { ok: false; error: string } {
  const v = stringFlag(values, 'output', 'text');
  if (v === 'text' || v === 'json') return { ok: true, format: v };
  return { ok: false, error: `-o/--output must be 'text' or 'json', not '${v}'` };
}
