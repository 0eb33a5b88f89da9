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

/** Why a walk of managedFields stopped: its steps would read the object's lists too many times. */
export class FieldsTooComplexError extends Error {
  override name = 'FieldsTooComplexError';
}

/**
 * Whether `e` says a live object is too costly to read: FieldsTooComplexError, or the RangeError
 * of a copy (structuredClone) of an object nested deeper than the stack allows.
 */
export function tooComplex(e: unknown): e is Error {
  return e instanceof FieldsTooComplexError || e instanceof RangeError;
}

/**
 * What one walk may spend reading managedFields, in units: one per list element indexed or moved,
 * one per 20 characters of the keys it indexes, one per step of a set it reads, one per step of
 * each path it returns. The server's own managedFields cost a few times the size of the object (a
 * Deployment with 20,000 env entries 400,000-560,000); crafted ones naming a list by many kinds of key, changing
 * a list between thousands of entries, or naming thousands of deep paths would cost its size
 * thousands of times.
 */
export const MAX_READ_COST = 2_000_000;

/** How many kinds of key (sets of key field names) one list may be named by in one walk. */
export const MAX_KEY_KINDS = 8;

/** How deep a walk may go: deeper objects are refused, not read by a recursion that would overflow. */
export const MAX_DEPTH = 200;

/**
 * The running cost of one or several walks, shared to bound them together; `limit` is the bound
 * (MAX_READ_COST when not given).
 */
export interface ReadCost {
  count: number;
  limit?: number;
}

function charge(cost: ReadCost, units: number): void {
  cost.count += units;
  const limit = cost.limit ?? MAX_READ_COST;
  if (cost.count > limit)
    throw new FieldsTooComplexError(`its managedFields cost more to read than the bound of ${limit} allows`);
}

function tooDeep(depth: number): void {
  if (depth > MAX_DEPTH) throw new FieldsTooComplexError(`its managedFields go deeper than ${MAX_DEPTH} levels`);
}

/**
 * Finds the list elements that FieldsV1 steps name (`k:`, `v:`, `i:`) during one walk, of one
 * object or several. Each list is indexed once per kind of key, so naming n elements of a list of
 * n costs n, not n² (a tenant's Deployment with 20,000 env entries held the event loop for 41 s
 * scanned step by step). A list changed during the walk is forgotten (`forget`) before it is read
 * again; so is anything a walk changed inside a list's elements, by using a new finder. Throws
 * FieldsTooComplexError past MAX_READ_COST, or past MAX_KEY_KINDS on one list.
 */
export class ElementFinder {
  readonly #indexes = new Map<unknown[], Map<string, Map<string, number>>>();
  readonly #cost: ReadCost;

  constructor(cost: ReadCost = { count: 0 }) {
    this.#cost = cost;
  }

  /** What this finder's walks have cost so far, with those sharing it. */
  get cost(): ReadCost {
    return this.#cost;
  }

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
    if (!step.startsWith('k:') || !isRecord(want)) return -1;
    const names = Object.keys(want).sort();
    // An element has a key only with every key field present; each field compares as JSON.
    const keyOf = (x: unknown): string | undefined =>
      isRecord(x) && names.every((k) => x[k] !== undefined)
        ? JSON.stringify(names.map((k) => JSON.stringify(x[k])))
        : undefined;
    return this.#index(list, `k:${JSON.stringify(names)}`, keyOf).get(keyOf(want) ?? '') ?? -1;
  }

  /** Drops what is known of `list`, after it changed. */
  forget(list: unknown[]): void {
    this.#indexes.delete(list);
  }

  #index(list: unknown[], kind: string, keyOf: (x: unknown) => string | undefined): Map<string, number> {
    let byKind = this.#indexes.get(list);
    if (!byKind) {
      byKind = new Map();
      this.#indexes.set(list, byKind);
    }
    let index = byKind.get(kind);
    if (!index) {
      if (kind !== 'v' && byKind.size - (byKind.has('v') ? 1 : 0) >= MAX_KEY_KINDS)
        throw new FieldsTooComplexError(`its managedFields name one list by more than ${MAX_KEY_KINDS} kinds of key`);
      charge(this.#cost, list.length);
      index = new Map();
      for (let i = 0; i < list.length; i++) {
        const key = keyOf(list[i]);
        if (key === undefined) continue;
        charge(this.#cost, Math.floor(key.length / 20));
        if (!index.has(key)) index.set(key, i);
      }
      byKind.set(kind, index);
    }
    return index;
  }
}

