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

/** What every reporting command does first: parse flags, answer --help, check -o. */
export type CommandStart =
  { done: true; code: number } | { done: false; values: Flags; positionals: string[]; format: 'text' | 'json' };

export function startCommand(
  name: string,
  argv: string[],
  options: Options,
  usage: string,
  io: { stdout: (text: string) => void; stderr: (text: string) => void },
  allowPositionals = false,
): CommandStart {
  const flags = parseFlags(argv, options, allowPositionals);
  if (!flags.ok) {
    io.stderr(`impersync ${name}: ${flags.error}\n${usage}`);
    return { done: true, code: 2 };
  }
  if (flags.values['help'] === true) {
    io.stdout(usage);
    return { done: true, code: 0 };
  }
  const format = outputFormat(flags.values);
  if (!format.ok) {
    io.stderr(`impersync ${name}: ${format.error}\n`);
    return { done: true, code: 2 };
  }
  return { done: false, values: flags.values, positionals: flags.positionals, format: format.format };
}
