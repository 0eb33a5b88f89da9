// What the sync does with the server's field ownership (metadata.managedFields, read by
// api/managed-fields.ts), two things Argo CD does with it: ignoreDifferences' managedFieldsManagers
// (fields another manager owns are left out of the comparison, util/argo/managedfields) and taking
// over objects another manager applied (their fields handed to impersync's manager, gitops-engine's
// csaupgrade step).
import type { KubeObject } from '../api/index.ts';
import { ElementFinder, isRecord, managedFieldsOf } from '../api/managed-fields.ts';
import type { FieldSet } from '../api/managed-fields.ts';

export { managedFieldsOf, ownedValues } from '../api/managed-fields.ts';
export type { ManagedFieldsEntry } from '../api/managed-fields.ts';

function isLeaf(set: FieldSet): boolean {
  return Object.keys(set).every((k) => k === '.');
}

/**
 * Removes from `value` (in place) every field the set names: a leaf field entirely, a list element
 * the set owns as a whole (`.`) entirely, and of a map only what its children name.
 */
function removeOwned(value: unknown, set: FieldSet, finder = new ElementFinder()): void {
  if (isRecord(value)) {
    for (const [step, sub] of Object.entries(set)) {
      const name = step.slice(2);
      if (!step.startsWith('f:') || !isRecord(sub) || !(name in value)) continue;
      if (isLeaf(sub)) delete value[name];
      else removeOwned(value[name], sub, finder);
    }
  } else if (Array.isArray(value)) {
    const drop: number[] = [];
    for (const [step, sub] of Object.entries(set)) {
      if (step === '.' || step.startsWith('f:') || !isRecord(sub)) continue;
      const i = finder.find(value, step);
      if (i < 0) continue;
      if (isLeaf(sub) || '.' in sub) drop.push(i);
      else removeOwned(value[i], sub, finder);
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
