// The server's field ownership (metadata.managedFields, FieldsV1) read as paths into an object, for
// two things Argo CD does with it: ignoreDifferences' managedFieldsManagers (fields another manager
// owns are left out of the comparison, util/argo/managedfields) and taking over objects another
// manager applied (their fields handed to impersync's manager, gitops-engine's csaupgrade step).
//
// FieldsV1 is a trie: `f:<name>` a field of a map, `k:<json>` the list element whose key fields
// have those values, `v:<json>` a set element, `i:<n>` an index, `.` the node itself.
import type { KubeObject } from '../api/index.ts';

type FieldSet = Record<string, unknown>;

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  apiVersion?: string;
  subresource?: string;
  fieldsType?: string;
  fieldsV1?: FieldSet;
  time?: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function managedFieldsOf(obj: KubeObject | null | undefined): ManagedFieldsEntry[] {
  const mf = (obj?.metadata as { managedFields?: unknown } | undefined)?.managedFields;
  return Array.isArray(mf) ? (mf.filter(isRecord) as ManagedFieldsEntry[]) : [];
}

function jsonEq(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The element of `list` that a `k:`, `v:` or `i:` step names, or -1. */
function elementIndex(list: unknown[], step: string): number {
  const body = step.slice(2);
  if (step.startsWith('i:')) {
    const i = Number(body);
    return Number.isInteger(i) && i >= 0 && i < list.length ? i : -1;
  }
  let want: unknown;
  try {
    want = JSON.parse(body);
  } catch {
    return -1;
  }
  if (step.startsWith('v:')) return list.findIndex((x) => jsonEq(x, want));
  if (!isRecord(want)) return -1;
  return list.findIndex((x) => isRecord(x) && Object.entries(want).every(([k, v]) => jsonEq(x[k], v)));
}

function isLeaf(set: FieldSet): boolean {
  return Object.keys(set).every((k) => k === '.');
}

/**
 * Removes from `value` (in place) every field the set names: a leaf field entirely, a list element
 * the set owns as a whole (`.`) entirely, and of a map only what its children name.
 */
function removeOwned(value: unknown, set: FieldSet): void {
  if (isRecord(value)) {
    for (const [step, sub] of Object.entries(set)) {
      const name = step.slice(2);
      if (!step.startsWith('f:') || !isRecord(sub) || !(name in value)) continue;
      if (isLeaf(sub)) delete value[name];
      else removeOwned(value[name], sub);
    }
  } else if (Array.isArray(value)) {
    const drop: number[] = [];
    for (const [step, sub] of Object.entries(set)) {
      if (step === '.' || step.startsWith('f:') || !isRecord(sub)) continue;
      const i = elementIndex(value, step);
      if (i < 0) continue;
      if (isLeaf(sub) || '.' in sub) drop.push(i);
      else removeOwned(value[i], sub);
    }
    for (const i of [...new Set(drop)].sort((a, b) => b - a)) value.splice(i, 1);
  }
}

/**
 * Copies of `objects` without the fields that any of `managers` owns in `live`'s managedFields
 * (the main resource and its subresources alike, as Argo CD reads them).
 */
export function withoutFieldsOf<T extends KubeObject | null>(
  objects: T[],
  live: KubeObject | null,
  managers: readonly string[],
): T[] {
  const sets = managedFieldsOf(live)
    .filter((e) => e.manager !== undefined && managers.includes(e.manager) && isRecord(e.fieldsV1))
    .map((e) => e.fieldsV1 as FieldSet);
  if (sets.length === 0) return objects;
  return objects.map((o) => {
    if (o === null) return o;
    const copy = structuredClone(o);
    for (const s of sets) removeOwned(copy, s);
    return copy;
  });
}

/** The value at each path the set names that `from` holds, as [path, value] pairs (paths as in jq). */
export function ownedValues(from: KubeObject, set: FieldSet): Array<[Array<string | number>, unknown]> {
  const out: Array<[Array<string | number>, unknown]> = [];
  const walk = (value: unknown, node: FieldSet, path: Array<string | number>) => {
    const children = Object.keys(node).filter((k) => k !== '.');
    if (children.length === 0) {
      out.push([path, structuredClone(value)]);
      return;
    }
    for (const step of children) {
      const sub = node[step];
      if (!isRecord(sub)) continue;
      if (step.startsWith('f:') && isRecord(value) && step.slice(2) in value)
        walk(value[step.slice(2)], sub, [...path, step.slice(2)]);
      else if (!step.startsWith('f:') && Array.isArray(value)) {
        const i = elementIndex(value, step);
        if (i >= 0) walk(value[i], sub, [...path, i]);
      }
    }
  };
  walk(from, set, []);
  return out;
}

/** The sets of `managers` in `live` (any operation, main resource only), for ownedValues. */
export function fieldSetsOf(live: KubeObject | null, managers: readonly string[]): FieldSet[] {
  return managedFieldsOf(live)
    .filter((e) => e.manager !== undefined && managers.includes(e.manager) && !e.subresource && isRecord(e.fieldsV1))
    .map((e) => e.fieldsV1 as FieldSet);
}

/** The union of two FieldsV1 tries. */
export function unionFields(a: FieldSet, b: FieldSet): FieldSet {
  const out: FieldSet = structuredClone(a);
  for (const [k, v] of Object.entries(b)) {
    const mine = out[k];
    out[k] = isRecord(mine) && isRecord(v) ? unionFields(mine, v) : structuredClone(v);
  }
  return out;
}
