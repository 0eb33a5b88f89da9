// Reading kube-apiserver's JSON-lines audit log (audit.k8s.io/v1 Events at Metadata level) back as
// flat records: who made the request, as whom, what it did and what the server answered.
import { readFile } from 'node:fs/promises';

export type AuditRecord = {
  auditID: string;
  stage: string;
  /** The authenticated user (for an impersonated request: the impersonator). */
  user: string;
  groups: string[];
  /** The user the request was made as, when it carried Impersonate-User and it was allowed. */
  impersonatedUser: string | undefined;
  /** The impersonated user's extras (Impersonate-Extra-*), key → values; {} when none. */
  impersonatedExtra: Record<string, string[]>;
  verb: string;
  apiGroup: string | undefined;
  resource: string | undefined;
  subresource: string | undefined;
  namespace: string | undefined;
  name: string | undefined;
  /** HTTP status of the response. */
  code: number | undefined;
  /** The response's status message, for a refused request (why it was refused). */
  message: string | undefined;
  requestURI: string;
  /** The request asked for dry-run (dryRun=All in the query). */
  dryRun: boolean;
  fieldManager: string | undefined;
  /** 'allow' or 'forbid', from the authorizer's audit annotation. */
  decision: string | undefined;
  reason: string | undefined;
  userAgent: string | undefined;
  time: string | undefined;
};

type Json = Record<string, unknown>;

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function obj(v: unknown): Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {};
}

/** Turns one audit Event into a record; undefined for lines that are not audit Events. */
export function toAuditRecord(event: unknown): AuditRecord | undefined {
  const e = obj(event);
  if (e['kind'] !== 'Event') return undefined;
  const user = obj(e['user']);
  const ref = obj(e['objectRef']);
  const status = obj(e['responseStatus']);
  const annotations = obj(e['annotations']);
  const requestURI = str(e['requestURI']) ?? '';
  const query = new URL(requestURI, 'https://audit.invalid').searchParams;
  const groups = Array.isArray(user['groups']) ? user['groups'].filter((g): g is string => typeof g === 'string') : [];
  const impersonated = obj(e['impersonatedUser']);
  const impersonatedExtra: Record<string, string[]> = {};
  for (const [key, values] of Object.entries(obj(impersonated['extra'])))
    if (Array.isArray(values)) impersonatedExtra[key] = values.filter((v): v is string => typeof v === 'string');
  return {
    auditID: str(e['auditID']) ?? '',
    stage: str(e['stage']) ?? '',
    user: str(user['username']) ?? '',
    groups,
    impersonatedUser: str(impersonated['username']),
    impersonatedExtra,
    verb: str(e['verb']) ?? '',
    apiGroup: str(ref['apiGroup']),
    resource: str(ref['resource']),
    subresource: str(ref['subresource']),
    namespace: str(ref['namespace']),
    name: str(ref['name']),
    code: typeof status['code'] === 'number' ? status['code'] : undefined,
    message: str(status['message']),
    requestURI,
    dryRun: query.getAll('dryRun').includes('All'),
    fieldManager: query.get('fieldManager') ?? undefined,
    decision: str(annotations['authorization.k8s.io/decision']),
    reason: str(annotations['authorization.k8s.io/reason']),
    userAgent: str(e['userAgent']),
    time: str(e['requestReceivedTimestamp']),
  };
}

/** What parseAudit returns besides completed requests. */
export interface AuditReadOptions {
  /** Also the long-running requests still open (a watch): their ResponseStarted record. */
  open?: boolean;
}

/**
 * Parses audit log text. Only completed requests are returned (stage ResponseComplete, or Panic),
 * one record per request; long-running requests such as watches appear once they end (or, with
 * `open`, once they start). A last line still being written is ignored.
 */
export function parseAudit(text: string, opts: AuditReadOptions = {}): AuditRecord[] {
  const records: AuditRecord[] = [];
  const started = new Map<string, AuditRecord>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    const record = toAuditRecord(event);
    if (record && (record.stage === 'ResponseComplete' || record.stage === 'Panic')) {
      records.push(record);
      if (opts.open) started.delete(str((event as Record<string, unknown>)['auditID']) ?? '');
    } else if (record && opts.open && record.stage === 'ResponseStarted')
      started.set(str((event as Record<string, unknown>)['auditID']) ?? '', record);
  }
  return opts.open ? [...records, ...started.values()] : records;
}

/** Reads the audit log at `path`; a log that does not exist yet reads as empty. */
export async function readAudit(path: string, opts: AuditReadOptions = {}): Promise<AuditRecord[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return parseAudit(text, opts);
}

/**
 * Polls the audit log until `predicate` holds for at least one record, and returns the matching
 * records. The API server writes an event just after the response, so a test that has its answer
 * may look a moment before the line is there.
 */
export async function waitForAudit(
  path: string,
  predicate: (r: AuditRecord) => boolean,
  opts: { timeoutMs?: number } = {},
): Promise<AuditRecord[]> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  while (true) {
    const found = (await readAudit(path)).filter(predicate);
    if (found.length > 0) return found;
    if (Date.now() > deadline) {
      throw new Error(
        `no audit record in ${path} matched ${predicate.toString()} within ${opts.timeoutMs ?? 10_000} ms`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
