// argocd-cm's resource filter (util/settings/resources_filter.go): kinds excluded are neither
// compared, applied, pruned nor watched, and each desired object of one is named in an
// ExcludedResourceWarning. Argo CD always excludes its core list; the exclusions its install
// ships in argocd-cm (manifests/base/config/argocd-cm.yaml) apply here while argocd-cm does not
// set `resource.exclusions` itself, as they would for an Argo CD installed from its manifests.
import { globMatch } from '../impersonation/glob.ts';

export interface FilteredResource {
  apiGroups: readonly string[];
  kinds: readonly string[];
  clusters: readonly string[];
}

export interface ResourceFilter {
  exclusions: readonly FilteredResource[];
  inclusions: readonly FilteredResource[];
}

/** Argo CD's coreExcludedResources: excluded whatever argocd-cm says. */
export const CORE_EXCLUSIONS: readonly FilteredResource[] = [
  { apiGroups: ['events.k8s.io', 'metrics.k8s.io'], kinds: [], clusters: [] },
  { apiGroups: [''], kinds: ['Event'], clusters: [] },
  { apiGroups: ['coordination.k8s.io'], kinds: ['Lease'], clusters: [] },
];

/** The `resource.exclusions` Argo CD's install manifests put in argocd-cm (v3). */
export const INSTALL_DEFAULT_EXCLUSIONS: readonly FilteredResource[] = [
  { apiGroups: ['', 'discovery.k8s.io'], kinds: ['Endpoints', 'EndpointSlice'], clusters: [] },
  { apiGroups: ['coordination.k8s.io'], kinds: ['Lease'], clusters: [] },
  {
    apiGroups: ['authentication.k8s.io', 'authorization.k8s.io'],
    kinds: [
      'SelfSubjectReview',
      'TokenReview',
      'LocalSubjectAccessReview',
      'SelfSubjectAccessReview',
      'SelfSubjectRulesReview',
      'SubjectAccessReview',
    ],
    clusters: [],
  },
  { apiGroups: ['certificates.k8s.io'], kinds: ['CertificateSigningRequest'], clusters: [] },
  { apiGroups: ['cert-manager.io'], kinds: ['CertificateRequest'], clusters: [] },
  { apiGroups: ['cilium.io'], kinds: ['CiliumIdentity', 'CiliumEndpoint', 'CiliumEndpointSlice'], clusters: [] },
  {
    apiGroups: ['kyverno.io', 'reports.kyverno.io', 'wgpolicyk8s.io'],
    kinds: [
      'PolicyReport',
      'ClusterPolicyReport',
      'EphemeralReport',
      'ClusterEphemeralReport',
      'AdmissionReport',
      'ClusterAdmissionReport',
      'BackgroundScanReport',
      'ClusterBackgroundScanReport',
      'UpdateRequest',
    ],
    clusters: [],
  },
];

function matches(r: FilteredResource, group: string, kind: string, cluster: string): boolean {
  return (
    (r.apiGroups.length === 0 || r.apiGroups.some((g) => globMatch(g, group))) &&
    (r.kinds.length === 0 || r.kinds.some((k) => k === '*' || k === kind)) &&
    matchesCluster(r, cluster)
  );
}

function matchesCluster(r: FilteredResource, cluster: string): boolean {
  return r.clusters.length === 0 || r.clusters.some((c) => globMatch(c, cluster));
}

/** Argo CD's IsExcludedResource, its table of inclusions and exclusions included. */
export function isExcludedResource(filter: ResourceFilter, group: string, kind: string, cluster: string): boolean {
  if ([...CORE_EXCLUSIONS, ...filter.exclusions].some((r) => matches(r, group, kind, cluster))) return true;
  if (filter.inclusions.some((r) => matches(r, group, kind, cluster))) return false;
  return filter.inclusions.some((r) => matchesCluster(r, cluster));
}

/** Argo CD's ExcludedResourceWarning message (controller/state.go). */
export function excludedMessage(group: string, kind: string, name: string): string {
  return `Resource ${group}/${kind} ${name} is excluded in the settings`;
}
