// Counting requests in the API server's audit log: by user, within a time window, and broken down
// by what they were (verb, resource, dry-run, as itself or impersonating), to say where time goes.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { EXTRA_KEYS } from '../../src/api/index.ts';
import { LIVE_WATCH_USER_AGENT } from '../../src/kube/client.ts';
import { readAudit, type AuditRecord, type TestControlPlane } from '../../test/support/index.ts';
import { sleep } from './report.ts';

export type Window = { from: number; to: number };

function at(r: AuditRecord): number {
  return r.time ? Date.parse(r.time) : Number.NaN;
}

/** Requests made with `user`'s credentials (impersonated or not) received within the window. */
export async function requestsBy(cp: TestControlPlane, user: string, window: Window): Promise<AuditRecord[]> {
  // The server writes a line a moment after answering: give the log a second to catch up.
  await sleep(1500);
  return byUserWithin(await readAllAudit(cp), user, window);
}

/** "verb resource[/sub] [dry-run] [as SA]" → count, largest first. */
export function breakdown(records: AuditRecord[]): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const r of records) {
    const what = [
      r.verb,
      `${r.resource ?? r.requestURI.split('?')[0]}${r.subresource ? `/${r.subresource}` : ''}`,
      r.dryRun ? 'dry-run' : '',
      r.impersonatedUser ? 'as SA' : 'as controller',
    ]
      .filter(Boolean)
      .join(' ');
    counts.set(what, (counts.get(what) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]);
}

/** Requests that failed (code >= 400), by code: conflicts and throttling show up here. */
export function failures(records: AuditRecord[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of records) if ((r.code ?? 0) >= 400) out[String(r.code)] = (out[String(r.code)] ?? 0) + 1;
  return out;
}

/**
 * How many of the records were made as a ServiceAccount, and of those how many name their
 * Application, project and revision in impersonatedUser.extra, how many are the shared live-object
 * watches (which name none by design), how many name none otherwise; and the rights reviews asked
 * (SelfSubjectAccessReviews, made only after a refusal).
 */
export function attribution(records: AuditRecord[]): {
  asServiceAccount: number;
  named: number;
  sharedWatches: number;
  unnamed: number;
  reviews: number;
} {
  const out = { asServiceAccount: 0, named: 0, sharedWatches: 0, unnamed: 0, reviews: 0 };
  for (const r of records) {
    if (r.resource === 'selfsubjectaccessreviews') out.reviews++;
    if (r.impersonatedUser === undefined) continue;
    out.asServiceAccount++;
    if (EXTRA_KEYS.every((k) => (r.impersonatedExtra[k] ?? []).length === 1)) out.named++;
    else if (r.userAgent === LIVE_WATCH_USER_AGENT) out.sharedWatches++;
    else out.unnamed++;
  }
  return out;
}

/**
 * Every audit record, the rotated files included: kube-apiserver starts a new audit.log every
 * 100 MB (its default --audit-log-maxsize), keeping the old one as audit-<time>.log beside it, and
 * cp.readAudit() reads only the current file. A benchmark of tens of thousands of requests needs all.
 */
export async function readAllAudit(cp: TestControlPlane): Promise<AuditRecord[]> {
  const dir = path.dirname(cp.auditLogPath);
  const base = path.basename(cp.auditLogPath, '.log');
  const files = (await readdir(dir)).filter((f) => f.startsWith(base) && f.endsWith('.log'));
  const out: AuditRecord[] = [];
  for (const f of files) for (const r of await readAudit(path.join(dir, f))) out.push(r);
  return out;
}

/** The records of `user` received within the window (as requestsBy, on records already read). */
export function byUserWithin(records: AuditRecord[], user: string, window: Window): AuditRecord[] {
  return records.filter((r) => r.user === user && at(r) >= window.from && at(r) <= window.to);
}