/**
 * Finds list elements by their `name` field, for paths read in one object and followed in another
 * (the element of the same name, as a strategic merge pairs them). Each list is indexed once and
 * kept up to date through `replaced` and `appended`.
 */
export class NameFinder {
  readonly #indexes = new Map<unknown[], Map<string, number[]>>();

  /** The index of the first element of `list` named `name`, or -1. */
  find(list: unknown[], name: string): number {
    return this.#of(list).get(name)?.[0] ?? -1;
  }

  /** Records that `list[i]`, once `before`, is now `after`. */
  replaced(list: unknown[], i: number, before: unknown, after: unknown): void {
    const was = nameOf(before);
    const is = nameOf(after);
    if (was === is) return;
    const index = this.#of(list);
    if (was !== undefined) {
      const at = index.get(was) ?? [];
      const k = sortedIndex(at, i);
      if (at[k] === i) at.splice(k, 1);
    }
    if (is !== undefined) {
      const at = index.get(is);
      if (at) at.splice(sortedIndex(at, i), 0, i);
      else index.set(is, [i]);
    }
  }

  /** Records that `list[list.length - 1]` was just pushed. */
  appended(list: unknown[]): void {
    this.replaced(list, list.length - 1, undefined, list[list.length - 1]);
  }

  #of(list: unknown[]): Map<string, number[]> {
    let index = this.#indexes.get(list);
    if (!index) {
      index = new Map();
      for (let i = 0; i < list.length; i++) {
        const name = nameOf(list[i]);
        if (name === undefined) continue;
        const at = index.get(name);
        if (at) at.push(i);
        else index.set(name, [i]);
      }
      this.#indexes.set(list, index);
    }
    return index;
  }
}

function nameOf(el: unknown): string | undefined {
  const name = isRecord(el) ? el['name'] : undefined;
  return typeof name === 'string' ? name : undefined;
}

/** Where `i` is or would go in the ascending `list`. */
function sortedIndex(list: number[], i: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] as number) < i) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function isLeaf(set: FieldSet): boolean {
  return Object.keys(set).every((k) => k === '.');
}

/**
 * What `nodes` (the sets that name `value`) name inside it: each field name of a map, or index of
 * a list, with the sets beneath it. Steps that name one element in several ways (its key, its
 * index, its value, one key spelled two ways) come together, so each child is reached once.
 */
function childrenOf(
  value: unknown,
  nodes: FieldSet[],
  finder: ElementFinder,
  keys?: Map<number, string>,
): Map<string | number, FieldSet[]> {
  const next = new Map<string | number, FieldSet[]>();
  for (const node of nodes)
    for (const [step, sub] of Object.entries(node)) {
      // A unit per step, found or not: a set of 60,000 fields is walked in some 300 ms.
      charge(finder.cost, 1);
      if (step === '.' || !isRecord(sub)) continue;
      let at: string | number = -1;
      if (step.startsWith('f:')) {
        if (isRecord(value) && step.slice(2) in value) at = step.slice(2);
      } else if (Array.isArray(value)) {
        at = finder.find(value, step);
        // The first key or value that names the element, to find it by in another object.
        if (keys && at !== -1 && !step.startsWith('i:') && !keys.has(at)) keys.set(at, step);
      }
      if (at === -1) continue;
      const subs = next.get(at);
      if (subs) subs.push(sub);
      else next.set(at, [sub]);
    }
  return next;
}

/**
 * Removes from `value` (in place) every field the sets name: a leaf field entirely, a list element
 * a set owns as a whole (`.`) entirely, and of a map only what its children name. `nodes` are the
 * sets that name `value`.
 */
function removeOwned(value: unknown, nodes: FieldSet[], finder: ElementFinder, depth: number): void {
  tooDeep(depth);
  const next = childrenOf(value, nodes, finder);
  if (isRecord(value)) {
    for (const [name, subs] of next as Map<string, FieldSet[]>) {
      if (subs.some(isLeaf)) delete value[name];
      else removeOwned(value[name], subs, finder, depth + 1);
    }
  } else if (Array.isArray(value)) {
    const drop = new Set<number>();
    for (const [i, subs] of next as Map<number, FieldSet[]>) {
      if (subs.some((sub) => isLeaf(sub) || '.' in sub)) drop.add(i);
      else removeOwned(value[i], subs, finder, depth + 1);
    }
    if (drop.size === 0) return;
    // In one pass: a list of n elements owned one by one costs n, not n².
    charge(finder.cost, value.length);
    let kept = 0;
    for (let i = 0; i < value.length; i++) if (!drop.has(i)) value[kept++] = value[i];
    value.length = kept;
    finder.forget(value);
  }
}

