// structured-merge-diff's operations on a value and its schema (its typed package): validate (what
// FromUnstructured checks), the set of fields a value sets (ToFieldSet), removing a set of fields
// (RemoveItems), merging one value onto another (Merge, the right side winning: associative lists
// merged by key, sets by value, atomic lists and maps replaced, structs and granular maps merged
// field by field) and the fields one value has and the other has not (Compare's Removed). Each
// follows the Go walk, corner cases included (see test/sync/smd/typed.test.ts).
import type { Path, PathElement, Value } from './path.ts';
import { canonicalJson, elementKey, elementString, keyElement } from './path.ts';
import type { Atom, ListType, MapType, Scalar, Schema, TypeRef } from './schema.ts';
import { resolve } from './schema.ts';
import { FieldSet } from './set.ts';

/** A value absent from its parent (Go's nil value.Value), unlike `null`, a present null. */
type Maybe = Value | undefined;

interface ValidationError {
  path: string;
  message: string;
}

export class SmdError extends Error {
  readonly errors: readonly ValidationError[];
  constructor(errors: readonly ValidationError[]) {
    const one = (e: ValidationError) => (e.path ? `${e.path}: ${e.message}` : e.message);
    super(
      errors.length === 1
        ? one(errors[0] as ValidationError)
        : ['errors:', ...errors.map((e) => `  ${one(e)}`)].join('\n'),
    );
    this.errors = errors;
  }
}

const err = (message: string): ValidationError[] => [{ path: '', message }];
const prefixed = (errs: ValidationError[], prefix: string): ValidationError[] =>
  errs.map((e) => ({ path: prefix + e.path, message: e.message }));

function isMap(v: Maybe): v is { [k: string]: Value } {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
function isScalar(v: Maybe): boolean {
  return typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean';
}

type Picked = 'all' | 'scalar' | 'list' | 'map';

/** deduceAtom: the part of the atom the value's kind selects; a null or mismatched value keeps all. */
function deduce(a: Atom, v: Maybe): Picked {
  if (v === undefined || v === null) return 'all';
  if (isScalar(v)) return a.scalar !== undefined ? 'scalar' : 'all';
  if (Array.isArray(v)) return a.list ? 'list' : 'all';
  return a.map ? 'map' : 'all';
}

/** Go's Atom.Equals on two deduced atoms: the same members. */
function sameDeduced(a: Atom, p: Picked, q: Picked): boolean {
  const members = (x: Picked): string =>
    x !== 'all'
      ? x
      : [a.scalar !== undefined ? 'scalar' : '', a.list ? 'list' : '', a.map ? 'map' : ''].filter(Boolean).join();
  return members(p) === members(q);
}

/** handleAtom's order: map, then scalar, then list. */
function pick(a: Atom, p: Picked): { map: MapType } | { scalar: Scalar } | { list: ListType } | undefined {
  if ((p === 'all' || p === 'map') && a.map) return { map: a.map };
  if ((p === 'all' || p === 'scalar') && a.scalar !== undefined) return { scalar: a.scalar };
  if ((p === 'all' || p === 'list') && a.list) return { list: a.list };
  return undefined;
}

function typeName(tr: TypeRef): string {
  return tr.named ?? 'inlined type';
}

function resolveAtom(schema: Schema, tr: TypeRef | undefined): Atom | ValidationError[] {
  const a = resolve(schema, tr ?? {});
  return a ?? err(`schema error: no type found matching: ${typeName(tr ?? {})}`);
}

function invalidAtom(tr: TypeRef | undefined): ValidationError[] {
  return err(`schema error: invalid atom: ${tr?.named !== undefined ? `named type: ${tr.named}` : 'inlined'}`);
}

function goType(v: Value): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return '[]interface {}';
  if (isMap(v)) return 'map[string]interface {}';
  return typeof v;
}

function validateScalar(t: Scalar, v: Maybe, prefix: string): ValidationError[] {
  if (v === undefined || v === null) return [];
  switch (t) {
    case 'numeric':
      return typeof v === 'number' ? [] : err(`${prefix}expected numeric (int or float), got ${goType(v)}`);
    case 'string':
      return typeof v === 'string' ? [] : err(`${prefix}expected string, got ${canonicalJson(v)}`);
    case 'boolean':
      return typeof v === 'boolean' ? [] : err(`${prefix}expected boolean, got ${canonicalJson(v)}`);
    case 'untyped':
      return isScalar(v) ? [] : err(`${prefix}expected any scalar, got ${canonicalJson(v)}`);
  }
}

