// Before a sync writes as an impersonated ServiceAccount, and again before each later wave: does
// that ServiceAccount still exist on the destination? Kubernetes authorises an impersonated user
// name through RBAC alone, so without this check a deleted ServiceAccount whose RoleBinding was
// left behind keeps syncing under its name. The read is made with the controller's own credential
// (the identity rule keeps that credential here, in controller/, and out of sync/): a 404 stops the
// sync with a message naming the ServiceAccount; a refused or failed read never does, since a
// custom install may not grant the controller `get` on serviceaccounts (logged once at info).
import type { Logger } from 'pino';
import { serviceAccountFromUser } from '../api/index.ts';
import type { ServiceAccountRef } from '../api/index.ts';
import type { DestinationClient, Identity, KubeError, KubeResult } from '../kube/types.ts';

// What the API server accepts (apimachinery validation): a namespace is a DNS-1123 label, a
// ServiceAccount name a DNS-1123 subdomain. A name outside them cannot exist, so it is not asked for.
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The ServiceAccount a sync impersonates, with the user name it was impersonated under. */
export interface ImpersonatedAccount extends ServiceAccountRef {
  /** The impersonated user name, `system:serviceaccount:<namespace>:<name>`. */
  user: string;
}

/** The ServiceAccount an identity impersonates; null for the controller's own credential. */
export function impersonatedServiceAccount(identity: Identity): ImpersonatedAccount | null {
  if (!('impersonate' in identity)) return null;
  const ref = serviceAccountFromUser(identity.impersonate);
  return ref ? { ...ref, user: identity.impersonate } : null;
}

/** Why `ref` cannot name an existing ServiceAccount, or null when it could. */
export function invalidReason(ref: ImpersonatedAccount): string | null {
  if (ref.namespace.length > 63 || !DNS_LABEL.test(ref.namespace)) return 'not a valid namespace name';
  if (ref.name.length > 253 || !DNS_SUBDOMAIN.test(ref.name)) return 'not a valid ServiceAccount name';
  return null;
}

export function serviceAccountPath(ref: ImpersonatedAccount): string {
  return `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/serviceaccounts/${encodeURIComponent(ref.name)}`;
}

/** The operation message (and SyncError condition) when the ServiceAccount is gone. */
export function missingMessage(ref: ImpersonatedAccount, why?: string): string {
  return `ServiceAccount "${ref.name}" not found in namespace "${ref.namespace}"${why ? ` (${why})` : ''}: refusing to sync as ${ref.user}`;
}

export type CheckOutcome =
  | { readonly kind: 'present' }
  | { readonly kind: 'missing'; readonly message: string }
  /** The check itself failed (403 without `get`, a network error): the sync goes on. */
  | { readonly kind: 'unknown'; readonly error: KubeError };

/** What the answer to the GET of the ServiceAccount means. Only a 404 blocks. */
export function outcomeOf(ref: ImpersonatedAccount, result: KubeResult<unknown>): CheckOutcome {
  if (result.ok) return { kind: 'present' };
  if (result.error.code === 404) return { kind: 'missing', message: missingMessage(ref) };
  return { kind: 'unknown', error: result.error };
}

/** One per controller: remembers which unanswerable checks it already logged. */
export class ServiceAccountCheck {
  readonly #logger: Logger;
  readonly #logged = new Set<string>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /**
   * A check for syncs made through `client`, or undefined when `client` does not impersonate a
   * ServiceAccount. `controllerClient` is the controller's own client on the same destination.
   * The check resolves to the message that must stop the sync, or null to go on.
   */
  guard(
    client: DestinationClient,
    controllerClient: () => DestinationClient,
  ): (() => Promise<string | null>) | undefined {
    const ref = impersonatedServiceAccount(client.identity);
    if (!ref) return undefined;
    const why = invalidReason(ref);
    if (why) return () => Promise.resolve(missingMessage(ref, why));
    return async () => {
      const own = controllerClient();
      const outcome = outcomeOf(ref, await own.request({ method: 'GET', path: serviceAccountPath(ref) }));
      if (outcome.kind === 'missing') return outcome.message;
      if (outcome.kind === 'unknown') this.#logUnknown(own.server, ref, outcome.error);
      return null;
    };
  }

  #logUnknown(server: string, ref: ImpersonatedAccount, error: KubeError): void {
    // Once per destination and kind of failure: a missing permission is a property of the install.
    const key = `${server}\n${error.code}\n${error.reason}`;
    if (this.#logged.has(key)) return;
    this.#logged.add(key);
    this.#logger.info(
      { server, serviceAccount: ref.user, code: error.code, reason: error.reason },
      `cannot check that ServiceAccount "${ref.name}" exists in namespace "${ref.namespace}" (${error.code} ${error.reason}: ${error.message}); syncing without the check. Grant the controller get on serviceaccounts to enable it (docs/install.md)`,
    );
  }
}