/**
 * Copies of `objects` without the fields that any of `managers` owns in `live`'s managedFields
 * (the main resource and its subresources alike, as Argo CD reads them, one entry after another).
 * `limit`: the walks' bound (MAX_READ_COST when not given). Throws FieldsTooComplexError.
 */
export function withoutFieldsOf<T extends KubeObject | null>(
  objects: T[],
  live: KubeObject | null,
  managers: readonly string[],
  limit?: number,
): T[] {
  const sets = managedFieldsOf(live)
    .filter((e) => e.manager !== undefined && managers.includes(e.manager) && isRecord(e.fieldsV1))
    .map((e) => e.fieldsV1 as FieldSet);
  if (sets.length === 0) return objects;
  const cost: ReadCost = limit === undefined ? { count: 0 } : { count: 0, limit };
  return objects.map((o) => {
    if (o === null) return o;
    const copy = structuredClone(o);
    removeFieldSets(copy, sets, cost);
    return copy;
  });
}

/**
 * Removes from `value` (in place) what each of `sets` names, one after another. `cost` bounds the
 * walks together. Throws FieldsTooComplexError.
 */
export function removeFieldSets(value: unknown, sets: FieldSet[], cost: ReadCost = { count: 0 }): void {
  // A finder for each set: the one before may have changed what the lists' elements hold.
  for (const s of sets) removeOwned(value, [s], new ElementFinder(cost), 0);
}

/**
 * The value at each path the set names that `from` holds, as [path, value] pairs (paths as in jq),
 * each path once however many steps name its element. The values are `from`'s own, not copies.
 * `elements`: also the path of each list element with a `name` that the set owns as such (`.`),
 * before its fields.
 * `keys`: with each path, the FieldsV1 step that names each of its list elements (`k:{...}` or
 * `v:...`; undefined for a map's field, or an element named only by its index), to find the same
 * element in another object by; with `elements`, every element owned as such, not only those with
 * a `name`.
 * `finder` may be shared by the walks of one object. Throws FieldsTooComplexError.
 */
export function ownedValues(
  from: KubeObject,
  set: FieldSet,
  opts: { finder?: ElementFinder; elements?: boolean; keys?: boolean } = {},
): Array<[Array<string | number>, unknown, Array<string | undefined>?]> {
  const out: Array<[Array<string | number>, unknown, Array<string | undefined>?]> = [];
  const finder = opts.finder ?? new ElementFinder();
  const keep = (path: Array<string | number>, value: unknown, keys: Array<string | undefined>) => {
    // What is kept: the path, a step per level (and its keys as many).
    charge(finder.cost, opts.keys ? 2 * path.length : path.length);
    out.push(opts.keys ? [path, value, keys] : [path, value]);
  };
  // `nodes`: the sets that name `value` (childrenOf).
  const walk = (value: unknown, nodes: FieldSet[], path: Array<string | number>, keys: Array<string | undefined>) => {
    tooDeep(path.length);
    if (nodes.some(isLeaf)) return keep(path, value, keys);
    // An element the takeover can follow into Git's object: by its key, or else by its name.
    const followed = opts.keys
      ? keys[keys.length - 1] !== undefined
      : isRecord(value) && typeof value['name'] === 'string';
    if (opts.elements && followed && typeof path[path.length - 1] === 'number' && nodes.some((n) => '.' in n))
      keep(path, value, keys);
    const steps = opts.keys && Array.isArray(value) ? new Map<number, string>() : undefined;
    for (const [at, subs] of childrenOf(value, nodes, finder, steps))
      walk(
        typeof at === 'number' ? (value as unknown[])[at] : (value as Record<string, unknown>)[at],
        subs,
        [...path, at],
        opts.keys ? [...keys, typeof at === 'number' ? steps?.get(at) : undefined] : keys,
      );
  };
  walk(from, [set], [], []);
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
