// Reading and writing Applications on the control cluster, as the controller: the fresh read an
// operation starts from, the status write (optimistic concurrency, kept within the size limit; through
// the status subresource or as an ordinary field, as the CRD has it) and
// JSON merge patches of the Application itself (operation, annotations, finalizers).
import { isCompleted, PROGRESS_ANNOTATION } from '../api/index.ts';
import type { ApplicationStatus, Operation } from '../api/index.ts';
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
 * Whether the Application CRD has a status subresource, as discovery says (`applications/status`
 * among argoproj.io/v1alpha1's resources). impersync's CRD and Argo CD's have none (status is an
 * ordinary field, written with the Application); an older impersync CRD has one. Asked again after
 * STATUS_MODE_TTL_MS, and at once when a write suggests the CRD changed: a 404 from /status (the
 * subresource went), or a write of the main resource whose answer lacks the status sent (the
 * subresource came: the API server then drops status from ordinary updates).
 */
export const STATUS_MODE_TTL_MS = 60_000;

class StatusMode {
  #value: boolean | undefined;
  #at = 0;
  #inflight: Promise<boolean> | undefined;

  async subresource(control: ControlClient, now = Date.now()): Promise<boolean> {
    if (this.#value !== undefined && now - this.#at < STATUS_MODE_TTL_MS) return this.#value;
    this.#inflight ??= (async () => {
      const res = await control.request<{ resources?: Array<{ name?: string }> }>({
        method: 'GET',
        path: '/apis/argoproj.io/v1alpha1',
      });
      // Discovery unanswered: keep what was known (else assume no subresource, Argo CD's shape; a
      // wrong guess is corrected by the write's answer).
      const value = res.ok
        ? (res.value.resources ?? []).some((r) => r.name === 'applications/status')
        : (this.#value ?? false);
      this.#value = value;
      this.#at = Date.now();
      return value;
    })().finally(() => (this.#inflight = undefined));
    return this.#inflight;
  }

  forget(): void {
    this.#at = 0;
  }
}

const modes = new WeakMap<ControlClient, StatusMode>();

function modeOf(control: ControlClient): StatusMode {
  let m = modes.get(control);
  if (!m) modes.set(control, (m = new StatusMode()));
  return m;
}

/** Whether status is written through the status subresource on this control cluster now (discovery, cached). */
export function statusSubresource(control: ControlClient): Promise<boolean> {
  return modeOf(control).subresource(control);
}

export interface StatusWriteOptions {
  /**
   * Also remove `operation`, in the same write, where the CRD allows it (no status subresource: one
   * request, as Argo CD's controller finishes an operation). The answer says whether it did: its
   * `operation` is gone; with a subresource the caller clears it with its own patch.
   */
  clearOperation?: boolean;
  /**
   * Also set `operation` to this, in the same write, where the CRD allows it (no status
   * subresource). The answer says whether it did: its `operation` is set; with a subresource the
   * caller sets it with its own patch.
   */
  setOperation?: Operation;
}

async function putStatus(
  control: ControlClient,
  raw: WatchedObject,
  status: Record<string, unknown>,
): Promise<KubeResult<RawApplication>> {
  const { namespace = '', name } = raw.metadata;
  return control.request<RawApplication>({
    method: 'PUT',
    path: `${appPath(namespace, name)}/status`,
    body: { ...raw, status },
  });
}

/**
 * The status as an ordinary field: a JSON patch that carries only `status` (and the removal of
 * `operation` when asked), guarded by the resourceVersion read (a patch that sets it is
 * conditional: 409 when the Application changed meanwhile, so a spec edit is never overwritten
 * with what was read before it, and never lost).
 */
async function patchStatus(
  control: ControlClient,
  raw: WatchedObject,
  status: Record<string, unknown>,
  opts: StatusWriteOptions,
): Promise<KubeResult<RawApplication>> {
  const {
    namespace = '',
    name,
    resourceVersion,
  } = raw.metadata as { namespace?: string; name: string; resourceVersion?: string };
  const ops: Array<Record<string, unknown>> = [];
  if (resourceVersion) ops.push({ op: 'replace', path: '/metadata/resourceVersion', value: resourceVersion });
  ops.push({ op: 'add', path: '/status', value: status });
  if (opts.clearOperation && raw['operation'] !== undefined) ops.push({ op: 'remove', path: '/operation' });
  if (opts.setOperation) ops.push({ op: 'add', path: '/operation', value: opts.setOperation });
  // A running sync's progress also as an annotation (api/status.ts PROGRESS_ANNOTATION: a CRD that
  // types status drops it), removed once the operation is over.
  const annotations = (raw.metadata as { annotations?: Record<string, string> }).annotations;
  const state = (status as ApplicationStatus).operationState;
  const pointer = `/metadata/annotations/${PROGRESS_ANNOTATION.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  if (state?.progress && !isCompleted(state.phase)) {
    const value = JSON.stringify({
      startedAt: state.startedAt,
      retryCount: state.retryCount ?? 0,
      progress: state.progress,
    });
    if (annotations?.[PROGRESS_ANNOTATION] !== value)
      ops.push(
        annotations
          ? { op: 'add', path: pointer, value }
          : { op: 'add', path: '/metadata/annotations', value: { [PROGRESS_ANNOTATION]: value } },
      );
  } else if (annotations?.[PROGRESS_ANNOTATION] !== undefined) ops.push({ op: 'remove', path: pointer });
  return control.request<RawApplication>({
    method: 'PATCH',
    path: appPath(namespace, name),
    body: ops,
    contentType: 'application/json-patch+json',
  });
}

/**
 * The answer of a main-resource write kept the status sent (else a status subresource dropped it).
 * Compared by the fields every schema of Argo CD's keeps (a CRD whose status schema is narrower
 * than impersync's prunes the rest): a status that differs only elsewhere is caught by the next
 * discovery, STATUS_MODE_TTL_MS later.
 */
function keptStatus(res: KubeResult<RawApplication>, status: Record<string, unknown>): boolean {
  if (!res.ok) return true;
  const marks = (s: unknown) => {
    const x = (s ?? {}) as ApplicationStatus;
    return JSON.stringify([
      x.reconciledAt,
      x.sync?.status,
      x.health?.status,
      x.operationState?.phase,
      x.operationState?.startedAt,
      x.operationState?.finishedAt,
    ]);
  };
  return marks(res.value['status']) === marks(status);
}

async function writeOnce(
  control: ControlClient,
  raw: WatchedObject,
  status: Record<string, unknown>,
  opts: StatusWriteOptions,
): Promise<KubeResult<RawApplication>> {
  const mode = modeOf(control);
  if (await mode.subresource(control)) {
    const res = await putStatus(control, raw, status);
    if (res.ok || res.error.code !== 404) return res;
    // 404: the Application is gone, or the CRD no longer has the subresource. Ask again.
    mode.forget();
    if (await mode.subresource(control)) return res;
    return patchStatus(control, raw, status, opts);
  }
  const res = await patchStatus(control, raw, status, opts);
  if (keptStatus(res, status)) return res;
  // The status did not stick: the CRD has gained a subresource since discovery was asked.
  mode.forget();
  if (!(await mode.subresource(control))) return res;
  // The patch went through (a new resourceVersion) without its status: write it onto that object.
  return res.ok ? putStatus(control, res.value, status) : res;
}

/**
 * Replaces the status with the object's resourceVersion (optimistic concurrency: a conflict is a
 * ConflictError the queue retries, never a blind overwrite): through the status subresource when
 * the CRD has one, else as a patch of the Application that carries only status. Returns the
 * updated object.
 */
export async function writeStatus(
  control: ControlClient,
  given: WatchedObject,
  status: ApplicationStatus,
  opts: StatusWriteOptions = {},
): Promise<RawApplication> {
  const raw = onTopOfSideWrites(control, given);
  const { namespace = '', name } = raw.metadata;
  let res = await writeOnce(control, raw, fitStatus(status), opts);
  // Still refused for its size (a smaller etcd limit than the budget assumes): without any sync
  // results, so that a finished operation is recorded rather than run again.
  if (!res.ok && isTooLarge(res.error.code, res.error.message))
    res = await writeOnce(control, raw, fitStatus(status, 0), opts);
  return valueOf(`Application ${namespace}/${name}: writing status failed`, res);
}

// Side writes: a status written beside a refresh or an operation step that is under way (the
// memory-budget condition of budget-waits.ts, while the job waits). The job read the Application
// before it; its own status write, computed from that read, would be a conflict and the whole job
// would run again. Instead it is written on top of the side write's result: what it replaces is
// exactly what it read plus the side write's condition, which its status (computed without it)
// takes away, as it would have without the side write. A write by anyone else meanwhile is still a
// conflict.
const sideWrites = new WeakMap<ControlClient, Map<string, { on: Set<string>; result: RawApplication }>>();

function keyOf(raw: WatchedObject): string {
  return `${raw.metadata.namespace ?? ''}/${raw.metadata.name}`;
}

/** `raw`, or the result of the side writes made on it since it was read. */
export function onTopOfSideWrites<T extends WatchedObject>(control: ControlClient, raw: T): T | RawApplication {
  const rv = (raw.metadata as { resourceVersion?: string }).resourceVersion;
  const entry = sideWrites.get(control)?.get(keyOf(raw));
  return rv !== undefined && entry?.on.has(rv) ? entry.result : raw;
}

/** Side writes of this Application are of no more use (its jobs ended). */
export function forgetSideWrites(control: ControlClient, key: string): void {
  sideWrites.get(control)?.delete(key);
}

/** Writes `status` beside a job under way (see above); a conflict is a ConflictError, nothing recorded. */
export async function writeStatusBeside(
  control: ControlClient,
  raw: WatchedObject,
  status: ApplicationStatus,
): Promise<RawApplication> {
  const base = onTopOfSideWrites(control, raw);
  const stored = await writeStatus(control, base, status);
  const rv = (base.metadata as { resourceVersion?: string }).resourceVersion;
  if (rv === undefined) return stored;
  let byKey = sideWrites.get(control);
  if (!byKey) sideWrites.set(control, (byKey = new Map()));
  const key = keyOf(stored);
  const prev = byKey.get(key);
  const on = new Set(prev && prev.result.metadata.resourceVersion === rv ? prev.on : []);
  on.add(rv);
  byKey.set(key, { on, result: stored });
  return stored;
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
