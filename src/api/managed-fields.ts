// The server's field ownership (metadata.managedFields, FieldsV1) read as paths into an object.
// Read by the sync (ignoreDifferences' managedFieldsManagers, taking over another manager's fields,
// sync/managed-fields.ts) and by the remembered dry-runs (whether what an apply set still holds,
// kube/dry-run-memo.ts).
//
// FieldsV1 is a trie: `f:<name>` a field of a map, `k:<json>` the list element whose key fields
// have those values, `v:<json>` a set element, `i:<n>` an index, `.` the node itself.
import type { KubeObject } from './manifest.ts';

export type FieldSet = Record<string, unknown>;

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  apiVersion?: string;
  subresource?: string;
  fieldsType?: string;
  fieldsV1?: FieldSet;
  time?: string;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function managedFieldsOf(obj: KubeObject | null | undefined): ManagedFieldsEntry[] {
  const mf = (obj?.metadata as { managedFields?: unknown } | undefined)?.managedFields;
  return Array.isArray(mf) ? (mf.filter(isRecord) as ManagedFieldsEntry[]) : [];
}

/**
 * Finds the list elements that FieldsV1 steps name (`k:`, `v:`, `i:`), for one walk of one object:
 * each list is indexed once per kind of key, so a list of n elements costs n, not n² (an object of
 * 20,000 keyed elements took 41 s scanned step by step). The object may not change during the walk
 * except inside the elements found.
 */
export class ElementFinder {
  readonly #indexes = new Map<unknown[], Map<string, Map<string, number>>>();

  /** The first element of `list` that `step` names, or -1. */
  find(list: unknown[], step: string): number {
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
    if (step.startsWith('v:')) return this.#index(list, 'v', (x) => JSON.stringify(x)).get(JSON.stringify(want)) ?? -1;
    if (!isRecord(want)) return -1;
    const keys = Object.keys(want).sort();
    // An element names a key only with every key field present, each compared as JSON.
    const keyOf = (x: unknown): string | undefined =>
      isRecord(x) && keys.every((k) => x[k] !== undefined)
        ? JSON.stringify(keys.map((k) => JSON.stringify(x[k])))
        : undefined;
    return this.#index(list, `k:${JSON.stringify(keys)}`, keyOf).get(keyOf(want) ?? '') ?? -1;
  }

  #index(list: unknown[], kind: string, keyOf: (x: unknown) => string | undefined): Map<string, number> {
    let byKind = this.#indexes.get(list);
    if (!byKind) {
      byKind = new Map();
      this.#indexes.set(list, byKind);
    }
    let index = byKind.get(kind);
    if (!index) {
      index = new Map();
      for (let i = 0; i < list.length; i++) {
        const key = keyOf(list[i]);
        if (key !== undefined && !index.has(key)) index.set(key, i);
      }
      byKind.set(kind, index);
    }
    return index;
  }
}

/** The value at each path the set names that `from` holds, as [path, value] pairs (paths as in jq). */
export function ownedValues(from: KubeObject, set: FieldSet): Array<[Array<string | number>, unknown]> {
  const out: Array<[Array<string | number>, unknown]> = [];
  const finder = new ElementFinder();
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
        const i = finder.find(value, step);
        if (i >= 0) walk(value[i], sub, [...path, i]);
      }
    }
  };
  walk(from, set, []);
  return out;
}
