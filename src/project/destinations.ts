// AppProject.spec.destinations (spec §9), with Argo CD's meaning (AppProject.isDestinationMatched):
// each entry's server, name and namespace are §2 globs, `*` matches anything, and a pattern that
// starts with `!` matches what the rest does not match.
//
// Argo CD's loop, kept exactly (including its operator precedence), for each entry in order:
// - (server matched OR name matched) AND namespace matched → the destination is allowed (go on);
// - else, (name not matched AND the name pattern is negated) OR (server not matched AND the server
//   pattern is negated AND namespace matched) → denied at once;
// - else, namespace not matched AND the namespace pattern is negated AND server matched → denied at once.
// An empty destination server or name never matches; an absent pattern is "", which matches only "".
import { globMatch } from '../impersonation/glob.ts';

export interface DestinationToCheck {
  /** The resolved cluster's server URL. */
  server: string;
  /** The resolved cluster's name (in-cluster for https://kubernetes.default.svc). */
  name: string;
  /** The namespace to check: spec.destination.namespace, or a resource's own namespace. */
  namespace: string;
}

export interface ProjectDestinationEntry {
  server?: string | undefined;
  name?: string | undefined;
  namespace?: string | undefined;
}

export interface DestinationDecision {
  permitted: boolean;
  because: string;
}

/** Argo CD's globMatch with negation allowed: `!p` is "not p", `*` is everything; invalid matches nothing. */
function patternMatch(pattern: string, value: string): boolean {
  if (pattern.startsWith('!')) return !globMatch(pattern.slice(1), value);
  if (pattern === '*') return true;
  return globMatch(pattern, value);
}

const isDeny = (pattern: string): boolean => pattern.startsWith('!');

export function destinationDecision(
  destinations: readonly ProjectDestinationEntry[] | undefined,
  dst: DestinationToCheck,
): DestinationDecision {
  let allowedBy: string | undefined;
  for (const item of destinations ?? []) {
    const server = item.server ?? '';
    const name = item.name ?? '';
    const namespace = item.namespace ?? '';
    const nameMatched = dst.name !== '' && patternMatch(name, dst.name);
    const serverMatched = dst.server !== '' && patternMatch(server, dst.server);
    const namespaceMatched = patternMatch(namespace, dst.namespace);
    const entry = describeEntry(item);
    if ((serverMatched || nameMatched) && namespaceMatched) {
      allowedBy ??= `allowed by destinations entry ${entry}`;
    } else if ((!nameMatched && isDeny(name)) || (!serverMatched && isDeny(server) && namespaceMatched)) {
      return { permitted: false, because: `denied by destinations entry ${entry}` };
    } else if (!namespaceMatched && isDeny(namespace) && serverMatched) {
      return { permitted: false, because: `denied by destinations entry ${entry}` };
    }
  }
  if (allowedBy) return { permitted: true, because: allowedBy };
  return {
    permitted: false,
    because: (destinations ?? []).length === 0 ? 'destinations is empty' : 'no destinations entry matches',
  };
}

function describeEntry(item: ProjectDestinationEntry): string {
  const parts: string[] = [];
  if (item.server !== undefined) parts.push(`server: '${item.server}'`);
  if (item.name !== undefined) parts.push(`name: '${item.name}'`);
  parts.push(`namespace: '${item.namespace ?? ''}'`);
  return `{${parts.join(', ')}}`;
}