function keyDefault(schema: Schema, list: ListType, field: string): { value?: unknown; error?: string } {
  const a = resolve(schema, list.elementType);
  if (!a) return { error: 'invalid elementType for list' };
  if (!a.map) return { error: 'associative list may not have non-map types' };
  const f = a.map.fields.get(field);
  return f && f.default !== undefined ? { value: f.default } : {};
}

/** listItemToPathElement: an associative list's element as a key (its key fields) or a set's value. */
export function listItemElement(schema: Schema, list: ListType, child: Value): PathElement {
  if (list.relationship !== 'associative') throw new Error('invalid indexing of non-associative list');
  if (list.keys.length > 0) {
    if (child === null) throw new Error('associative list with keys may not have a null element');
    if (!isMap(child)) throw new Error('associative list with keys may not have non-map elements');
    const fields: Array<[string, Value]> = [];
    for (const name of list.keys) {
      if (Object.hasOwn(child, name)) fields.push([name, child[name] as Value]);
      else {
        const d = keyDefault(schema, list, name);
        if (d.error) throw new Error(`couldn't find default value for ${name}: ${d.error}`);
        if (d.value !== undefined && d.value !== null) fields.push([name, d.value as Value]);
      }
    }
    if (fields.length === 0)
      throw new Error(
        `associative list with keys has an element that omits all key fields ${JSON.stringify(list.keys)} (and doesn't have default values for any key fields)`,
      );
    return keyElement(fields);
  }
  if (isMap(child)) throw new Error("associative list without keys has an element that's a map type");
  if (Array.isArray(child)) throw new Error('not supported: associative list with lists as elements');
  if (child === null) throw new Error("associative list without keys has an element that's an explicit null");
  return { value: child };
}

function tryElement(schema: Schema, list: ListType, child: Value): PathElement | Error {
  try {
    return listItemElement(schema, list, child);
  } catch (e) {
    return e as Error;
  }
}

function fieldType(t: MapType, key: string): TypeRef | undefined {
  return t.fields.get(key)?.type ?? t.elementType;
}

// ---- validate -------------------------------------------------------------------------------

export function validate(schema: Schema, tr: TypeRef, v: Value, allowDuplicates = false): ValidationError[] {
  const walk = (tr: TypeRef | undefined, v: Maybe): ValidationError[] => {
    const a = resolveAtom(schema, tr);
    if (Array.isArray(a)) return a;
    const h = pick(a, deduce(a, v));
    if (!h) return invalidAtom(tr);
    if ('scalar' in h) return validateScalar(h.scalar, v, '');
    if ('list' in h) {
      if (v === null) return [];
      if (!Array.isArray(v)) return err(`expected list, got ${canonicalJson(v)}`);
      const errs: ValidationError[] = [];
      const seen = new Set<string>();
      for (let i = 0; i < v.length; i++) {
        const child = v[i] as Value;
        let pe: PathElement;
        if (h.list.relationship !== 'associative') pe = { index: i };
        else {
          const got = tryElement(schema, h.list, child);
          if (got instanceof Error) return [...errs, ...err(`element ${i}: ${got.message}`)];
          pe = got;
          const k = elementKey(pe);
          if (seen.has(k) && !allowDuplicates) errs.push(...err(`duplicate entries for key ${elementString(pe)}`));
          seen.add(k);
        }
        errs.push(...prefixed(walk(h.list.elementType, child), elementString(pe)));
      }
      return errs;
    }
    if (v === undefined) return err('expected map, got nil');
    if (v === null) return [];
    if (!isMap(v)) return err(`expected map, got ${canonicalJson(v)}`);
    const errs: ValidationError[] = [];
    for (const [key, val] of Object.entries(v)) {
      const pe = `.${key}`;
      const ft = fieldType(h.map, key);
      if (ft === undefined) {
        errs.push(...prefixed(err('field not declared in schema'), pe));
        break;
      }
      errs.push(...prefixed(walk(ft, val), pe));
    }
    return errs;
  };
  return walk(tr, v);
}

// ---- ToFieldSet -----------------------------------------------------------------------------

