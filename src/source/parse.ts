// Manifests from text: YAML 1.1 as kubectl reads it (`0644` is 420, `yes` is true, merge keys; a
// quoted scalar read to its closing quote as go-yaml reads it, quoted.ts), multi-document, JSON,
// `List` kinds expanded, empty documents skipped. Every object keeps where it came from; a syntax
// error names the file and line; a repeated key is refused (DUPLICATE_KEY says why); a document that
// is not a Kubernetes object is an error naming the file and the document. Every document is held
// to the document limits (expand.ts) before it is built: its size and node count, aliases counted
// at every use, so a tenant's file costs the renderer time and memory in proportion to what it
// really holds.
import { LineCounter, parseAllDocuments, type Document, type Tags } from 'yaml';
import type { KubeObject, SourceLocation } from '../api/manifest.ts';
import { SourceError, formatBytes } from './errors.ts';
import { isCutShortQuote, withQuotedScalarsReindented } from './quoted.ts';
import { checkAndExpand, DEFAULT_DOCUMENT_LIMITS, type DocumentLimits, type ExpansionProblem } from './expand.ts';

export interface ParsedObject {
  object: KubeObject;
  location: SourceLocation;
}

// kubectl's YAML library (go-yaml v2 via sigs.k8s.io/yaml) has YAML 1.1's booleans, octal ints and
// merge keys, but no sexagesimal numbers (`1:30` stays a string) and it hands timestamps back as the
// strings they were written as. Explicit !!binary, !!set, !!omap and !!pairs would become JS values
// that are not JSON, so they are read as plain strings, maps and lists.
const DROPPED_TAGS = new Set([
  'tag:yaml.org,2002:timestamp',
  'tag:yaml.org,2002:binary',
  'tag:yaml.org,2002:set',
  'tag:yaml.org,2002:omap',
  'tag:yaml.org,2002:pairs',
]);
const kubectlTags = (tags: Tags): Tags =>
  tags.filter((t) => typeof t === 'string' || !(DROPPED_TAGS.has(t.tag) || t.format === 'TIME'));

/**
 * Stricter than Argo CD on purpose: its YAML library (go-yaml v2, through sigs.k8s.io/yaml) keeps
 * the last of repeated keys without a word, so a reviewer reading the first one would not see what
 * is applied.
 */
export const DUPLICATE_KEY =
  'Map keys must be unique (impersync refuses a repeated key: Argo CD would silently use its last value, not the one a reader sees first)';

export interface ParseOptions {
  /**
   * Take each document's file from a leading `# Source: <file>` comment, as `helm template` writes
   * them, so that objects and errors point at the chart's template rather than at helm's output.
   */
  sourceComments?: boolean;
  /** The size and node count a document may reach (default DEFAULT_DOCUMENT_LIMITS). */
  limits?: DocumentLimits | undefined;
  /**
   * Take any object with an apiVersion and a kind, without metadata or a name (`impersync health`:
   * Argo CD's checks assess such objects too); manifests to apply always need them.
   */
  anyObject?: boolean;
}

/** Parses a file's text by its name: `.json` as JSON, anything else as YAML 1.1 (which reads JSON too). */
export function parseManifests(text: string, file: string, opts: ParseOptions = {}): ParsedObject[] {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const limits = opts.limits ?? DEFAULT_DOCUMENT_LIMITS;
  return file.toLowerCase().endsWith('.json')
    ? parseJSON(body, file, limits, opts.anyObject === true)
    : parseYAML(body, file, opts, limits);
}

/** The documents of a YAML 1.1 text, as kubectl's library reads them, and the line counter of their errors. */
function readDocuments(text: string): { docs: Document.Parsed[]; lines: LineCounter } {
  const parse = (source: string) => {
    const lines = new LineCounter();
    // Duplicate keys are found by checkAndExpand, in one pass: the parser's own check is quadratic.
    const docs = parseAllDocuments(source, {
      version: '1.1',
      customTags: kubectlTags,
      prettyErrors: true,
      uniqueKeys: false,
      lineCounter: lines,
    });
    // `docs` is empty for a file of only comments (an EmptyStream), which is fine: no documents.
    return { docs: Array.from(docs), lines };
  };
  const first = parse(text);
  // A quoted scalar go-yaml reads across less indented lines: read again as go-yaml reads it.
  if (!first.docs.some((d) => d.errors.some(isCutShortQuote))) return first;
  const reindented = withQuotedScalarsReindented(text);
  return reindented === text ? first : parse(reindented);
}

