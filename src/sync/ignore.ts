// ignoreDifferences, as Argo CD applies it: the Application's `spec.ignoreDifferences` and
// argocd-cm's `resource.customizations.ignoreDifferences.*` (settings.ts) name fields by JSON
// pointer, jq path expression or owning field manager, for a group and kind (globs) and optionally
// a name and namespace (util/argo/normalizers/diff_normalizer.go). In the comparison those fields
// are removed from both the live object and what applying would leave; with
// RespectIgnoreDifferences=true a sync applies the live values of those fields instead of Git's
// (controller/sync.go normalizeTargetResources), so it neither changes nor takes them.
// resource.compareoptions' ignoreAggregatedRoles leaves out an aggregated ClusterRole's rules.
import type { KubeObject } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import { globMatch } from '../impersonation/glob.ts';
import type { JqRunner } from './jq/runner.ts';
import type { KnownTypeField } from './known-types.ts';
import { normalizeKnownTypes } from './known-types.ts';
import { ElementFinder, NameFinder, fieldSetsOf, ownedValues, withoutFieldsOf } from './managed-fields.ts';

export interface IgnoreRule {
  /** Glob; '' is the core group. */
  group: string;
  /** Glob. */
  kind: string;
  name?: string | undefined;
  namespace?: string | undefined;
  jsonPointers: readonly string[];
  jqPathExpressions: readonly string[];
  managedFieldsManagers: readonly string[];
}

export interface DiffRules {
  rules: readonly IgnoreRule[];
  /** resource.compareoptions ignoreAggregatedRoles. */
  ignoreAggregatedRoles: boolean;
  /** Runs jqPathExpressions; without one they are reported as errors (never silently skipped). */
  jq?: JqRunner | undefined;
  /** argocd-cm knownTypeFields: applied after the ignored fields are removed, as Argo CD does. */
  knownTypes?: readonly KnownTypeField[] | undefined;
  /** The bound of managedFieldsManagers' reads (managed-fields.ts MAX_READ_COST when not given). */
  maxReadCost?: number | undefined;
  /** The object whose managedFields managedFieldsManagers read, when not the live one given. */
  fieldsOf?: KubeObject | null | undefined;
}

export const NO_DIFF_RULES: DiffRules = { rules: [], ignoreAggregatedRoles: false };

