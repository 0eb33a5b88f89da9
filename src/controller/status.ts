// The Application status as Argo CD users read it, its conditions, and the rule for writing it.
//
// Write rule (no update loops): the status subresource is written when anything other than
// `reconciledAt` changed, or when the stored `reconciledAt` is older than the refresh interval
// (so a periodic refresh is visible about once per interval, as in Argo CD). A write produces a
// watch event, but status-only changes of an Application do not requeue it (see manager.ts), and
// the next reconcile computes the same status, so a write never causes another.
import { isDeepStrictEqual } from 'node:util';
import type { AppCondition, ApplicationStatus } from '../api/index.ts';
import type { KubeApi } from './kubeapi.ts';
import { fitStatus, isTooLarge } from './status-size.ts';

/**
 * Builds the next condition list: a condition whose type and message are unchanged keeps its
 * lastTransitionTime; any other gets `now`. Order follows `next`.
 */
export function mergeConditions(prev: AppCondition[] | undefined, next: AppCondition[], now: string): AppCondition[] {
  return next.map((c) => {
    const old = (prev ?? []).find((p) => p.type === c.type && p.message === c.message);
    return { type: c.type, message: c.message, lastTransitionTime: old?.lastTransitionTime ?? now };
  });
}

function withoutReconciledAt(s: ApplicationStatus | undefined): Record<string, unknown> {
  const { reconciledAt: _r, ...rest } = s ?? {};
  // Absent and undefined fields are the same thing once serialized.
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
}

/** True when anything but reconciledAt differs. */
export function statusChanged(prev: ApplicationStatus | undefined, next: ApplicationStatus): boolean {
  return !isDeepStrictEqual(withoutReconciledAt(prev), withoutReconciledAt(next));
}

/** The write rule described at the top of this file. */
export function shouldWriteStatus(
  prev: ApplicationStatus | undefined,
  next: ApplicationStatus,
  nowMs: number,
  refreshIntervalMs: number,
): boolean {
  if (statusChanged(prev, next)) return true;
  const at = prev?.reconciledAt ? Date.parse(prev.reconciledAt) : NaN;
  return Number.isNaN(at) || nowMs - at >= refreshIntervalMs;
}

export function appPath(namespace: string, name: string): string {
  return `/apis/argoproj.io/v1alpha1/namespaces/${encodeURIComponent(namespace)}/applications/${encodeURIComponent(name)}`;
}

/** The status write hit a newer version of the Application: reconcile again from the cache. */
export class ConflictError extends Error {}

/**
 * Replaces the status through the status subresource, with the object's resourceVersion
 * (optimistic concurrency: a conflict is an error the queue retries, never a blind overwrite).
 * Returns the updated object.
 */
export async function writeStatus(
  api: KubeApi,
  raw: Record<string, unknown>,
  status: ApplicationStatus,
): Promise<Record<string, unknown>> {
  const meta = raw['metadata'] as { name: string; namespace: string };
  const path = `${appPath(meta.namespace, meta.name)}/status`;
  let res = await api.request('PUT', path, { body: { ...raw, status: fitStatus(status) } });
  // Still refused for its size (a smaller etcd limit than the budget assumes): without any sync
  // results, so that a finished operation is recorded rather than run again.
  if (isTooLarge(res.status, res.text))
    res = await api.request('PUT', path, { body: { ...raw, status: fitStatus(status, 0) } });
  if (res.status === 409)
    throw new ConflictError(`Application ${meta.namespace}/${meta.name}: status update conflict, will retry`);
  if (res.status < 200 || res.status >= 300) {
    throw new Error(
      `Application ${meta.namespace}/${meta.name}: writing status failed: ${res.status} ${(res.body as { message?: string } | undefined)?.message ?? res.text.slice(0, 300)}`,
    );
  }
  return res.body as Record<string, unknown>;
}

/** A JSON merge patch of the Application itself (operation, annotations, finalizers). */
export async function patchApplication(
  api: KubeApi,
  namespace: string,
  name: string,
  patch: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  return (await api.call('PATCH', appPath(namespace, name), {
    body: patch,
    contentType: 'application/merge-patch+json',
  })) as Record<string, unknown>;
}
