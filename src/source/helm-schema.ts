// A chart's values.schema.json is tenant content that helm acts on: its JSON Schema library loads
// what a `$ref` (or `$dynamicRef`, `$recursiveRef`) or a `$schema` names, from `file://` URLs and
// paths relative to `file:///values.schema.json` (that is, anywhere on the renderer's disk: another
// tenant's checkout through /proc/<pid>/cwd, the renderer's token) and from http(s) URLs (cluster
// services, cloud metadata), and tells in its errors what it found there. So before helm runs,
// every schema of the chart and of its subcharts (folders under charts/, and charts/*.tgz archives,
// nested ones too) may refer only inside itself (`#...`), and name only a JSON Schema draft that
// helm knows without loading it.
import { readFile, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { tarRecords } from './tar.ts';

const gunzipAsync = promisify(gunzip);

export interface SchemaReference {
  /** The schema file, relative to the chart folder (`charts/sub-0.1.0.tgz: sub/values.schema.json`). */
  file: string;
  /** `$ref`, `$dynamicRef`, `$recursiveRef` or `$schema`; or `archive` for a subchart archive that cannot be read. */
  keyword: string;
  value: string;
}

const REFERENCES = new Set(['$ref', '$dynamicRef', '$recursiveRef']);
/** The drafts helm's validator has built in (nothing is loaded for them), with or without `#`. */
const DRAFTS = new Set(
  ['draft/2020-12/schema', 'draft/2019-09/schema', 'draft-07/schema', 'draft-06/schema', 'draft-04/schema', 'schema']
    .flatMap((d) => ['http', 'https'].map((scheme) => `${scheme}://json-schema.org/${d}`))
    .flatMap((u) => [u, `${u}#`]),
);
/** Helm refuses a chart archive larger than this once decompressed; so does this check (all archives together). */
const MAX_ARCHIVE_BYTES = 100 * 1024 * 1024;
const MAX_ARCHIVE_DEPTH = 8;

/** The first schema reference of the chart in `chartDir` that would make helm load something, or undefined. */
export async function findSchemaReference(chartDir: string): Promise<SchemaReference | undefined> {
  const budget = { bytes: MAX_ARCHIVE_BYTES };
  return inFolder(chartDir, '', new Set(), budget);
}

/** The chart folder's own schema, then its subcharts, as helm's loader finds them (links followed). */
async function inFolder(
  dir: string,
  shown: string,
  seen: Set<string>,
  budget: { bytes: number },
): Promise<SchemaReference | undefined> {
  const real = await realpath(dir);
  if (seen.has(real)) return undefined;
  seen.add(real);
  const schemaFile = path.join(dir, 'values.schema.json');
  if ((await stat(schemaFile).catch(() => undefined))?.isFile()) {
    const bad = inSchema(await readFile(schemaFile, 'utf8'), `${shown}values.schema.json`);
    if (bad) return bad;
  }
  const charts = path.join(dir, 'charts');
  const entries = await readdir(charts).catch(() => [] as string[]);
  for (const name of entries.sort()) {
    if (name.startsWith('_') || name.startsWith('.')) continue; // helm skips these
    const full = path.join(charts, name);
    const info = await stat(full).catch(() => undefined);
    const where = `${shown}charts/${name}`;
    const bad = info?.isDirectory()
      ? await inFolder(full, `${where}/`, seen, budget)
      : info?.isFile() && name.endsWith('.tgz')
        ? await inArchive(await readFile(full), where, budget, 1)
        : undefined;
    if (bad) return bad;
  }
  return undefined;
}

/**
 * A chart archive: every values.schema.json in it and every archive under a charts/ folder in it,
 * wherever helm would take them from (more than helm reads is checked, never less).
 */
async function inArchive(
  gz: Buffer,
  shown: string,
  budget: { bytes: number },
  depth: number,
): Promise<SchemaReference | undefined> {
  const unreadable = (why: string): SchemaReference => ({ file: shown, keyword: 'archive', value: why });
  if (depth > MAX_ARCHIVE_DEPTH) return unreadable(`subcharts nested more than ${MAX_ARCHIVE_DEPTH} archives deep`);
  let tar: Buffer;
  try {
    tar = await gunzipAsync(gz, { maxOutputLength: Math.max(1, budget.bytes) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      return unreadable(`more than ${MAX_ARCHIVE_BYTES / (1024 * 1024)} MiB once decompressed`);
    }
    // Go's gzip reader stops where the archive does, and reads what Node's refuses for what follows it.
    return unreadable('not a gzip archive the renderer can read');
  }
  budget.bytes -= tar.length;
  const records = tarRecords(tar);
  if (typeof records === 'string') return unreadable('not a tar archive the renderer can read');
  for (const { name, type, data } of records) {
    // Helm loads every member that is not a folder, whatever its type, by its name cleaned (with
    // either separator, `a/values.schema.json/.` is `a/values.schema.json`).
    if (type === '5') continue;
    const segments = path.posix.normalize(name.replaceAll('\\', '/')).replace(/\/+$/, '').split('/');
    const base = segments[segments.length - 1];
    if (base === 'values.schema.json') {
      const bad = inSchema(data.toString('utf8'), `${shown}: ${name}`);
      if (bad) return bad;
    } else if (base?.endsWith('.tgz') && segments[segments.length - 2] === 'charts') {
      const bad = await inArchive(data, `${shown}: ${name}`, budget, depth + 1);
      if (bad) return bad;
    }
  }
  return undefined;
}

/** The first reference in one schema's text that is not inside it, or undefined. */
export function inSchema(text: string, file: string): SchemaReference | undefined {
  let schema: unknown;
  try {
    // Helm drops a UTF-8 byte order mark before it parses the schema; JSON.parse would refuse it.
    schema = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    return undefined; // helm refuses a schema that is not JSON itself, before loading anything
  }
  // Iteratively: a schema may be nested deeper than the stack.
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      stack.push(...v);
      continue;
    }
    for (const [key, value] of Object.entries(v)) {
      if (typeof value === 'string') {
        if (REFERENCES.has(key) && !value.startsWith('#')) return { file, keyword: key, value };
        if (key === '$schema' && !DRAFTS.has(value)) return { file, keyword: key, value };
      } else stack.push(value);
    }
  }
  return undefined;
}

/** The refusal, for a message that names the chart first (`helm chart 'x': ...`). */
export function schemaRefusal(bad: SchemaReference): string {
  if (bad.keyword === 'archive') return `the subchart archive ${bad.file} cannot be checked: ${bad.value}`;
  return `${bad.file}: ${bad.keyword} '${bad.value}' is refused: helm would load it from the renderer's disk or the network; a schema may refer only inside itself ('#/...') and name a JSON Schema draft as its $schema`;
}
