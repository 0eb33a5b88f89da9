// What the reconciler needs from the modules below it, as narrow interfaces: rendering (source/),
// project limits (project/), comparison, sync and deletion (sync/). adapters.ts binds them to the
// real modules; keeping them narrow keeps the reconciler readable and each binding in one place.
// Every destination-touching port receives the one DestinationClient built for the Application's
// identity, and nothing else (ARCHITECTURE.md, the identity rule).
import type { AppProject, Application, Cluster, KubeObject, SyncOperation } from '../api/index.ts';
import type { DestinationClient } from '../kube/types.ts';
import type { HealthAssessor } from '../sync/index.ts';
import type { ResourceStatus } from './status.ts';

export interface Rendered {
  /** The commit the objects come from. */
  revision: string;
  /** Directory, Kustomize, Helm. */
  sourceType: string;
  objects: KubeObject[];
}

export interface RenderPort {
  /**
   * Desired objects of the Application at `revision` (default: spec targetRevision). `hard` skips
   * caches. `sourceRepos` (the AppProject's) is where kustomize remote bases may come from.
   */
  render(
    app: Application,
    opts: { revision?: string | undefined; hard?: boolean; sourceRepos: readonly string[] },
  ): Promise<Rendered>;
}

export interface LimitsPort {
  /** spec §9, Application level (sourceRepos, destinations): messages, empty when permitted. */
  checkApplication(project: AppProject, app: Application, cluster: Cluster): string[];
  /** spec §9, per object (resource allow and deny lists, destinations); scopes come from discovery through `client`. */
  checkObjects(
    client: DestinationClient,
    project: AppProject,
    app: Application,
    cluster: Cluster,
    objects: readonly KubeObject[],
  ): Promise<string[]>;
}

export interface ComparisonOutcome {
  syncStatus: 'Synced' | 'OutOfSync' | 'Unknown';
  resources: ResourceStatus[];
  health: { status: string; message?: string };
  /** Errors met while comparing (a Forbidden dry-run names the ServiceAccount). */
  errors: string[];
  /** A health check that failed, as a ComparisonError message; it leaves the sync status alone. */
  healthError?: string;
}

export interface SyncOutcome {
  phase: 'Succeeded' | 'Failed' | 'Error';
  message: string;
  resources: Array<Record<string, unknown>>;
}

export interface ComparePort {
  /** `health`: how live objects are assessed (argocd-cm customizations); default the built-in checks. */
  compare(
    client: DestinationClient,
    app: Application,
    objects: readonly KubeObject[],
    health?: HealthAssessor,
  ): Promise<ComparisonOutcome>;
}

export interface SyncPort {
  /**
   * `signal` aborts when the operation is terminated (operationState.phase Terminating).
   * `beforeWave` runs before each wave after the first; a message it returns ends the sync Failed
   * with it, nothing more applied (the ServiceAccount check, sa-check.ts).
   */
  sync(
    client: DestinationClient,
    app: Application,
    objects: readonly KubeObject[],
    operation: SyncOperation,
    signal?: AbortSignal,
    beforeWave?: () => Promise<string | null>,
    health?: HealthAssessor,
  ): Promise<SyncOutcome>;
  /** Deletes every resource the Application manages (finalizer), as its identity. */
  deleteResources(
    client: DestinationClient,
    app: Application,
  ): Promise<{ ok: boolean; message: string; remaining: number }>;
}

export interface Ports {
  /** Releases what the ports hold (a child renderer process). */
  close?(): Promise<void>;
  render: RenderPort;
  limits: LimitsPort;
  compare: ComparePort;
  sync: SyncPort;
}
