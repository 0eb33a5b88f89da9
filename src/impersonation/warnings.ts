// spec §10: Argo CD's design promised a warning when a project uses destinationServiceAccounts while
// the feature is off, and never built it. impersync shows it (explain, and the Application's
// conditions once the controller exists).

/** The warning text for a project whose `count` destinationServiceAccounts are ignored. */
export function impersonationDisabledWarning(project: string, count: number): string {
  const entries = count === 1 ? '1 destinationServiceAccounts entry' : `${count} destinationServiceAccounts entries`;
  return (
    `AppProject '${project}' has ${entries}, but sync impersonation is disabled ` +
    `(argocd-cm application.sync.impersonation.enabled is not "true"): ` +
    `its Applications sync with the controller's own credential`
  );
}

/** The §10 warning when it applies (feature off and at least one effective entry), otherwise null. */
export function projectImpersonationWarning(
  project: string,
  effectiveEntryCount: number,
  settings: { enabled: boolean },
): string | null {
  if (settings.enabled || effectiveEntryCount === 0) return null;
  return impersonationDisabledWarning(project, effectiveEntryCount);
}
