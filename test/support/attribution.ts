// The check every control plane of the tests makes when it stops (controlplane.ts): each request
// impersync made as a ServiceAccount names, in its impersonated user's extras, the Application it
// was made for, its project and the revision (docs/impersonation.md §11). Made across the whole
// e2e suite rather than in one test, so that any path that reaches the destination without
// naming its Application fails the file that took it.
//
// impersync's requests are told apart by their user agent (kube/transport.ts sends `impersync`).
// Its live-object watches send another (kube/client.ts LIVE_WATCH_USER_AGENT): one watch serves
// every Application acting as that ServiceAccount, so it names none, and is left out here; so is the
// shared read of a destination's versions (controller/capabilities.ts), under its own user agent.
import type { AuditRecord } from '../../src/controlplane/audit.ts';
import { EXTRA_KEYS } from '../../src/api/index.ts';

export const IMPERSYNC_USER_AGENT = 'impersync';

/** Whether the record names all of impersync's extras, one value each. */
export function attributed(r: AuditRecord): boolean {
  return EXTRA_KEYS.every((k) => (r.impersonatedExtra[k] ?? []).length === 1);
}

/** impersync's requests made as a ServiceAccount that do not name their Application, project and revision. */
export function unattributedRequests(records: AuditRecord[], exempt?: (r: AuditRecord) => boolean): AuditRecord[] {
  return records.filter(
    (r) => r.userAgent === IMPERSYNC_USER_AGENT && r.impersonatedUser !== undefined && !attributed(r) && !exempt?.(r),
  );
}

/** The error stop() fails with, naming the first requests. */
export function unattributedError(found: AuditRecord[]): Error {
  const lines = found
    .slice(0, 10)
    .map(
      (r) =>
        `  ${r.verb} ${r.requestURI} as ${r.impersonatedUser} (${r.code}) extras ${JSON.stringify(r.impersonatedExtra)}`,
    );
  return new Error(
    `${found.length} request(s) impersync made as a ServiceAccount do not name their Application, project and revision in impersonatedUser.extra (docs/impersonation.md §11):\n${lines.join('\n')}`,
  );
}

/**
 * What the sync engine's own tests (which call it without a controller) say their requests are
 * made for: as the controller names an Application, so that the check above holds for them too.
 */
export function madeForTest(application: string): { application: string; project: string; revision: string } {
  return { application: `argocd/${application}`, project: 'default', revision: 'test-revision' };
}