/**
 * One document's plain value, held to the document limits: its first syntax error, a duplicate
 * key, or too many bytes or nodes (aliases counted at every use) is an error naming `file`
 * (`where` for the limits: the file and the document's number).
 */
function documentValue(
  doc: Document.Parsed,
  lines: LineCounter,
  file: string,
  where: string,
  limits: DocumentLimits,
): unknown {
  const err = doc.errors[0];
  if (err) {
    const line = err.linePos?.[0].line;
    const reason = err.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '') ?? err.code;
    throw new SourceError('InvalidManifest', `${file}${line === undefined ? '' : `:${line}`}: ${reason}`, {
      cause: err,
    });
  }
  const size = doc.range[2] - doc.range[0];
  if (size > limits.maxDocumentBytes) throw overLimit(where, { kind: 'bytes', bytes: size }, limits);
  const problem = checkAndExpand(doc, limits, lines);
  if (problem?.kind === 'duplicate')
    throw new SourceError(
      'InvalidManifest',
      `${file}${problem.line === undefined ? '' : `:${problem.line}`}: ${DUPLICATE_KEY}`,
    );
  if (problem) throw overLimit(where, problem, limits);
  try {
    // No alias is left to resolve (checkAndExpand replaced each by its node), hence no count.
    return doc.toJS({ maxAliasCount: -1 });
  } catch (e) {
    throw new SourceError('InvalidManifest', `${where}: ${(e as Error).message}`, { cause: e });
  }
}

function parseYAML(text: string, file: string, opts: ParseOptions, limits: DocumentLimits): ParsedObject[] {
  const { docs, lines } = readDocuments(text);
  const out: ParsedObject[] = [];
  const perTemplate = new Map<string, number>();
  for (const [i, doc] of docs.entries()) {
    const commented = opts.sourceComments ? sourceComment(doc.commentBefore ?? doc.contents?.commentBefore) : undefined;
    const value = documentValue(doc, lines, file, `${commented ?? file}: document ${i + 1}`, limits);
    let location: SourceLocation = { file, document: i + 1 };
    if (commented) {
      const n = (perTemplate.get(commented) ?? 0) + 1;
      perTemplate.set(commented, n);
      location = { file: commented, document: n };
    }
    collect(value, location, out, opts.anyObject === true);
  }
  return out;
}

/**
 * The first document of a YAML 1.1 file as a plain value (null when it has none), read as kubectl's
 * library reads it and held to the same document limits as manifests; the documents after the
 * first are ignored, as sigs.k8s.io/yaml's Unmarshal ignores them. For files that are not
 * manifests (a source parameter file); errors name `file` and are InvalidManifest or TooLarge.
 */
export function parseFirstYAMLDocument(text: string, file: string, limits: DocumentLimits): unknown {
  const { docs, lines } = readDocuments(text.startsWith('\uFEFF') ? text.slice(1) : text);
  const doc = docs[0];
  return doc ? (documentValue(doc, lines, file, `${file}: document 1`, limits) ?? null) : null;
}

function parseJSON(text: string, file: string, limits: DocumentLimits, anyObject: boolean): ParsedObject[] {
  // JSON has no aliases: its size is its text (a List's items are its documents' objects).
  if (text.length > limits.maxDocumentBytes)
    throw overLimit(`${file}: document 1`, { kind: 'bytes', bytes: text.length }, limits);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const message = (e as Error).message;
    const pos = /at position (\d+)/.exec(message);
    const line = pos?.[1] === undefined ? undefined : lineAt(text, Number(pos[1]));
    throw new SourceError(
      'InvalidManifest',
      `${file}${line === undefined ? '' : `:${line}`}: ${message.replace(/\s*\(line \d+ column \d+\)$/, '')}`,
      { cause: e },
    );
  }
  const out: ParsedObject[] = [];
  if (Array.isArray(value)) {
    value.forEach((v, i) => collect(v, { file, document: i + 1 }, out, anyObject));
  } else {
    collect(value, { file, document: 1 }, out, anyObject);
  }
  return out;
}

