// Which watch events put an Application in which queue: what of an Application's own change needs
// a refresh (not the controller's status writes), and when it has operation work. The keys other
// objects' changes affect are requeue.ts's.
import { isDeepStrictEqual } from 'node:util';
import { PROGRESS_ANNOTATION, projectName } from '../api/index.ts';
import type { WatchedObject } from '../kube/watch.ts';
import { parseBool } from '../sync/settings.ts';
import type { AppIndexEntry } from './requeue.ts';

/** Argo CD's refresh request: `normal` or `hard` (a hard refresh asks everything again, reconciler.ts). */
export const REFRESH_ANNOTATION = 'argocd.argoproj.io/refresh';

/** Set with the refresh annotation by Argo CD's API server and CLI, one value per request (RefreshApp). */
export const REFRESH_TIMESTAMP_ANNOTATION = 'argocd.argoproj.io/refresh-timestamp';

/** Argo CD's annotation that takes an Application out of the controller's hands entirely. */
export const SKIP_RECONCILE_ANNOTATION = 'argocd.argoproj.io/skip-reconcile';

/**
 * `argocd.argoproj.io/skip-reconcile` read with Go's strconv.ParseBool, as Argo CD's canProcessApp:
 * such an Application is neither refreshed nor operated on, nor finalized; its status stays as it is.
 */
export function skipsReconcile(raw: { metadata: object }): boolean {
  const v = (raw.metadata as { annotations?: Record<string, string> }).annotations?.[SKIP_RECONCILE_ANNOTATION];
  return v !== undefined && parseBool(v) === true;
}

/** What the requeue rules need of an Application. */
export function appIndexEntry(key: string, raw: WatchedObject, dependencies: readonly string[] = []): AppIndexEntry {
  const spec = (raw['spec'] ?? {}) as {
    project?: string;
    destination?: { server?: string; name?: string };
    source?: { repoURL?: unknown };
    sources?: Array<{ repoURL?: unknown }>;
  };
  const urls = [spec.source, ...(Array.isArray(spec.sources) ? spec.sources : [])]
    .map((s) => s?.repoURL)
    .filter((u): u is string => typeof u === 'string');
  return {
    key,
    project: projectName({ spec }),
    destination: { server: spec.destination?.server, name: spec.destination?.name },
    repoURLs: [...urls, ...dependencies],
  };
}

/**
 * Annotations changed, other than the controller's own removal of the refresh annotation (and its
 * timestamp) at the end of the refresh it asked for (which would otherwise cost a second comparison each time).
 */
function annotationsNeedRefresh(
  a0: Record<string, string> | undefined,
  a1: Record<string, string> | undefined,
): boolean {
  // The progress annotation is the operation's own write (api/status.ts), never a reason to refresh.
  const {
    [REFRESH_ANNOTATION]: r0,
    [REFRESH_TIMESTAMP_ANNOTATION]: t0,
    [PROGRESS_ANNOTATION]: _p0,
    ...rest0
  } = a0 ?? {};
  const {
    [REFRESH_ANNOTATION]: r1,
    [REFRESH_TIMESTAMP_ANNOTATION]: t1,
    [PROGRESS_ANNOTATION]: _p1,
    ...rest1
  } = a1 ?? {};
  return !isDeepStrictEqual(rest0, rest1) || (r1 !== undefined && r1 !== r0) || (t1 !== undefined && t1 !== t0);
}

/**
 * Whether an Application change is one the refresh must react to (not its own status write).
 * A newly set `operation` alone is not: the operation worker compares as part of the sync and
 * queues a refresh when it finishes (`handle`), so a refresh now would be a comparison more on
 * every sync. A cleared `operation` still is: that refresh is the one that sees the final state.
 */
export function appChangeNeedsRefresh(old: WatchedObject | undefined, cur: WatchedObject): boolean {
  if (!old) return true;
  const m0 = old.metadata as Record<string, unknown>;
  const m1 = cur.metadata as Record<string, unknown>;
  return (
    !isDeepStrictEqual(old['spec'], cur['spec']) ||
    (cur['operation'] === undefined && old['operation'] !== undefined) ||
    annotationsNeedRefresh(
      m0['annotations'] as Record<string, string> | undefined,
      m1['annotations'] as Record<string, string> | undefined,
    ) ||
    !isDeepStrictEqual(m0['labels'], m1['labels']) ||
    m0['deletionTimestamp'] !== m1['deletionTimestamp'] ||
    !isDeepStrictEqual(m0['finalizers'], m1['finalizers'])
  );
}

/** Whether the Application has operation work: an operation to run or a Running one to resume. */
export function hasOperationWork(raw: WatchedObject): boolean {
  const phase = (raw['status'] as { operationState?: { phase?: string } } | undefined)?.operationState?.phase;
  return (
    raw['operation'] !== undefined ||
    phase === 'Running' ||
    phase === 'Terminating' ||
    (raw.metadata as { deletionTimestamp?: string }).deletionTimestamp !== undefined
  );
}
