// Shared pieces of the schemas: object metadata and the error a bad document turns into.
// Every object schema is "loose": fields impersync does not use are kept, never rejected, so that
// Argo CD's YAML is accepted unchanged.
import { z } from 'zod';

export const ObjectMetaSchema = z.looseObject({
  name: z.string().min(1),
  namespace: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().optional(),
  deletionTimestamp: z.string().optional(),
  creationTimestamp: z.string().optional(),
});
export type ObjectMeta = z.infer<typeof ObjectMetaSchema>;

/** A document that does not fit its schema: names the object and the first offending field. */
export class DocumentError extends Error {
  readonly kind: string;
  readonly objectName: string;
  readonly path: string;
  readonly reason: string;
  constructor(kind: string, objectName: string, path: string, reason: string) {
    super(`${kind} ${objectName || '<unnamed>'}: ${path ? `${path}: ` : ''}${reason}`);
    this.name = 'DocumentError';
    this.kind = kind;
    this.objectName = objectName;
    this.path = path;
    this.reason = reason;
  }
}

/** `spec.destinationServiceAccounts[1].server` from zod's path array. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function valueAt(root: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let cur: unknown = root;
  for (const part of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[part];
  }
  return cur;
}

/** "ns/name" (or "name") of a raw object, as far as it can be read. */
export function rawObjectName(raw: unknown): string {
  const meta = raw !== null && typeof raw === 'object' ? (raw as { metadata?: unknown }).metadata : undefined;
  if (meta === null || typeof meta !== 'object') return '';
  const { name, namespace } = meta as { name?: unknown; namespace?: unknown };
  const n = typeof name === 'string' ? name : '';
  return typeof namespace === 'string' && namespace !== '' ? `${namespace}/${n}` : n;
}

/**
 * Parses `raw` with `schema`; a failure becomes a DocumentError naming kind, object and field.
 * Only the first issue is reported (zod reports in document order), which is the one to fix first.
 */
export function parseObject<S extends z.ZodType>(kind: string, schema: S, raw: unknown): z.infer<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue ? formatPath(issue.path) : '';
  let reason = issue?.message ?? 'invalid document';
  if (issue && issue.code === 'invalid_type') {
    const actual = valueAt(raw, issue.path);
    reason =
      actual === undefined
        ? `required field is missing (expected ${issue.expected})`
        : `expected ${issue.expected}, got ${describe(actual)}`;
  } else if (issue && issue.code === 'too_small' && issue.origin === 'string') {
    reason = 'must not be empty';
  }
  throw new DocumentError(kind, rawObjectName(raw), path, reason);
}