/**
 * JSON values, one a line (impersync-jsonnet's output, source/jsonnet.ts): value i is document
 * i + 1 of `file`, null is none, a List is expanded; each is held to the document limits.
 */
export function parseJSONValues(lines: readonly string[], file: string, limits: DocumentLimits): ParsedObject[] {
  const out: ParsedObject[] = [];
  lines.forEach((text, i) => {
    const where = `${file}: document ${i + 1}`;
    if (text.length > limits.maxDocumentBytes) throw overLimit(where, { kind: 'bytes', bytes: text.length }, limits);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new SourceError('InvalidManifest', `${where}: ${(e as Error).message}`, { cause: e });
    }
    collect(value, { file, document: i + 1 }, out);
  });
  return out;
}

/** Adds the object(s) one document holds: none when empty, the items of a List, or the object itself. */
function collect(value: unknown, location: SourceLocation, out: ParsedObject[], anyObject = false): void {
  if (value === null || value === undefined) return;
  if (isRecord(value) && typeof value.kind === 'string' && value.kind.endsWith('List') && Array.isArray(value.items)) {
    value.items.forEach((item: unknown, i: number) => {
      out.push({ object: asKubeObject(item, location, `items[${i}] `, anyObject), location });
    });
    return;
  }
  out.push({ object: asKubeObject(value, location, '', anyObject), location });
}

function asKubeObject(value: unknown, loc: SourceLocation, where: string, anyObject: boolean): KubeObject {
  const fail = (why: string): never => {
    throw new SourceError(
      'InvalidManifest',
      `${loc.file}: document ${loc.document} ${where}is not a Kubernetes object: ${why}`,
    );
  };
  if (!isRecord(value))
    return fail(
      Array.isArray(value) ? 'it is a list' : `it is a ${typeof value} (${JSON.stringify(value).slice(0, 40)})`,
    );
  if (typeof value.apiVersion !== 'string' || value.apiVersion === '') return fail('apiVersion is missing');
  if (typeof value.kind !== 'string' || value.kind === '') return fail('kind is missing');
  if (anyObject) return value as KubeObject;
  const meta = value.metadata;
  if (!isRecord(meta)) return fail(`metadata is missing (${value.kind})`);
  if (typeof meta.name !== 'string' || meta.name === '') {
    // Hooks are often written with generateName only (Argo CD allows it): name stays '' for sync/ to see.
    if (typeof meta.generateName === 'string' && meta.generateName !== '') {
      meta.name = '';
    } else {
      return fail(`metadata.name is missing (${value.kind})`);
    }
  }
  if (meta.namespace !== undefined && typeof meta.namespace !== 'string')
    return fail(`metadata.namespace is not a string (${value.kind} ${String(meta.name)})`);
  return value as KubeObject;
}

/** A document over a limit: TooLarge, naming the file, the document and the limit. */
function overLimit(
  where: string,
  problem: Exclude<ExpansionProblem, { kind: 'duplicate' }>,
  limits: DocumentLimits,
): SourceError {
  switch (problem.kind) {
    case 'recursive':
      return new SourceError('InvalidManifest', `${where}: alias *${problem.anchor} refers to the node it is in`);
    case 'unresolved':
      return new SourceError('InvalidManifest', `${where}: alias *${problem.anchor} names no anchor before it`);
    case 'nodes':
      return new SourceError(
        'TooLarge',
        `${where} expands to more than ${limits.maxDocumentNodes} nodes (aliases counted at every use), the renderer's limit for one document`,
      );
    case 'bytes':
      return new SourceError(
        'TooLarge',
        `${where} is larger than ${formatBytes(limits.maxDocumentBytes)} (aliases counted at every use), the renderer's limit for one document`,
      );
  }
}

function sourceComment(comment: string | null | undefined): string | undefined {
  const m = comment ? /^\s*Source: (\S.*)$/m.exec(comment) : null;
  return m?.[1]?.trim();
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function lineAt(text: string, pos: number): number {
  let line = 1;
  for (let i = 0; i < pos && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}