export function toFieldSet(schema: Schema, tr: TypeRef, v: Value): FieldSet {
  const set = new FieldSet();
  const errs: ValidationError[] = [];
  const walk = (tr: TypeRef | undefined, v: Maybe, path: PathElement[]): void => {
    const a = resolveAtom(schema, tr);
    if (Array.isArray(a)) return void errs.push(...a);
    const h = pick(a, deduce(a, v));
    if (!h) return void errs.push(...invalidAtom(tr));
    if ('scalar' in h) return set.insert(path);
    if ('list' in h) {
      if (h.list.relationship === 'atomic') return set.insert(path);
      if (!Array.isArray(v)) return;
      const pes = v.map((c) => tryElement(schema, h.list, c));
      const seen = new Set<string>();
      const dup = new Set<string>();
      for (const pe of pes) {
        const k = pe instanceof Error ? '' : elementKey(pe);
        if (seen.has(k)) {
          if (!dup.has(k)) {
            if (!(pe instanceof Error)) set.insert([...path, pe]);
            dup.add(k);
          }
        } else seen.add(k);
      }
      v.forEach((child, i) => {
        const pe = pes[i] as PathElement | Error;
        if (pe instanceof Error || dup.has(elementKey(pe))) return;
        walk(h.list.elementType, child, [...path, pe]);
        set.insert([...path, pe]);
      });
      return;
    }
    if (h.map.relationship === 'atomic') return set.insert(path);
    if (!isMap(v)) return;
    for (const [key, val] of Object.entries(v)) {
      const p = [...path, { field: key }];
      walk(fieldType(h.map, key), val, p);
      if (val === null || (isMap(val) && Object.keys(val).length === 0)) set.insert(p);
      else if (!h.map.fields.has(key)) set.insert(p);
    }
  };
  walk(tr, v, []);
  if (errs.length) throw new SmdError(errs);
  return set;
}

// ---- RemoveItems ----------------------------------------------------------------------------

/** The value less the fields in `toRemove`; what the walk empties becomes null, as in Go. */
export function removeItems(schema: Schema, tr: TypeRef, v: Value, toRemove: FieldSet): Value {
  const walk = (tr: TypeRef | undefined, v: Value, toRemove: FieldSet): Value => {
    const a = resolve(schema, tr ?? {});
    if (!a) return null;
    const h = pick(a, deduce(a, v));
    if (!h) return null;
    if ('scalar' in h) return v;
    if ('list' in h) {
      if (!Array.isArray(v) || v.length === 0 || h.list.relationship === 'atomic') return null;
      const out: Value[] = [];
      for (const item of v) {
        const pe = tryElement(schema, h.list, item);
        // Go ignores the error here (the value was validated): an empty element matches nothing.
        if (pe instanceof Error) {
          out.push(item);
          continue;
        }
        if (toRemove.has([pe])) continue;
        const sub = toRemove.withPrefix(pe);
        out.push(sub.empty() ? item : walk(h.list.elementType, item, sub));
      }
      return out.length ? out : null;
    }
    if (!isMap(v) || Object.keys(v).length === 0 || h.map.relationship === 'atomic') return null;
    const out: Record<string, Value> = {};
    for (const [k, val] of Object.entries(v)) {
      const pe = { field: k };
      if (toRemove.has([pe])) continue;
      const sub = toRemove.withPrefix(pe);
      out[k] = sub.empty() ? val : walk(fieldType(h.map, k), val, sub);
    }
    return Object.keys(out).length ? out : null;
  };
  return walk(tr, v, toRemove);
}

// ---- Merge ----------------------------------------------------------------------------------

