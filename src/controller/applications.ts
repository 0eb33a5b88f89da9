// Reading and writing Applications on the control cluster, as the controller: the fresh read an
// operation starts from, the status write (optimistic concurrency, kept within the size limit) and
// JSON merge patches of the Application itself (operation, annotations, finalizers).
import type { ApplicationStatus } from '../api/index.ts';
import type { ControlClient } from '../kube/control.ts';
import type { KubeError, KubeResult } from '../kube/types.ts';
import type { WatchedObject } from '../kube/watch.ts';
import { fitStatus, isTooLarge } from './status-size.ts';

/** An Application as read from the API server: its metadata is all that is known for sure. */
export type RawApplication = WatchedObject & {
  metadata: {
    name: string;
    namespace: string;
    finalizers?: string[];
    deletionTimestamp?: string;
    resourceVersion?: string;
    generation?: number;
  };
};

export function appPath(namespace: string, name: string): string {
  return `/apis/argoproj.io/v1alpha1/namespaces/${encodeURIComponent(namespace)}/applications/${encodeURIComponent(name)}`;
}

/** The write hit a newer version of the Application: reconcile again from what is there now. */
export class ConflictError extends Error {}

function failed(what: string, error: KubeError): Error {
  return error.code === 409
    ? new ConflictError(`${what}: conflict, will retry`)
    : new Error(`${what}: ${error.code} ${error.message}`);
}

function valueOf<T>(what: string, res: KubeResult<T>): T {
  if (!res.ok) throw failed(what, res.error);
  return res.value;
}

/** The Application as the API server has it now (an operation never starts from a stale cache), or undefined. */
export async function readApplication(control: ControlClient, key: string): Promise<RawApplication | undefined> {
  const slash = key.indexOf('/');
  const res = await control.request<RawApplication>({
    method: 'GET',
    path: appPath(key.slice(0, slash), key.slice(slash + 1)),
  });
  if (!res.ok && res.error.code === 404) return undefined;
  return valueOf(`Application ${key}: read failed`, res);
}

/**
 * Replaces the status through the status subresource, with the object's resourceVersion
 * (optimistic concurrency: a conflict is a ConflictError the queue retries, never a blind
 * overwrite). Returns the updated object.
 */
export async function writeStatus(
  control: ControlClient,
  raw: WatchedObject,
  status: ApplicationStatus,
): Promise<RawApplication> {
  const { namespace = '', name } = raw.metadata;
  const path = `${appPath(namespace, name)}/status`;
  let res = await control.request<RawApplication>({ method: 'PUT', path, body: { ...raw, status: fitStatus(status) } });
  // Still refused for its size (a smaller etcd limit than the budget assumes): without any sync
  // results, so that a finished operation is recorded rather than run again.
  if (!res.ok && isTooLarge(res.error.code, res.error.message))
    res = await control.request<RawApplication>({
      method: 'PUT',
      path,
      body: { ...raw, status: fitStatus(status, 0) },
    });
  return valueOf(`Application ${namespace}/${name}: writing status failed`, res);
}

/** A JSON merge patch of the Application itself (operation, annotations, finalizers). */
export async function patchApplication(
  control: ControlClient,
  raw: WatchedObject,
  patch: Record<string, unknown>,
): Promise<RawApplication> {
  const { namespace = '', name } = raw.metadata;
  const res = await control.request<RawApplication>({
    method: 'PATCH',
    path: appPath(namespace, name),
    body: patch,
    contentType: 'application/merge-patch+json',
  });
  return valueOf(`Application ${namespace}/${name}: patch`, res);
}

/**
 * Argo CD's removeRefreshAnnotationCombo: the refresh annotation and `refresh-timestamp` (which
 * Argo CD's API server and CLI set with it) removed in one JSON patch that first tests the
 * timestamp, so a refresh asked for while this one ran (a new timestamp) is not swallowed: the
 * patch then fails with 422 and both stay, for the next refresh. Returns whether they were removed.
 */
export async function removeRefreshAnnotations(
  control: ControlClient,
  raw: WatchedObject,
  annotation: string,
  timestampAnnotation: string,
): Promise<boolean> {
  const annotations = (raw.metadata as { annotations?: Record<string, string> }).annotations ?? {};
  const pointer = (key: string) => `/metadata/annotations/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  const ops: Array<Record<string, unknown>> = [];
  const ts = annotations[timestampAnnotation];
  if (ts !== undefined)
    ops.push(
      { op: 'test', path: pointer(timestampAnnotation), value: ts },
      { op: 'remove', path: pointer(timestampAnnotation) },
    );
  if (annotations[annotation] !== undefined) ops.push({ op: 'remove', path: pointer(annotation) });
  if (ops.length === 0) return false;
  const { namespace = '', name } = raw.metadata;
  const res = await control.request<RawApplication>({
    method: 'PATCH',
    path: appPath(namespace, name),
    body: ops,
    contentType: 'application/json-patch+json',
  });
  // 422: the timestamp changed (a new request) or an annotation went meanwhile; either way the
  // Application's watch event brings the next refresh, which reads what is there then.
  if (!res.ok && res.error.code === 422) return false;
  valueOf(`Application ${namespace}/${name}: removing the refresh annotations`, res);
  return true;
}
