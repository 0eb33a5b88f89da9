// Resource tracking with Argo CD's three methods (argocd-cm `application.resourceTrackingMethod`,
// util/argo/resource_tracking.go): `annotation` (the default) writes and reads
// `argocd.argoproj.io/tracking-id` set to `<app>:<group>/<kind>:<namespace>/<name>`; `label` writes
// and reads the label `application.instanceLabelKey` (default `app.kubernetes.io/instance`) set to
// the app's name; `annotation+label` writes both and reads the annotation. With an `installationID`
// the annotation methods also write `argocd.argoproj.io/installation-id` and claim only objects
// carrying the same one. The namespace of a cluster-scoped object is the Application's destination
// namespace, as Argo CD writes it.
import type { KubeObject } from '../api/index.ts';
import { groupOf } from '../api/index.ts';

export const ANNOTATION_TRACKING_ID = 'argocd.argoproj.io/tracking-id';
export const ANNOTATION_INSTALLATION_ID = 'argocd.argoproj.io/installation-id';
export const DEFAULT_INSTANCE_LABEL_KEY = 'app.kubernetes.io/instance';

export type TrackingMethod = 'annotation' | 'label' | 'annotation+label';

export interface TrackingConfig {
  method: TrackingMethod;
  /** application.instanceLabelKey. */
  labelKey: string;
  /** argocd-cm `installationID`; '' when unset. */
  installationID: string;
}

export const DEFAULT_TRACKING: TrackingConfig = {
  method: 'annotation',
  labelKey: DEFAULT_INSTANCE_LABEL_KEY,
  installationID: '',
};

export interface TrackingId {
  app: string;
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

export function formatTrackingId(t: TrackingId): string {
  return `${t.app}:${t.group}/${t.kind}:${t.namespace}/${t.name}`;
}

/** Parses a tracking id; null when it does not have Argo CD's three parts. */
export function parseTrackingId(value: string): TrackingId | null {
  const first = value.indexOf(':');
  if (first < 0) return null;
  const second = value.indexOf(':', first + 1);
  if (second < 0) return null;
  const gk = value.slice(first + 1, second).split('/');
  const nn = value.slice(second + 1).split('/');
  if (gk.length !== 2 || nn.length !== 2) return null;
  return {
    app: value.slice(0, first),
    group: gk[0] ?? '',
    kind: gk[1] ?? '',
    namespace: nn[0] ?? '',
    name: nn[1] ?? '',
  };
}

/**
 * The name Argo CD tracks an Application by: its name when it lives in the controller's namespace,
 * else `<namespace>_<name>` (Applications in any namespace).
 */
export function appInstanceName(
  app: { metadata: { name: string; namespace?: string | undefined } },
  controllerNamespace: string,
): string {
  const ns = app.metadata.namespace;
  return !ns || ns === controllerNamespace ? app.metadata.name : `${ns}_${app.metadata.name}`;
}

export function trackingIdFor(obj: KubeObject, app: string, destinationNamespace: string): string {
  const ns =
    typeof obj.metadata.namespace === 'string' && obj.metadata.namespace !== ''
      ? obj.metadata.namespace
      : destinationNamespace;
  return formatTrackingId({
    app,
    group: groupOf(obj.apiVersion),
    kind: obj.kind,
    namespace: ns,
    name: obj.metadata.name,
  });
}

/** Argo CD's TruncateLabel: at most 63 characters, ending in a letter or digit. */
export function truncateLabel(value: string): string {
  let v = value.slice(0, 63);
  while (v.length > 1 && !/[a-zA-Z0-9]$/.test(v)) v = v.slice(0, -1);
  return v;
}

/**
 * A copy of `obj` carrying its tracking marks, as the configured method writes them. Only its
 * metadata is copied (the marks are set there, in new annotation and label maps); the rest is
 * `obj`'s, which is never edited in place (what edits an object, an apply or a normalization,
 * copies it first).
 */
export function withTrackingId(
  obj: KubeObject,
  app: string,
  destinationNamespace: string,
  tracking: TrackingConfig = DEFAULT_TRACKING,
): KubeObject {
  const copy: KubeObject = { ...obj, metadata: { ...obj.metadata } };
  if (tracking.method !== 'label') {
    const annotations: Record<string, string> = { ...(copy.metadata.annotations ?? {}) };
    annotations[ANNOTATION_TRACKING_ID] = trackingIdFor(obj, app, destinationNamespace);
    if (tracking.installationID) annotations[ANNOTATION_INSTALLATION_ID] = tracking.installationID;
    else delete annotations[ANNOTATION_INSTALLATION_ID];
    copy.metadata.annotations = annotations;
  }
  if (tracking.method !== 'annotation') {
    // The label method writes the name as it is; annotation+label truncates it (Argo CD's SetAppInstance).
    const value = tracking.method === 'label' ? app : truncateLabel(app);
    copy.metadata.labels = { ...(copy.metadata.labels ?? {}), [tracking.labelKey]: value };
  }
  return copy;
}

/** The tracking annotation of a live object, when its installation id (if one is configured) matches. */
function annotationId(obj: KubeObject, tracking: TrackingConfig): TrackingId | null {
  const annotations = obj.metadata?.annotations;
  if (tracking.installationID && annotations?.[ANNOTATION_INSTALLATION_ID] !== tracking.installationID) return null;
  const raw = annotations?.[ANNOTATION_TRACKING_ID];
  return typeof raw === 'string' ? parseTrackingId(raw) : null;
}

/** The Application a live object says it belongs to, or null when it carries no valid mark. */
export function trackedApp(
  obj: KubeObject | null | undefined,
  tracking: TrackingConfig = DEFAULT_TRACKING,
): string | null {
  if (!obj?.metadata) return null;
  if (tracking.method === 'label') {
    const label = obj.metadata.labels?.[tracking.labelKey];
    return typeof label === 'string' && label !== '' ? label : null;
  }
  return annotationId(obj, tracking)?.app ?? null;
}

/**
 * Argo CD's isSelfReferencedObj (controller/state.go): an object with no desired counterpart whose
 * tracking id names a different object (an annotation copied onto it) is not the app's. The label
 * method carries no such facts, so it is always the app's.
 */
export function selfReferenced(live: KubeObject, tracking: TrackingConfig): boolean {
  if (tracking.method === 'label') return true;
  const id = annotationId(live, tracking);
  if (!id) return true;
  const ns = live.metadata.namespace ?? '';
  return (
    (ns === '' || ns === id.namespace) &&
    id.name === live.metadata.name &&
    id.group === groupOf(live.apiVersion) &&
    id.kind === live.kind
  );
}