/** `rhs` merged onto `lhs` (typedLive.Merge(predicted)): the right side's values win. */
export function merge(schema: Schema, tr: TypeRef, lhs: Value, rhs: Value): Value {
  const walk = (tr: TypeRef | undefined, lhs: Maybe, rhs: Maybe, errs: ValidationError[]): Maybe => {
    const a = resolveAtom(schema, tr);
    if (Array.isArray(a)) {
      errs.push(...a);
      return undefined;
    }
    const pl = deduce(a, lhs);
    const pr = deduce(a, rhs);
    let out: Maybe;
    if (rhs === undefined) out = handle(pick(a, pl), tr, lhs, rhs, errs);
    else if (lhs === undefined || sameDeduced(a, pl, pr)) out = handle(pick(a, pr), tr, lhs, rhs, errs);
    else {
      handle(pick(a, pl), tr, lhs, rhs, errs);
      out = handle(pick(a, pr), tr, lhs, rhs, errs);
    }
    return out;
  };
  const leaf = (lhs: Maybe, rhs: Maybe): Maybe => (rhs !== undefined ? rhs : lhs);
  const handle = (
    h: ReturnType<typeof pick>,
    tr: TypeRef | undefined,
    lhs: Maybe,
    rhs: Maybe,
    errs: ValidationError[],
  ): Maybe => {
    if (!h) {
      errs.push(...invalidAtom(tr));
      return undefined;
    }
    if ('scalar' in h) {
      const l = validateScalar(h.scalar, lhs, 'lhs: ');
      const r = validateScalar(h.scalar, rhs, 'rhs: ');
      if (l.length && r.length) {
        errs.push(...l, ...r);
        return undefined;
      }
      return leaf(lhs, rhs);
    }
    if ('list' in h) {
      const l = Array.isArray(lhs) ? lhs : undefined;
      const r = Array.isArray(rhs) ? rhs : undefined;
      if (h.list.relationship === 'atomic' || ((!l || l.length === 0) && (!r || r.length === 0))) return leaf(lhs, rhs);
      return mergeList(h.list, l ?? [], r ?? [], errs);
    }
    const l = isMap(lhs) ? lhs : undefined;
    const r = isMap(rhs) ? rhs : undefined;
    const le = !l || Object.keys(l).length === 0;
    const re = !r || Object.keys(r).length === 0;
    if (h.map.relationship === 'atomic' || (le && re)) return leaf(lhs, rhs);
    const out: Record<string, Value> = {};
    const keys = new Set([...Object.keys(l ?? {}), ...Object.keys(r ?? {})]);
    for (const k of keys) {
      const lv = l && Object.hasOwn(l, k) ? l[k] : undefined;
      const rv = r && Object.hasOwn(r, k) ? r[k] : undefined;
      const child = walk(fieldType(h.map, k), lv, rv, errs);
      if (child !== undefined) out[k] = child;
    }
    return Object.keys(out).length ? out : undefined;
  };
  const mergeList = (t: ListType, lhs: Value[], rhs: Value[], errs: ValidationError[]): Maybe => {
    const index = (list: Value[], allowDuplicates: boolean) => {
      const pes: PathElement[] = [];
      const observed = new Map<string, Maybe>();
      let failed = false;
      list.forEach((child, i) => {
        const pe = tryElement(schema, t, child);
        if (pe instanceof Error) {
          errs.push(...err(`element ${i}: ${pe.message}`));
          failed = true;
          return;
        }
        const k = elementKey(pe);
        if (observed.has(k) && !allowDuplicates) {
          errs.push(...err(`duplicate entries for key ${elementString(pe)}`));
          failed = true;
          return;
        }
        // A duplicated element on the left merges as a null.
        observed.set(k, observed.has(k) ? null : child);
        pes.push(pe);
      });
      return { pes, observed, failed };
    };
    const R = index(rhs, false);
    const L = index(lhs, true);
    if (R.failed || L.failed) return undefined;
    const key = elementKey;
    const sharedOrder = R.pes.filter((pe) => L.observed.has(key(pe)));
    let nextShared: PathElement | undefined = sharedOrder.shift();
    const mergedRHS = new Set<string>();
    const out: Value[] = [];
    // Errors inside one element are dropped, as Go's shadowed `errs` drops them.
    const item = (pe: PathElement, l: Maybe, r: Maybe) => {
      const m = walk(t.elementType, l, r, []);
      if (m !== undefined) out.push(m);
      void pe;
    };
    let lI = 0;
    let rI = 0;
    while (lI < L.pes.length || rI < R.pes.length) {
      if (lI < L.pes.length && rI < R.pes.length) {
        const pe = L.pes[lI] as PathElement;
        if (key(pe) === key(R.pes[rI] as PathElement)) {
          mergedRHS.add(key(pe));
          item(pe, L.observed.get(key(pe)), R.observed.get(key(pe)));
          lI++;
          rI++;
          nextShared = sharedOrder.shift();
          continue;
        }
        if (R.observed.has(key(pe)) && nextShared !== undefined && key(nextShared) !== key(pe)) {
          lI++;
          continue;
        }
      }
      if (lI < L.pes.length) {
        const pe = L.pes[lI] as PathElement;
        if (!R.observed.has(key(pe))) {
          item(pe, lhs[lI], undefined);
          lI++;
          continue;
        } else if (mergedRHS.has(key(pe))) lI++;
      }
      if (rI < R.pes.length) {
        const pe = R.pes[rI] as PathElement;
        mergedRHS.add(key(pe));
        item(pe, L.observed.get(key(pe)), R.observed.get(key(pe)));
        rI++;
        if (nextShared !== undefined && key(nextShared) === key(pe)) nextShared = sharedOrder.shift();
      }
    }
    return out.length ? out : undefined;
  };
  const errs: ValidationError[] = [];
  const out = walk(tr, lhs, rhs, errs);
  if (errs.length) throw new SmdError(errs);
  return out === undefined ? null : out;
}

// ---- Compare (what the right side lacks) -----------------------------------------------------

