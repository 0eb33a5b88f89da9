// What is left of an object once the server's bookkeeping is removed, so that a dry-run result and
// a live object compare equal exactly when applying would change nothing. Defaults need no special
// case: the dry-run result already carries every default the live object has.
import type { KubeObject } from '../api/index.ts';
import { groupOf } from '../api/index.ts';

const SERVER_METADATA = [
  'managedFields',
  'resourceVersion',
  'uid',
  'creationTimestamp',
  'generation',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
];
const IGNORED_ANNOTATIONS = ['kubectl.kubernetes.io/last-applied-configuration'];

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * A copy without status (unless `keepStatus`: resource.compareoptions ignoreResourceStatusField),
 * server-set metadata, and annotations that only record how it was applied. Only what it changes
 * is copied (the object, its metadata and annotations); the rest (spec, data) is `obj`'s own, so
 * neither may be edited in place afterwards. A deep copy of an object of 88,000 keys held the
 * controller's event loop for tens of milliseconds, twice a comparison.
 */
export function normalizeForCompare(obj: KubeObject, opts: { keepStatus?: boolean } = {}): KubeObject {
  const copy: KubeObject = { ...obj, metadata: { ...obj.metadata } };
  if (!opts.keepStatus) delete copy['status'];
  const meta = copy.metadata as Record<string, unknown>;
  for (const k of SERVER_METADATA) delete meta[k];
  if (isRecord(meta['annotations'])) {
    const a = { ...meta['annotations'] };
    for (const k of IGNORED_ANNOTATIONS) delete a[k];
    if (Object.keys(a).length === 0) delete meta['annotations'];
    else meta['annotations'] = a;
  }
  if (isRecord(meta['labels']) && Object.keys(meta['labels']).length === 0) delete meta['labels'];
  return copy;
}

/** Structural equality of JSON values; object key order does not matter, array order does. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isRecord(a)) {
    if (!isRecord(b)) return false;
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

const MASK = '++++++++';

/**
 * Secret values never reach a diff: equal values show as the same mask on both sides, differing
 * values as masks of different lengths, so a change is visible and its content is not (as Argo CD).
 */
export function maskSecrets(
  live: KubeObject | null,
  predicted: KubeObject | null,
): { live: KubeObject | null; predicted: KubeObject | null } {
  const isSecret = (o: KubeObject | null) => o !== null && o.kind === 'Secret' && groupOf(o.apiVersion) === '';
  if (!isSecret(live) && !isSecret(predicted)) return { live, predicted };
  const l = live ? structuredClone(live) : null;
  const p = predicted ? structuredClone(predicted) : null;
  for (const field of ['data', 'stringData']) {
    const ld = l && isRecord(l[field]) ? l[field] : undefined;
    const pd = p && isRecord(p[field]) ? p[field] : undefined;
    const keys = new Set([...Object.keys(ld ?? {}), ...Object.keys(pd ?? {})]);
    for (const k of keys) {
      const same = ld?.[k] === pd?.[k];
      if (ld && k in ld) ld[k] = MASK;
      if (pd && k in pd) pd[k] = same ? MASK : MASK + '+';
    }
  }
  return { live: l, predicted: p };
}
