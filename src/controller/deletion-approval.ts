// `argocd.argoproj.io/deletion-approved`: the Application's approval of the deletions its
// Prune=confirm and Delete=confirm objects wait for. Argo CD's IsDeletionConfirmed
// (pkg/apis/application/v1alpha1/types.go): an RFC 3339 time at or after the moment in question
// (the operation's start for a prune, the deletionTimestamp for a deletion).
export const ANNOTATION_DELETION_APPROVED = 'argocd.argoproj.io/deletion-approved';

export function deletionApprovedSince(
  app: { metadata: { annotations?: Record<string, string> | undefined } },
  since: string | undefined,
): boolean {
  const value = app.metadata.annotations?.[ANNOTATION_DELETION_APPROVED];
  if (!value || !since) return false;
  // Go's time.RFC3339 needs a zone; Date.parse is laxer, so check the shape first.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return false;
  const at = Date.parse(value);
  const from = Date.parse(since);
  return !Number.isNaN(at) && !Number.isNaN(from) && at >= Math.floor(from / 1000) * 1000;
}
