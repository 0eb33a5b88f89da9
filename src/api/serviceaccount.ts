// A ServiceAccount as the API server names it when it authenticates or impersonates one: the user
// `system:serviceaccount:<namespace>:<name>`. One pair of functions turns a reference into that
// user name and back; everything else that needs one of the two goes through them.

/** The user name prefix of a ServiceAccount, as the API server authenticates and impersonates it. */
export const SERVICE_ACCOUNT_USER_PREFIX = 'system:serviceaccount:';

export interface ServiceAccountRef {
  namespace: string;
  name: string;
}

/** `system:serviceaccount:<namespace>:<name>`. */
export function serviceAccountToUser(ref: ServiceAccountRef): string {
  return `${SERVICE_ACCOUNT_USER_PREFIX}${ref.namespace}:${ref.name}`;
}

/**
 * The ServiceAccount a user name stands for, or null for any other user. What follows the first
 * colon after the namespace is the name, colons and all (spec §3.4 keeps `ns:name` verbatim); a
 * user name with no second colon has an empty name, which no ServiceAccount can have.
 */
export function serviceAccountFromUser(user: string): ServiceAccountRef | null {
  if (!user.startsWith(SERVICE_ACCOUNT_USER_PREFIX)) return null;
  const rest = user.slice(SERVICE_ACCOUNT_USER_PREFIX.length);
  const colon = rest.indexOf(':');
  return colon < 0 ? { namespace: rest, name: '' } : { namespace: rest.slice(0, colon), name: rest.slice(colon + 1) };
}
