// A Kubernetes object as rendered from Git or read from a cluster: only apiVersion, kind and
// metadata.name are known to exist; everything else is carried through untouched.
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

/** Where a rendered object came from, for error messages ("guestbook/deploy.yaml, document 2"). */
export interface SourceLocation {
  file: string;
  document: number;
}

/** `<group>/<kind>`, group empty for the core API ("/Service", "apps/Deployment"). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** Identity of an object for matching desired against live: group, kind, namespace, name. */
export function objectKey(o: {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string | undefined };
}): string {
  return `${groupOf(o.apiVersion)}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}
