// Which Applications a change of another object affects, so that exactly those are requeued
// (level-based: the reconciler re-reads everything; this only picks the keys).
import type { Cluster } from '../api/index.ts';
import type { RepositoryConfig } from '../api/repository.ts';
import { configAffects, hostOf, isSSHURL } from '../repository/access.ts';
import { knownHostsFor } from '../repository/known-hosts.ts';

export interface AppIndexEntry {
  /** "namespace/name" */
  key: string;
  project: string;
  destination: { server?: string | undefined; name?: string | undefined };
  /** Every repository the Application reads: its sources' repoURLs and its charts' dependency repositories. */
  repoURLs?: readonly string[] | undefined;
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

/** A repository Secret or credential template changed: the Applications reading a repository it matched before or after. */
export function appsAffectedByRepository(
  apps: Iterable<AppIndexEntry>,
  before: RepositoryConfig | undefined,
  after: RepositoryConfig | undefined,
): string[] {
  const configs = [before, after].filter((c): c is RepositoryConfig => c !== undefined);
  return [...apps]
    .filter((a) => (a.repoURLs ?? []).some((u) => configs.some((c) => configAffects(c, u))))
    .map((a) => a.key);
}

/** argocd-ssh-known-hosts-cm changed: the Applications reading an SSH repository whose host's lines changed. */
export function appsAffectedByKnownHosts(apps: Iterable<AppIndexEntry>, before: string, after: string): string[] {
  return [...apps]
    .filter((a) =>
      (a.repoURLs ?? []).some((u) => {
        if (!isSSHURL(u) && !/^ssh:\/\//i.test(u)) return false;
        const h = hostOf(u);
        return h !== undefined && knownHostsFor(before, h.host, h.port) !== knownHostsFor(after, h.host, h.port);
      }),
    )
    .map((a) => a.key);
}

/** argocd-tls-certs-cm changed: the Applications reading a repository on a server name whose certificates changed. */
export function appsAffectedByTLSCerts(
  apps: Iterable<AppIndexEntry>,
  before: Readonly<Record<string, string>>,
  after: Readonly<Record<string, string>>,
): string[] {
  const changed = new Set([...Object.keys(before), ...Object.keys(after)].filter((h) => before[h] !== after[h]));
  return [...apps]
    .filter((a) => (a.repoURLs ?? []).some((u) => !isSSHURL(u) && changed.has(hostOf(u)?.host ?? '')))
    .map((a) => a.key);
}

/**
 * argocd-gpg-keys-cm changed: the Applications whose project, or a global project it inherits
 * from, asks for commit signatures (signatureKeys, or sourceIntegrity) are verified again.
 */
export function appsAffectedByGPGKeys(
  apps: Iterable<AppIndexEntry>,
  verifies: (project: string) => boolean,
  inheritsFrom: (project: string) => string[],
): string[] {
  return [...apps].filter((a) => [a.project, ...inheritsFrom(a.project)].some(verifies)).map((a) => a.key);
}
