// Taking over objects another field manager applied, without leaving its fields behind: Argo CD
// applied them with client-side apply (manager `kubectl-client-side-apply`, or the one named by the
// Application's `argocd.argoproj.io/client-side-apply-migration-manager` annotation) or with its
// own server-side apply manager (`argocd-controller`). As gitops-engine does before its apply
// (sync_context.go performCSAUpgradeMigration, k8s csaupgrade), those managers' fields are handed
// to impersync's manager by a patch of metadata.managedFields, so the server-side apply that
// follows removes what Git no longer has. `ClientSideApplyMigration=false` turns it off.
import type { KubeObject } from '../api/index.ts';
import type { ManagedFieldsEntry } from './managed-fields.ts';
import { ElementFinder, NameFinder, managedFieldsOf, ownedValues, unionFields } from './managed-fields.ts';

export const CSA_MANAGER = 'kubectl-client-side-apply';
export const ARGOCD_SSA_MANAGER = 'argocd-controller';
export const ANNOTATION_CSA_MIGRATION_MANAGER = 'argocd.argoproj.io/client-side-apply-migration-manager';

/** The managers whose fields impersync takes over, given the Application's annotations. */
export function takeoverManagers(appAnnotations: Record<string, string> | undefined): string[] {
  const csa = appAnnotations?.[ANNOTATION_CSA_MIGRATION_MANAGER] || CSA_MANAGER;
  return [...new Set([csa, ARGOCD_SSA_MANAGER])];
}

function absorbed(e: ManagedFieldsEntry, managers: readonly string[], own: string): boolean {
  return e.manager !== undefined && e.manager !== own && managers.includes(e.manager) && !e.subresource;
}

/**
 * The JSON patch that hands `managers`' fields on the main resource to `own` (its Apply entry,
 * made when missing), guarded by the live resourceVersion; null when there is nothing to hand over.
 */
export function takeoverPatch(live: KubeObject, own: string, managers: readonly string[], now: Date): unknown[] | null {
  const entries = managedFieldsOf(live);
  const taken = entries.filter((e) => absorbed(e, managers, own));
  if (taken.length === 0) return null;
  const mine = entries.find((e) => e.manager === own && e.operation === 'Apply' && !e.subresource);
  let fields = mine?.fieldsV1 ?? {};
  for (const e of taken) fields = unionFields(fields, e.fieldsV1 ?? {});
  const next: ManagedFieldsEntry = {
    manager: own,
    operation: 'Apply',
    apiVersion: mine?.apiVersion ?? live.apiVersion,
    time: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    fieldsType: 'FieldsV1',
    fieldsV1: fields,
  };
  const rest = entries.filter((e) => e !== mine && !taken.includes(e));
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: live.metadata.resourceVersion },
    { op: 'replace', path: '/metadata/managedFields', value: [next, ...rest] },
  ];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * `path` (read in `from`) in `to`: a list index follows the element of the same FieldsV1 key or
 * value (`keys`, as the server pairs them), else of the same `name`, else the same index. With the
 * map or list in `to` that holds its last step, to remove it from; null when `to` has no such path.
 */
function translate(
  path: Array<string | number>,
  keys: Array<string | undefined>,
  from: unknown,
  to: unknown,
  finder: ElementFinder,
  names: NameFinder,
): { path: Array<string | number>; parent: unknown } | null {
  const out: Array<string | number> = [];
  let a = from;
  let b = to;
  let parent: unknown = undefined;
  for (const [step, key] of path.entries()) {
    parent = b;
    if (typeof key === 'number') {
      if (!Array.isArray(a) || !Array.isArray(b)) return null;
      const el = a[key];
      const name = isRecord(el) ? el['name'] : undefined;
      const by = keys[step];
      const j = by !== undefined ? finder.find(b, by) : typeof name === 'string' ? names.find(b, name) : key;
      if (j < 0 || j >= b.length) return null;
      out.push(j);
      a = el;
      b = b[j];
    } else {
      if (!isRecord(a) || !isRecord(b) || !(key in b)) return null;
      out.push(key);
      a = a[key];
      b = b[key];
    }
  }
  return { path: out, parent };
}

/**
 * What applying would leave once the takeover is done: `predicted` (a dry-run made before it)
 * without the taken-over managers' fields that the desired object no longer has.
 */
export function afterTakeover(
  predicted: KubeObject,
  target: KubeObject,
  live: KubeObject,
  own: string,
  managers: readonly string[],
): KubeObject {
  const taken = managedFieldsOf(live).filter((e) => absorbed(e, managers, own) && isRecord(e.fieldsV1));
  if (taken.length === 0) return predicted;
  const out = structuredClone(predicted);
  // What to remove, by the map or list that holds it (each once), with how deep that is.
  const removals = new Map<object, { depth: number; keys: Set<string | number> }>();
  // Nothing changes until the removals: one index of each list serves every path.
  const finder = new ElementFinder();
  const names = new NameFinder();
  for (const e of taken)
    for (const [path, , keys = []] of ownedValues(live, e.fieldsV1 as Record<string, unknown>, {
      finder,
      elements: true,
      keys: true,
    })) {
      if (path[0] === 'metadata' && (path[1] === 'managedFields' || path[1] === 'resourceVersion')) continue;
      if (translate(path, keys, live, target, finder, names) !== null) continue; // still desired
      const at = translate(path, keys, live, out, finder, names);
      if (!at || at.path.length === 0 || (!isRecord(at.parent) && !Array.isArray(at.parent))) continue;
      let group = removals.get(at.parent);
      if (!group) removals.set(at.parent, (group = { depth: at.path.length, keys: new Set() }));
      group.keys.add(at.path[at.path.length - 1] as string | number);
    }
  // The deepest first, so that no removal moves what a later one names; each list's elements in
  // one pass (by number: sorted as text, index 10 came before 9).
  for (const [parent, { keys }] of [...removals].sort((x, y) => y[1].depth - x[1].depth)) {
    if (Array.isArray(parent)) {
      let kept = 0;
      for (let i = 0; i < parent.length; i++) if (!keys.has(i)) parent[kept++] = parent[i] as unknown;
      parent.length = kept;
    } else for (const k of keys) delete (parent as Record<string, unknown>)[String(k)];
  }
  return out;
}
