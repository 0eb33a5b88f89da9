// The tenant an Application's work counts for, when the controller's workers and the renderer's
// slots are shared between tenants (renderer/fair.ts): its AppProject. The project is what an admin
// makes for a tenant (its repositories, destinations and the ServiceAccounts it syncs as) and what a
// tenant cannot multiply: a destination namespace would not do, since one tenant's Applications may
// spread over as many namespaces as its project allows, each a share of its own. An Application
// that names a project which does not exist, or which does not admit the Application's namespace
// (spec.sourceNamespaces), counts for its own namespace instead, so that naming another tenant's
// project, or inventing names, takes no turn of anyone else's and buys no extra share.
import { projectName } from '../api/index.ts';
import type { AppProject } from '../api/index.ts';
import { globMatch } from '../impersonation/glob.ts';
import type { WatchedObject } from '../kube/watch.ts';

export function tenantOf(
  app: Pick<WatchedObject, 'metadata'> & { readonly [k: string]: unknown },
  project: (name: string) => AppProject | undefined,
  controlNamespace: string,
): string {
  const namespace = app.metadata.namespace ?? '';
  const name = projectName({ spec: (app['spec'] ?? {}) as { project?: string } });
  const p = project(name);
  const admits =
    p !== undefined &&
    (namespace === controlNamespace || (p.spec.sourceNamespaces ?? []).some((g) => globMatch(g, namespace)));
  return admits ? name : `namespace:${namespace}`;
}