/** Compare(lhs, rhs).Removed: the paths `lhs` has that `rhs` has not, as Go's compare walk finds them. */
export function removedFields(schema: Schema, tr: TypeRef, lhs: Value, rhs: Value): FieldSet {
  const removed = new FieldSet();
  const errs: ValidationError[] = [];
  // Returns whether the walk ended at a leaf (Go's inLeaf).
  const walk = (tr: TypeRef | undefined, lhs: Maybe, rhs: Maybe, path: PathElement[]): void => {
    const a = resolveAtom(schema, tr);
    if (Array.isArray(a)) return void errs.push(...a);
    const pl = deduce(a, lhs);
    const pr = deduce(a, rhs);
    let inLeaf = false;
    if (rhs === undefined) inLeaf = handle(pick(a, pl), tr, lhs, rhs, path);
    else if (lhs === undefined || sameDeduced(a, pl, pr)) inLeaf = handle(pick(a, pr), tr, lhs, rhs, path);
    else {
      handle(pick(a, pl), tr, lhs, rhs, path);
      inLeaf = handle(pick(a, pr), tr, lhs, rhs, path);
    }
    if (!inLeaf && lhs !== undefined && rhs === undefined) removed.insert(path);
  };
  const leaf = (lhs: Maybe, rhs: Maybe, path: Path): boolean => {
    if (lhs !== undefined && rhs === undefined) removed.insert(path);
    return true;
  };
  const handle = (h: ReturnType<typeof pick>, tr: TypeRef | undefined, lhs: Maybe, rhs: Maybe, path: PathElement[]) => {
    if (!h) {
      errs.push(...invalidAtom(tr));
      return false;
    }
    if ('scalar' in h) {
      const l = validateScalar(h.scalar, lhs, 'lhs: ');
      const r = validateScalar(h.scalar, rhs, 'rhs: ');
      if (l.length && r.length) {
        errs.push(...l, ...r);
        return false;
      }
      return leaf(lhs, rhs, path);
    }
    if ('list' in h) {
      const l = Array.isArray(lhs) ? lhs : undefined;
      const r = Array.isArray(rhs) ? rhs : undefined;
      if (h.list.relationship === 'atomic' || ((!l || l.length === 0) && (!r || r.length === 0)))
        return leaf(lhs, rhs, path);
      compareList(h.list, l ?? [], r ?? [], path);
      return false;
    }
    const l = isMap(lhs) ? lhs : undefined;
    const r = isMap(rhs) ? rhs : undefined;
    if (h.map.relationship === 'atomic' || ((!l || !Object.keys(l).length) && (!r || !Object.keys(r).length)))
      return leaf(lhs, rhs, path);
    const keys = new Set([...Object.keys(l ?? {}), ...Object.keys(r ?? {})]);
    for (const k of keys)
      walk(
        fieldType(h.map, k),
        l && Object.hasOwn(l, k) ? l[k] : undefined,
        r && Object.hasOwn(r, k) ? r[k] : undefined,
        [...path, { field: k }],
      );
    return false;
  };
  const compareList = (t: ListType, lhs: Value[], rhs: Value[], path: PathElement[]) => {
    const all: PathElement[] = [];
    const lv = new Map<string, Value[]>();
    const rv = new Map<string, Value[]>();
    lhs.forEach((child, i) => {
      const pe = tryElement(schema, t, child);
      if (pe instanceof Error) return void errs.push(...err(`element ${i}: ${pe.message}`));
      const k = elementKey(pe);
      const got = lv.get(k);
      if (got) got.push(child);
      else {
        lv.set(k, [child]);
        all.push(pe);
      }
    });
    rhs.forEach((child, i) => {
      const pe = tryElement(schema, t, child);
      if (pe instanceof Error) return void errs.push(...err(`element ${i}: ${pe.message}`));
      const k = elementKey(pe);
      const got = rv.get(k);
      if (got) got.push(child);
      else {
        rv.set(k, [child]);
        if (!lv.has(k)) all.push(pe);
      }
    });
    for (const pe of all) {
      const l = lv.get(elementKey(pe)) ?? [];
      const r = rv.get(elementKey(pe)) ?? [];
      const p = [...path, pe];
      if (l.length <= 1 && r.length <= 1) walk(t.elementType, l[0], r[0], p);
      else if (l.length >= 2 && r.length >= 2) continue;
      else if (l.length >= 2) {
        if (r.length) walk(t.elementType, undefined, r[0], p);
        removed.insert(p);
      } else if (l.length) walk(t.elementType, l[0], undefined, p);
    }
  };
  walk(tr, lhs, rhs, []);
  if (errs.length) throw new SmdError(errs);
  return removed;
}
