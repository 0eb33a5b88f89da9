// The namespace CreateNamespace=true makes (controller/sync_namespace.go): with
// syncPolicy.managedNamespaceMetadata it carries those labels and annotations, applied server-side
// so the namespace's other labels and annotations stay, and is applied even when it exists.
import type { KubeObject } from '../api/index.ts';

export interface NamespaceMetadata {
  labels?: Record<string, string> | undefined;
  annotations?: Record<string, string> | undefined;
}

export function managedNamespace(name: string, metadata: NamespaceMetadata | undefined): KubeObject {
  const ns: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
  if (metadata) {
    if (metadata.labels && Object.keys(metadata.labels).length) ns.metadata.labels = { ...metadata.labels };
    // Argo CD marks it ServerSideApply=true (appendSSAAnnotation); impersync applies server-side anyway.
    ns.metadata.annotations = {
      ...(metadata.annotations ?? {}),
      'argocd.argoproj.io/sync-options': 'ServerSideApply=true',
    };
  }
  return ns;
}
