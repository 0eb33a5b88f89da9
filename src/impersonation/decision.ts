// The decision of spec §5 as one pure function: given the settings, the project's effective
// destinationServiceAccounts and the Application's destination, say which identity to use and,
// when the Application cannot proceed, the exact operation message Argo CD would write.
import { resolveServiceAccount, type EntryTrace, type ServiceAccountEntry } from './resolver.ts';
import { systemNamespaceOf, systemNamespaceRefusal } from './system-namespaces.ts';

export type DecisionKind = 'disabled' | 'impersonate' | 'fallback' | 'deny' | 'error';

export interface MatchedEntry {
  /** Position in the effective list (own entries first, then inherited ones, spec §7). */
  index: number;
  server: string;
  namespace: string;
  defaultServiceAccount: string;
  fromProject: string;
}

export interface IdentityDecision {
  decision: DecisionKind;
  /** `system:serviceaccount:<ns>:<name>` for `impersonate`, otherwise null. */
  serviceAccount: string | null;
  /** The entry that decided (also for an invalid or refused defaultServiceAccount), otherwise null. */
  matched: MatchedEntry | null;
  /**
   * `deny`/`error`: the operation message of spec §5 (or, for a ServiceAccount in a system
   * namespace, impersync's refusal naming it); `fallback`: the info log line; otherwise "".
   */
  message: string;
  /** Every entry visited, in order (empty when disabled). */
  trace: EntryTrace[];
}

export interface DecisionInput {
  /** `allowSystemNamespaces` absent is false: system-namespace ServiceAccounts are refused. */
  settings: { enabled: boolean; enforced: boolean; allowSystemNamespaces?: boolean | undefined };
  /** The Application's project name (for the fallback log line). */
  project: string;
  entries: readonly ServiceAccountEntry[];
  resolvedServer: string;
  /** Raw `spec.destination.namespace`, `""` when absent. */
  destinationNamespace: string;
  /** The Application's `metadata.namespace`. */
  applicationNamespace: string;
}

export function deriveErrorMessage(error: string): string {
  return `failed to derive service account to impersonate: ${error}`;
}

export function noMatchDenyMessage(server: string, namespace: string): string {
  return `no matching service account found for destination server ${server} and namespace ${namespace}`;
}

export function noMatchFallbackMessage(project: string, server: string, namespace: string): string {
  return `no matching service account found for impersonation (project: ${project}, server: ${server}, namespace: ${namespace}), falling back to controller service account`;
}

function matchedEntry(index: number, entry: ServiceAccountEntry): MatchedEntry {
  return {
    index,
    server: entry.server,
    namespace: entry.namespace ?? '',
    defaultServiceAccount: entry.defaultServiceAccount,
    fromProject: entry.fromProject,
  };
}

/** spec §5: disabled → own credential; otherwise resolve (§3) and apply the enforced table. */
export function decide(input: DecisionInput): IdentityDecision {
  if (!input.settings.enabled)
    return { decision: 'disabled', serviceAccount: null, matched: null, message: '', trace: [] };
  const resolution = resolveServiceAccount(input.entries, input);
  switch (resolution.outcome) {
    case 'error': {
      const visited = resolution.trace[resolution.trace.length - 1];
      // An invalid defaultServiceAccount belongs to an entry that matched; a pattern error does not.
      const matched =
        visited && visited.serverMatched && visited.namespaceMatched
          ? matchedEntry(resolution.index, visited.entry)
          : null;
      return {
        decision: 'error',
        serviceAccount: null,
        matched,
        message: deriveErrorMessage(resolution.error),
        trace: resolution.trace,
      };
    }
    case 'found':
      // Beyond Argo CD (docs/impersonation.md §10): the matched entry decided, but its ServiceAccount
      // is in a system namespace that argocd-cm does not open; nothing is impersonated.
      if (systemNamespaceOf(resolution.serviceAccount) !== undefined && input.settings.allowSystemNamespaces !== true) {
        return {
          decision: 'error',
          serviceAccount: null,
          matched: matchedEntry(resolution.index, resolution.entry),
          message: systemNamespaceRefusal(resolution.serviceAccount),
          trace: resolution.trace,
        };
      }
      return {
        decision: 'impersonate',
        serviceAccount: resolution.serviceAccount,
        matched: matchedEntry(resolution.index, resolution.entry),
        message: '',
        trace: resolution.trace,
      };
    case 'none':
      if (input.settings.enforced) {
        return {
          decision: 'deny',
          serviceAccount: null,
          matched: null,
          message: noMatchDenyMessage(input.resolvedServer, input.destinationNamespace),
          trace: resolution.trace,
        };
      }
      return {
        decision: 'fallback',
        serviceAccount: null,
        matched: null,
        message: noMatchFallbackMessage(input.project, input.resolvedServer, input.destinationNamespace),
        trace: resolution.trace,
      };
  }
}
