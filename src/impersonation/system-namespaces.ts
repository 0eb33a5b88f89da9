// Beyond Argo CD (docs/impersonation.md §10): ServiceAccounts in kube-system, kube-public and
// kube-node-lease are not impersonated unless argocd-cm allows it. The API server authorises an
// impersonated ServiceAccount name by RBAC alone, without the object having to exist, and
// kube-system's controller names (generic-garbage-collector, clusterrole-aggregation-controller, ...)
// hold cluster-wide rights: one mistaken project entry, or a controller token that may impersonate
// too widely, would otherwise sync as the cluster's own control plane.
import { serviceAccountFromUser } from '../api/index.ts';
import { serviceAccountUser } from './resolver.ts';
import type { DestinationServiceAccount } from '../api/index.ts';

export const ALLOW_SYSTEM_NAMESPACES_KEY = 'impersync.impersonation.allowSystemNamespaces';

/** The namespaces whose ServiceAccounts are refused by default, in the order messages name them. */
export const SYSTEM_NAMESPACES: readonly string[] = ['kube-system', 'kube-public', 'kube-node-lease'];

/**
 * The system namespace a `system:serviceaccount:<ns>:<name>` user is in, or undefined. The namespace
 * is the text up to the next `:`, compared exactly: a value written with spaces (kept verbatim, spec
 * §3.4) names another namespace for the API server too.
 */
export function systemNamespaceOf(user: string): string | undefined {
  const namespace = serviceAccountFromUser(user)?.namespace;
  return namespace !== undefined && SYSTEM_NAMESPACES.includes(namespace) ? namespace : undefined;
}

/** The refusal for `user`, which the identity decision reports as its message. */
export function systemNamespaceRefusal(user: string): string {
  return (
    `refusing to impersonate ${user}: ServiceAccounts in kube-system, kube-public and kube-node-lease ` +
    `are not impersonated unless argocd-cm sets ${ALLOW_SYSTEM_NAMESPACES_KEY}: "true"`
  );
}

const GLOB_SPECIAL = /[*?[\]{}\\]/;

/** An entry of an AppProject that always names a ServiceAccount in a system namespace. */
export interface SystemNamespaceEntry {
  index: number;
  /** The ServiceAccount user every Application matching the entry would sync as. */
  serviceAccount: string;
  message: string;
}

/**
 * The entries of a project whose ServiceAccount is in a system namespace whatever the Application:
 * `<ns>:<name>`, or a bare name with a namespace pattern that is one system namespace written out.
 * (A bare name with a glob or an empty namespace depends on the Application; `explain` shows those.)
 */
export function systemNamespaceEntries(entries: readonly DestinationServiceAccount[]): SystemNamespaceEntry[] {
  const out: SystemNamespaceEntry[] = [];
  entries.forEach((entry, index) => {
    const sa = entry.defaultServiceAccount;
    const namespace = entry.namespace ?? '';
    const fixed = sa.includes(':') || (namespace !== '' && !GLOB_SPECIAL.test(namespace));
    const user = fixed
      ? serviceAccountUser(sa, { destinationNamespace: namespace, applicationNamespace: '' })
      : undefined;
    if (user !== undefined && systemNamespaceOf(user) !== undefined)
      out.push({ index, serviceAccount: user, message: systemNamespaceRefusal(user) });
  });
  return out;
}
