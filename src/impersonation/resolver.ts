// Resolving the ServiceAccount an Application syncs as (spec §3): the first destinationServiceAccounts
// entry whose server and namespace globs both match decides, in list order, with no ranking.
import { serviceAccountToUser } from '../api/index.ts';
import { testGlob } from './glob.ts';

/** One destinationServiceAccounts entry, with the AppProject it came from (its own or a global one, §7). */
export interface ServiceAccountEntry {
  server: string;
  namespace?: string | undefined;
  defaultServiceAccount: string;
  fromProject: string;
}

/** What the resolver needs to know about the Application. */
export interface ResolveTarget {
  /** The destination cluster's server URL, after resolving `spec.destination.name` (§6). */
  resolvedServer: string;
  /** `spec.destination.namespace` as written, `""` when absent: the only value matched (§3.1). */
  destinationNamespace: string;
  /** The Application's own `metadata.namespace`: names the ServiceAccount when the above is empty (§3.4). */
  applicationNamespace: string;
}

/** How one visited entry fared: both patterns are always evaluated (§3.1). */
export interface EntryTrace {
  index: number;
  entry: ServiceAccountEntry;
  serverMatched: boolean;
  namespaceMatched: boolean;
  /** Set when a pattern of this entry failed to compile; the walk stopped here. */
  error?: string;
}

export type Resolution =
  | { outcome: 'found'; serviceAccount: string; index: number; entry: ServiceAccountEntry; trace: EntryTrace[] }
  | { outcome: 'none'; trace: EntryTrace[] }
  | { outcome: 'error'; error: string; index: number; trace: EntryTrace[] };

/** Characters a defaultServiceAccount may not contain (spec §3.3, §8.3). */
export const SERVICE_ACCOUNT_DISALLOWED_CHARS = '!*[]{}\\/';

/** Trims ASCII spaces only, as Go's strings.Trim(s, " ") does. */
export function trimSpaces(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && value.charCodeAt(start) === 0x20) start++;
  while (end > start && value.charCodeAt(end - 1) === 0x20) end--;
  return value.slice(start, end);
}

/** True when a defaultServiceAccount is blank after trimming spaces or holds a disallowed character. */
export function isInvalidServiceAccountName(value: string): boolean {
  if (trimSpaces(value) === '') return true;
  for (const ch of SERVICE_ACCOUNT_DISALLOWED_CHARS) if (value.includes(ch)) return true;
  return false;
}

/**
 * The Kubernetes user name for a matched entry (spec §3.4): `ns:name` is used verbatim, a bare
 * name goes into the destination namespace, or the Application's own namespace when that is empty.
 */
export function serviceAccountUser(
  defaultServiceAccount: string,
  target: Pick<ResolveTarget, 'destinationNamespace' | 'applicationNamespace'>,
): string {
  const colon = defaultServiceAccount.indexOf(':');
  if (colon >= 0) {
    return serviceAccountToUser({
      namespace: defaultServiceAccount.slice(0, colon),
      name: defaultServiceAccount.slice(colon + 1),
    });
  }
  const namespace = target.destinationNamespace !== '' ? target.destinationNamespace : target.applicationNamespace;
  return serviceAccountToUser({ namespace, name: defaultServiceAccount });
}

/** Walks `entries` in order (spec §3.1–§3.5). A pattern error before the first match is an error. */
export function resolveServiceAccount(entries: readonly ServiceAccountEntry[], target: ResolveTarget): Resolution {
  const trace: EntryTrace[] = [];
  for (let index = 0; index < entries.length; index++) {
    const entry = entries[index] as ServiceAccountEntry;
    // A literal pattern is a string comparison; others use the cached compiled matcher (glob.ts).
    const server = testGlob(entry.server, target.resolvedServer);
    if (typeof server !== 'boolean') {
      const error = `invalid glob pattern for destination server: ${server.error}`;
      trace.push({ index, entry, serverMatched: false, namespaceMatched: false, error });
      return { outcome: 'error', error, index, trace };
    }
    const serverMatched = server;
    const namespace = testGlob(entry.namespace ?? '', target.destinationNamespace);
    if (typeof namespace !== 'boolean') {
      const error = `invalid glob pattern for destination namespace: ${namespace.error}`;
      trace.push({ index, entry, serverMatched, namespaceMatched: false, error });
      return { outcome: 'error', error, index, trace };
    }
    const namespaceMatched = namespace;
    trace.push({ index, entry, serverMatched, namespaceMatched });
    if (!serverMatched || !namespaceMatched) continue;
    // Only the matched entry's ServiceAccount is checked (spec §3.3).
    if (isInvalidServiceAccountName(entry.defaultServiceAccount)) {
      const error = `default service account contains invalid chars '${entry.defaultServiceAccount}'`;
      const last = trace[trace.length - 1] as EntryTrace;
      last.error = error;
      return { outcome: 'error', error, index, trace };
    }
    return {
      outcome: 'found',
      serviceAccount: serviceAccountUser(entry.defaultServiceAccount, target),
      index,
      entry,
      trace,
    };
  }
  return { outcome: 'none', trace };
}