type Path = Array<string | number>;

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The rules that apply to `obj` (Argo CD's ignoreNormalizer.Normalize match). */
export function rulesFor(rules: readonly IgnoreRule[], obj: KubeObject): IgnoreRule[] {
  const group = groupOf(obj.apiVersion);
  return rules.filter(
    (r) =>
      globMatch(r.group, group) &&
      globMatch(r.kind, obj.kind) &&
      (!r.name || r.name === obj.metadata.name) &&
      (!r.namespace || r.namespace === (obj.metadata.namespace ?? '')),
  );
}

/** RFC 6901 pointer to steps; null when it is not a pointer. */
export function pointerPath(pointer: string): Path | null {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return null;
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function step(value: unknown, key: string | number): unknown {
  if (Array.isArray(value)) {
    const i = typeof key === 'number' ? key : /^(0|[1-9]\d*)$/.test(key) ? Number(key) : -1;
    return i >= 0 ? value[i] : undefined;
  }
  return isRecord(value) ? value[String(key)] : undefined;
}

function getPath(doc: unknown, path: Path): unknown {
  let cur = doc;
  for (const k of path) {
    cur = step(cur, k);
    if (cur === undefined) return undefined;
  }
  return cur;
}

/** Removes the value at `path` in place (a missing path is no error, as Argo CD treats it). */
function removePath(doc: unknown, path: Path): void {
  if (path.length === 0) return;
  const parent = getPath(doc, path.slice(0, -1));
  const last = path[path.length - 1] as string | number;
  if (Array.isArray(parent)) {
    const i = typeof last === 'number' ? last : /^(0|[1-9]\d*)$/.test(last) ? Number(last) : -1;
    if (i >= 0 && i < parent.length) parent.splice(i, 1);
  } else if (isRecord(parent)) delete parent[String(last)];
}

/**
 * Sets `value` at `path` of `target` in place, the path read in `source`: a list index names the
 * element of the same `name` when the list's elements have names (as a strategic merge would).
 */
function setFrom(target: unknown, source: unknown, path: Path, value: unknown, names: NameFinder): void {
  let cur = target;
  let src = source;
  // The list `cur` is an element of, and where: a `name` set in it moves it in `names`.
  let parent: { list: unknown[]; i: number } | undefined;
  for (let i = 0; i < path.length; i++) {
    const key = path[i] as string | number;
    const lastStep = i === path.length - 1;
    if (Array.isArray(cur)) {
      const srcEl = step(src, key);
      const name = isRecord(srcEl) ? srcEl['name'] : undefined;
      const idx = typeof name === 'string' ? names.find(cur, name) : Number(key);
      if (idx < 0 || idx >= cur.length) {
        if (!lastStep || typeof name !== 'string') return;
        cur.push(structuredClone(value));
        names.appended(cur);
        return;
      }
      if (lastStep) {
        const before: unknown = cur[idx];
        cur[idx] = structuredClone(value);
        names.replaced(cur, idx, before, cur[idx]);
        return;
      }
      parent = { list: cur, i: idx };
      cur = cur[idx];
      src = srcEl;
    } else if (isRecord(cur)) {
      const k = String(key);
      const renamed = k === 'name' && parent ? { name: cur['name'] } : undefined;
      const next = step(src, key);
      if (lastStep) cur[k] = structuredClone(value);
      else if (!isRecord(cur[k]) && !Array.isArray(cur[k])) cur[k] = Array.isArray(next) ? [] : {};
      if (renamed && parent) names.replaced(parent.list, parent.i, renamed, cur);
      if (lastStep) return;
      parent = undefined;
      cur = cur[k];
      src = next;
    } else return;
  }
}

/** Paths as a trie: `add` is false for a path already added, or beneath one. */
class PathSet {
  readonly #root: PathNode = { next: new Map(), whole: false };

  add(path: Path): boolean {
    let node = this.#root;
    for (const step of path) {
      if (node.whole) return false;
      let next = node.next.get(step);
      if (!next) node.next.set(step, (next = { next: new Map(), whole: false }));
      node = next;
    }
    if (node.whole) return false;
    node.whole = true;
    return true;
  }
}

interface PathNode {
  next: Map<string | number, PathNode>;
  whole: boolean;
}

function isAggregatedRole(o: KubeObject | null): boolean {
  return (
    o !== null &&
    o.kind === 'ClusterRole' &&
    groupOf(o.apiVersion) === 'rbac.authorization.k8s.io' &&
    isRecord(o['aggregationRule'])
  );
}

export interface Normalized {
  live: KubeObject | null;
  predicted: KubeObject | null;
  /** jq expressions that failed (Argo CD logs and skips them); never fatal. */
  errors: string[];
  /** How long jq's worker took for them, in milliseconds (JqResult.ms). */
  jqMs?: number;
}

/**
 * `live` and `predicted` without the fields the rules ignore. `owners` is the live object whose
 * managedFields say who owns what (the live object itself).
 */
export async function normalizeIgnored(
  diff: DiffRules,
  live: KubeObject | null,
  predicted: KubeObject | null,
): Promise<Normalized> {
  const subject = predicted ?? live;
  if (!subject) return { live, predicted, errors: [] };
  const errors: string[] = [];
  let jqMs = 0;
  const rules = rulesFor(diff.rules, subject);
  const aggregated = diff.ignoreAggregatedRoles && isAggregatedRole(subject);
  // Only these two edit the pair in place (jq, managed fields and known types make copies of their
  // own): an object of 88,000 keys is not copied for rules that do not touch it.
  const edits = aggregated || rules.some((r) => r.jsonPointers.length > 0);
  let pair: Array<KubeObject | null> = edits
    ? [live && structuredClone(live), predicted && structuredClone(predicted)]
    : [live, predicted];
  if (aggregated) for (const o of pair) if (o) delete o['rules'];
  for (const rule of rules) {
    for (const pointer of rule.jsonPointers) {
      const path = pointerPath(pointer);
      if (path) for (const o of pair) if (o) removePath(o, path);
    }
    for (const expression of rule.jqPathExpressions) {
      if (!diff.jq) {
        errors.push(`jqPathExpressions ${expression}: no jq runner`);
        continue;
      }
      pair = await Promise.all(
        pair.map(async (o) => {
          if (!o) return o;
          const r = await (diff.jq as JqRunner).delete(o, expression);
          jqMs += r.ms ?? 0;
          if (r.ok && isRecord(r.value)) return r.value as KubeObject;
          if (!r.ok) errors.push(r.error);
          return o;
        }),
      );
    }
    if (rule.managedFieldsManagers.length)
      pair = withoutFieldsOf(pair, diff.fieldsOf ?? live, rule.managedFieldsManagers, diff.maxReadCost);
  }
  if (diff.knownTypes?.length)
    pair = pair.map((o) => {
      if (!o) return o;
      const n = normalizeKnownTypes(diff.knownTypes ?? [], o);
      // Argo CD logs it ("Failed to normalize ...") and compares what the normalizer left.
      if (n.error) errors.push(`known type fields of ${o.kind} ${o.metadata.name}: ${n.error}`);
      return n.object;
    });
  return { live: pair[0] ?? null, predicted: pair[1] ?? null, errors: [...new Set(errors)], jqMs };
}

/**
 * RespectIgnoreDifferences=true: `target` with the live values of every ignored field (and without
 * Git's value where the live object has none), so the apply leaves them as they are. Status is
 * never copied (Argo CD excludes it: it is the resource's own controller's).
 */
export async function respectIgnored(
  diff: DiffRules,
  target: KubeObject,
  live: KubeObject | null,
): Promise<KubeObject> {
  if (!live) return target;
  const rules = rulesFor(diff.rules, target);
  if (rules.length === 0) return target;
  let out: KubeObject = structuredClone(target);
  const liveValues: Array<[Path, unknown]> = [];
  const finder = new ElementFinder(); // live is only read
  // Each managedFields entry once however many rules name its manager, and each path it owns once
  // (nor beneath one already taken whole) however many entries own it.
  const walked = new Set<object>();
  const taken = new PathSet();
  for (const rule of rules) {
    for (const pointer of rule.jsonPointers) {
      const path = pointerPath(pointer);
      if (!path || path[0] === 'status' || path.length === 0) continue;
      removePath(out, path);
      const v = getPath(live, path);
      if (v !== undefined) liveValues.push([path, v]);
    }
    for (const expression of rule.jqPathExpressions) {
      if (!diff.jq) continue;
      const [del, paths] = await Promise.all([diff.jq.delete(out, expression), diff.jq.paths(live, expression)]);
      if (del.ok && isRecord(del.value)) out = del.value as KubeObject;
      if (paths.ok) for (const p of paths.value) if (p[0] !== 'status') liveValues.push([p, getPath(live, p)]);
    }
    for (const set of fieldSetsOf(live, rule.managedFieldsManagers)) {
      if (walked.has(set)) continue;
      walked.add(set);
      for (const [p, v] of ownedValues(live, set, { finder }))
        if (p[0] !== 'status' && p[0] !== 'metadata' && taken.add(p)) liveValues.push([p, v]);
    }
  }
  const names = new NameFinder();
  for (const [p, v] of liveValues) if (v !== undefined) setFrom(out, live, p, v, names);
  return out;
}
