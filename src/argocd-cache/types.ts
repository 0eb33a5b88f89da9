// The values Argo CD's application controller keeps in Redis for argocd-server, as TypeScript types
// written from Argo CD's Go definitions (pkg/apis/application/v1alpha1: ApplicationTree,
// ResourceNode, ResourceRef, ResourceDiff, ClusterInfo and what they hold) and their JSON tags. The
// property order of each interface is the Go struct's field order: encode.ts writes them in it.

export interface ResourceRef {
  group?: string;
  version?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
}

export interface InfoItem {
  name?: string;
  value?: string;
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
}

export interface ResourceNetworkingInfo {
  targetLabels?: Record<string, string>;
  targetRefs?: ResourceRef[];
  labels?: Record<string, string>;
  ingress?: LoadBalancerIngress[];
  externalURLs?: string[];
}

export interface NodeHealth {
  status?: string;
  message?: string;
}

/** ResourceRef inline, then the node's own fields. */
export interface ResourceNode extends ResourceRef {
  parentRefs?: ResourceRef[];
  info?: InfoItem[];
  networkingInfo?: ResourceNetworkingInfo;
  resourceVersion?: string;
  images?: string[];
  health?: NodeHealth;
  /** metav1.Time: RFC 3339, whole seconds, UTC. */
  createdAt?: string;
}

export interface ApplicationTree {
  nodes?: ResourceNode[];
  orphanedNodes?: ResourceNode[];
  /** HostInfo: impersync writes none (see docs/semantics.md). */
  hosts?: unknown[];
  shardsCount?: number;
}

export interface ResourceDiff {
  group?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  /** JSON of the target object, or "null". */
  targetState?: string;
  /** JSON of the live object, or "null". */
  liveState?: string;
  diff?: string;
  hook?: boolean;
  normalizedLiveState?: string;
  predictedLiveState?: string;
  resourceVersion?: string;
  modified?: boolean;
}

export interface ConnectionState {
  status: string;
  message: string;
  /** Go's field ModifiedAt, tagged `attemptedAt`; null when unset. */
  attemptedAt: string | null;
}

export interface ClusterCacheInfo {
  resourcesCount?: number;
  apisCount?: number;
  lastCacheSyncTime?: string;
}

export interface ClusterInfo {
  connectionState: ConnectionState;
  serverVersion?: string;
  cacheInfo: ClusterCacheInfo;
  applicationsCount: number;
  apiVersions?: string[];
}
