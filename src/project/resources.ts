// AppProject resource allow and deny lists (spec §9), with Argo CD's meaning
// (AppProject.IsGroupKindNamePermitted): group, kind (and, for cluster-scoped lists, an optional
// name) are Go filepath.Match patterns; the deny list wins.
// - Namespaced: namespaceResourceWhitelist absent → everything allowed; present but empty → nothing
//   allowed (Go tells a nil list from an empty one, and so do we: undefined vs []).
// - Cluster-scoped: clusterResourceWhitelist absent or empty → nothing allowed.
import type { AppProject, GroupKind } from '../api/appproject.ts';
import { pathMatch } from './pathmatch.ts';

export type ResourceListRule =
  'namespaceResourceWhitelist' | 'namespaceResourceBlacklist' | 'clusterResourceWhitelist' | 'clusterResourceBlacklist';

export interface ResourceDecision {
  permitted: boolean;
  /** The list that decided, when not permitted. */
  rule?: ResourceListRule;
  because: string;
}

type Spec = AppProject['spec'];

export function resourceDecision(
  spec: Spec,
  group: string,
  kind: string,
  name: string,
  namespaced: boolean,
): ResourceDecision {
  const white: ResourceListRule = namespaced ? 'namespaceResourceWhitelist' : 'clusterResourceWhitelist';
  const black: ResourceListRule = namespaced ? 'namespaceResourceBlacklist' : 'clusterResourceBlacklist';
  const whitelist = spec[white];
  const blacklist = spec[black];
  // Only the cluster-scoped lists look at names (Argo CD's ClusterResourceRestrictionItem.name).
  const find = (list: readonly GroupKind[]): GroupKind | undefined =>
    list.find((item) => matches(item, group, kind, namespaced ? undefined : name));

  if (namespaced ? whitelist !== undefined : true) {
    if (!whitelist || whitelist.length === 0) {
      const what = namespaced ? 'namespaced' : 'cluster-scoped';
      return { permitted: false, rule: white, because: `${white} is empty: no ${what} resource is allowed` };
    }
    if (!find(whitelist)) return { permitted: false, rule: white, because: `not in ${white}` };
  }
  const denied = blacklist && blacklist.length > 0 ? find(blacklist) : undefined;
  if (denied) return { permitted: false, rule: black, because: `matches ${black} entry ${describe(denied)}` };
  return {
    permitted: true,
    because:
      namespaced && whitelist === undefined
        ? `${white} is not set: all namespaced resources are allowed`
        : `in ${white}`,
  };
}

function matches(item: GroupKind, group: string, kind: string, name: string | undefined): boolean {
  if (!pathMatch(item.kind, kind) || !pathMatch(item.group ?? '', group)) return false;
  const namePattern = typeof item.name === 'string' ? item.name : '';
  return name === undefined || namePattern === '' || pathMatch(namePattern, name);
}

function describe(item: GroupKind): string {
  const name = typeof item.name === 'string' && item.name !== '' ? `, name: '${item.name}'` : '';
  return `{group: '${item.group ?? ''}', kind: '${item.kind}'${name}}`;
}
