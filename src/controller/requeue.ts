// Which Applications a change of another object affects, so that exactly those are requeued
// (level-based: the reconciler re-reads everything; this only picks the keys).
import type { Cluster } from '../api/index.ts';

export interface AppIndexEntry {
  /** "namespace/name" */
  key: string;
  project: string;
  destination: { server?: string | undefined; name?: string | undefined };
}

/**
 * A project changed: its own Applications, and, when it is a global project (spec §7), the
 * Applications of every project that inherits from it. `inheritsFrom(p)` lists the global projects
 * project `p` inherits from under the current globalProjects setting.
 */
export function appsAffectedByProject(
  apps: Iterable<AppIndexEntry>,
  changedProject: string,
  inheritsFrom: (project: string) => readonly string[],
): string[] {
  const out: string[] = [];
  const memo = new Map<string, boolean>();
  for (const app of apps) {
    let hit = memo.get(app.project);
    if (hit === undefined) {
      hit = app.project === changedProject || inheritsFrom(app.project).includes(changedProject);
      memo.set(app.project, hit);
    }
    if (hit) out.push(app.key);
  }
  return out;
}

/**
 * A cluster Secret changed: the Applications whose destination resolves to that cluster before
 * or after the change (by server URL or by name), so that a rename or a new server moves them.
 */
export function appsAffectedByCluster(
  apps: Iterable<AppIndexEntry>,
  before: Cluster | undefined,
  after: Cluster | undefined,
): string[] {
  const servers = new Set<string>();
  const names = new Set<string>();
  for (const c of [before, after]) {
    if (!c) continue;
    servers.add(c.server);
    names.add(c.name);
  }
  const out: string[] = [];
  for (const app of apps) {
    const { server, name } = app.destination;
    if ((server && servers.has(server)) || (name && names.has(name))) out.push(app.key);
  }
  return out;
}

/** argocd-cm changed: settings (impersonation switch, global projects, timeouts) touch every Application. */
export function appsAffectedBySettings(apps: Iterable<AppIndexEntry>): string[] {
  return [...apps].map((a) => a.key);
}
