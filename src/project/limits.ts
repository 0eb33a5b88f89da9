// An AppProject's own limits (spec §9), checked before anything touches the cluster: the source
// repository, the destination, and every rendered resource against the allow and deny lists and,
// for namespaced ones, the destinations. Pure: values in, every violation out (none = allowed).
// Messages are Argo CD's, word for word; `detail` says which rule or entry decided.
import type { AppProject } from '../api/appproject.ts';
import type { Application } from '../api/application.ts';
import type { KubeObject, SourceLocation } from '../api/manifest.ts';
import { groupOf } from '../api/manifest.ts';
import { permittedAsProjectCluster } from './clusters.ts';
import { destinationDecision } from './destinations.ts';
import { repositoryURLRefusal } from '../repository/url.ts';
import { sourceRepoDecision } from './repos.ts';
import { resourceDecision, type ResourceListRule } from './resources.ts';

export type ProjectRule = 'sourceRepos' | 'destinations' | ResourceListRule | 'apiResource';

export interface ResourceId {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

export interface ProjectViolation {
  rule: ProjectRule;
  /** Argo CD's message for this violation. */
  message: string;
  /** Which entry or list decided, and why ("not in clusterResourceWhitelist"). */
  detail: string;
  /** The resource concerned (resource checks only). */
  resource?: ResourceId;
  location?: SourceLocation;
}

/** The cluster the destination resolved to (impersonation/destination.ts's resolveDestination). */
export interface ResolvedCluster {
  server: string;
  name: string;
}

/** The clusters scoped to the project (project/clusters.ts projectClusters), for permitOnlyProjectScopedClusters. */
export type ProjectClusters = readonly ResolvedCluster[];

/** Argo CD's IsDestinationPermitted: the destinations match, and permitOnlyProjectScopedClusters holds. */
function destinationPermitted(
  project: AppProject,
  cluster: ResolvedCluster,
  namespace: string,
  scoped: ProjectClusters,
): { permitted: boolean; because: string } {
  const d = destinationDecision(project.spec.destinations, { server: cluster.server, name: cluster.name, namespace });
  if (d.permitted && !permittedAsProjectCluster(project, scoped, cluster))
    return {
      permitted: false,
      because: `permitOnlyProjectScopedClusters is set and no cluster Secret scoped to project '${project.metadata.name}' has this name or server`,
    };
  return d;
}

/** Is this group/kind namespaced? true/false from discovery, undefined when the API server does not know it. */
export type IsNamespaced = (group: string, kind: string) => boolean | undefined;

/** spec.source(s) repositories and spec.destination against sourceRepos and destinations. */
export function checkApplicationLimits(
  project: AppProject,
  app: Application,
  cluster: ResolvedCluster,
  projectClusters: ProjectClusters = [],
): ProjectViolation[] {
  const p = project.metadata.name;
  const out: ProjectViolation[] = [];
  const sources =
    app.spec.sources && app.spec.sources.length > 0 ? app.spec.sources : app.spec.source ? [app.spec.source] : [];
  for (const source of sources) {
    // Beyond Argo CD: a URL that leads elsewhere than it reads is not judged at all.
    const refusal = repositoryURLRefusal(source.repoURL);
    if (refusal) {
      out.push({
        rule: 'sourceRepos',
        message: `application repo ${source.repoURL} is refused: ${refusal}`,
        detail: 'a repository URL must say which repository it is',
      });
      continue;
    }
    const d = sourceRepoDecision(project.spec.sourceRepos, source.repoURL);
    if (!d.permitted) {
      out.push({
        rule: 'sourceRepos',
        message: `application repo ${source.repoURL} is not permitted in project '${p}'`,
        detail: d.because,
      });
    }
  }
  const namespace = app.spec.destination?.namespace ?? '';
  const d = destinationPermitted(project, cluster, namespace, projectClusters);
  if (!d.permitted) {
    // Argo CD names the cluster as the Application did: by name when it used spec.destination.name.
    const shown = app.spec.destination?.name ? cluster.name : cluster.server;
    out.push({
      rule: 'destinations',
      message: `application destination server '${shown}' and namespace '${namespace}' do not match any of the allowed destinations in project '${p}'`,
      detail: d.because,
    });
  }
  return out;
}

export interface ResourceLimitsInput {
  project: AppProject;
  cluster: ResolvedCluster;
  /** spec.destination.namespace: where namespaced objects without a namespace go. */
  destinationNamespace: string | undefined;
  objects: readonly (KubeObject | { object: KubeObject; location?: SourceLocation | undefined })[];
  /** Discovery's answer; when it does not know a kind, a CustomResourceDefinition among the objects may. */
  isNamespaced: IsNamespaced;
  /** The clusters scoped to the project, for permitOnlyProjectScopedClusters. */
  projectClusters?: ProjectClusters | undefined;
  /**
   * Objects of a kind neither knows that are not checked yet (SkipDryRunOnMissingResource=true:
   * gitops-engine checks permissions only for kinds the server serves; the step that applies the
   * object, once its CRD is served, checks it).
   */
  unknownKindDeferred?: ((o: KubeObject) => boolean) | undefined;
}

/** Every resource against the allow/deny lists, and namespaced ones against destinations (Argo CD's validateSyncPermissions). */
export function checkResourceLimits(input: ResourceLimitsInput): ProjectViolation[] {
  const p = input.project.metadata.name;
  const items = input.objects.map(toItem);
  const scopeFromCRDs = crdScopes(items.map((i) => i.object));
  const out: ProjectViolation[] = [];
  for (const { object, location } of items) {
    const group = groupOf(object.apiVersion);
    const kind = object.kind;
    const namespaced = input.isNamespaced(group, kind) ?? scopeFromCRDs.get(`${group}/${kind}`);
    const ownNamespace = object.metadata.namespace ?? '';
    const base = { group, kind, name: object.metadata.name };
    const at = location ? { location } : {};
    if (namespaced === undefined) {
      if (input.unknownKindDeferred?.(object)) continue;
      out.push({
        rule: 'apiResource',
        message: `failed to get API resource info for ${group}/${kind}: unable to verify permissions`,
        detail: `the destination cluster does not serve ${kind}${group ? `.${group}` : ''} and no CustomResourceDefinition among the manifests defines it`,
        resource: { ...base, namespace: ownNamespace },
        ...at,
      });
      continue;
    }
    const namespace = namespaced ? ownNamespace || input.destinationNamespace || '' : '';
    const resource = { ...base, namespace };
    const gk = resourceDecision(input.project.spec, group, kind, object.metadata.name, namespaced);
    if (!gk.permitted) {
      out.push({
        rule: gk.rule ?? 'apiResource',
        message: `resource ${group}:${kind} is not permitted in project ${p}`,
        detail: gk.because,
        resource,
        ...at,
      });
      continue;
    }
    if (namespaced) {
      const d = destinationPermitted(input.project, input.cluster, namespace, input.projectClusters ?? []);
      if (!d.permitted) {
        out.push({
          rule: 'destinations',
          message: `namespace ${namespace} is not permitted in project '${p}'`,
          detail: d.because,
          resource,
          ...at,
        });
      }
    }
  }
  return out;
}

type Item = { object: KubeObject; location?: SourceLocation | undefined };

function toItem(o: KubeObject | Item): Item {
  // A KubeObject has an apiVersion; a rendered item ({object, location}) does not.
  return typeof (o as { apiVersion?: unknown }).apiVersion === 'string' ? { object: o as KubeObject } : (o as Item);
}

/** One line per violation, naming the resource and the rule: for logs, conditions and the CLI. */
export function describeViolation(v: ProjectViolation): string {
  const r = v.resource;
  const who = r ? `${r.group ? `${r.group}/` : ''}${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}: ` : '';
  return `${who}${v.message} (${v.rule}: ${v.detail})`;
}

/** group/kind → namespaced?, from CustomResourceDefinitions among the objects (CRD and CRs in one app). */
function crdScopes(objects: readonly KubeObject[]): Map<string, boolean> {
  const scopes = new Map<string, boolean>();
  for (const o of objects) {
    if (o.kind !== 'CustomResourceDefinition' || groupOf(o.apiVersion) !== 'apiextensions.k8s.io') continue;
    const spec = o.spec as { group?: unknown; scope?: unknown; names?: { kind?: unknown } } | undefined;
    if (typeof spec?.group === 'string' && typeof spec.names?.kind === 'string') {
      scopes.set(`${spec.group}/${spec.names.kind}`, spec.scope !== 'Cluster');
    }
  }
  return scopes;
}
