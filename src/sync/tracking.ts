// Resource tracking with Argo CD's annotation method: `argocd.argoproj.io/tracking-id` set to
// `<app>:<group>/<kind>:<namespace>/<name>`. The namespace of a cluster-scoped object is the
// Application's destination namespace, as Argo CD writes it.
import type { KubeObject } from '../api/index.ts';
import { groupOf } from '../api/index.ts';

export const ANNOTATION_TRACKING_ID = 'argocd.argoproj.io/tracking-id';

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

/** A copy of `obj` carrying its tracking annotation. */
export function withTrackingId(obj: KubeObject, app: string, destinationNamespace: string): KubeObject {
  const copy = structuredClone(obj);
  copy.metadata.annotations = {
    ...(copy.metadata.annotations ?? {}),
    [ANNOTATION_TRACKING_ID]: trackingIdFor(obj, app, destinationNamespace),
  };
  return copy;
}

/** The Application a live object says it belongs to, or null when it carries no valid tracking id. */
export function trackedApp(obj: KubeObject | null | undefined): string | null {
  const raw = obj?.metadata?.annotations?.[ANNOTATION_TRACKING_ID];
  if (typeof raw !== 'string') return null;
  return parseTrackingId(raw)?.app ?? null;
}
