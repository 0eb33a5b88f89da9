// The schema structured-merge-diff walks values with, built from a Kubernetes OpenAPI v3
// group-version document, as Argo CD's from the v2 document: each definition first as v2
// publishes it (asPublishedInV2), then as kube-openapi's schemaconv (ToSchemaFromOpenAPI) builds it: each
// component schema a named type; `x-kubernetes-list-type` (atomic, set, map with
// `x-kubernetes-list-map-keys`), else `x-kubernetes-patch-strategy: merge` with its merge key, else
// atomic; `x-kubernetes-map-type`; `x-kubernetes-preserve-unknown-fields` and objects without
// properties take any field (a "deduced" type); Quantity and RawExtension fixed as schemaconv
// fixes them. The GroupVersionKinds come from each definition's `x-kubernetes-group-version-kind`.

export type Scalar = 'numeric' | 'string' | 'boolean' | 'untyped';
/** Lists: atomic or associative; maps: '' (granular by default), atomic or separable (granular). */
export type Relationship = '' | 'atomic' | 'associative' | 'separable';

export interface TypeRef {
  named?: string;
  inlined?: Atom;
  relationship?: Relationship;
}

export interface ListType {
  elementType: TypeRef;
  relationship: Relationship;
  keys: readonly string[];
}

export interface StructField {
  type: TypeRef;
  default?: unknown;
}

export interface MapType {
  fields: ReadonlyMap<string, StructField>;
  /** Absent: a field not among `fields` is not allowed. */
  elementType: TypeRef | undefined;
  relationship: Relationship;
}

export interface Atom {
  scalar?: Scalar;
  list?: ListType;
  map?: MapType;
}

export interface Schema {
  types: ReadonlyMap<string, Atom>;
  /** `group/version, Kind=kind` (Go's GroupVersionKind.String) → the named type. */
  gvks: ReadonlyMap<string, string>;
}

export const UNTYPED = '__untyped_atomic_';
export const DEDUCED = '__untyped_deduced_';
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
const RAW_EXTENSION = 'io.k8s.apimachinery.pkg.runtime.RawExtension';

const untypedAtom: Atom = {
  scalar: 'untyped',
  list: { elementType: { named: UNTYPED }, relationship: 'atomic', keys: [] },
  map: { fields: new Map(), elementType: { named: UNTYPED }, relationship: 'atomic' },
};
const deducedAtom: Atom = {
  scalar: 'untyped',
  list: { elementType: { named: UNTYPED }, relationship: 'atomic', keys: [] },
  map: { fields: new Map(), elementType: { named: DEDUCED }, relationship: 'separable' },
};

/** Limits on what one document may make us build (a CRD's schema is written by a tenant in some installs). */
const MAX_DEFINITIONS = 20_000;
const MAX_INLINE_DEPTH = 64;

type Json = Record<string, unknown>;

export function gvkString(group: string, version: string, kind: string): string {
  return `${group}/${version}, Kind=${kind}`;
}

function asObject(v: unknown): Json | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;
}

class Converter {
  readonly errors: string[] = [];
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }

  error(msg: string): void {
    this.errors.push(`${this.name}: ${msg}`);
  }

  /** A definition or inlined schema, with whether unknown fields are kept beneath it. */
  visit(s: Json, preserve: boolean, depth: number): Atom {
    if (depth > MAX_INLINE_DEPTH) {
      this.error(`schema nested more than ${MAX_INLINE_DEPTH} levels deep`);
      return { scalar: 'untyped' };
    }
    if (s['x-kubernetes-preserve-unknown-fields'] === true) preserve = true;
    const type = Array.isArray(s['type']) ? String(s['type'][0] ?? '') : typeof s['type'] === 'string' ? s['type'] : '';
    switch (type) {
      case '':
        // Without properties it is v2's Arbitrary: the deduced type, whatever its extensions say.
        if (Object.keys(asObject(s['properties']) ?? {}).length === 0) return deducedAtom;
        return { scalar: 'untyped', list: this.list(s, preserve, depth), map: this.object(s, preserve, depth) };
      case 'object':
        return { map: this.object(s, preserve, depth) };
      case 'array':
        return { list: this.list(s, preserve, depth) };
      case 'integer':
      case 'number':
        return { scalar: 'numeric' };
      case 'boolean':
        return { scalar: 'boolean' };
      case 'string': {
        const format = typeof s['format'] === 'string' ? s['format'] : '';
        return { scalar: format === '' || format === 'byte' ? 'string' : 'untyped' };
      }
      default:
        this.error(`unrecognized type: '${type}'`);
        return { scalar: 'untyped' };
    }
  }

  ref(s: Json, preserve: boolean, depth: number): TypeRef {
    let ref = typeof s['$ref'] === 'string' ? s['$ref'] : '';
    const allOf = s['allOf'];
    if (ref === '' && Array.isArray(allOf) && allOf.length === 1) {
      const only = asObject(allOf[0]);
      if (only && typeof only['$ref'] === 'string') ref = only['$ref'];
    }
    const name = ref.slice(ref.lastIndexOf('/') + 1);
    if (name !== '') {
      const rel = this.mapRelationship(s);
      return rel ? { named: name, relationship: rel } : { named: name };
    }
    return { inlined: this.visit(s, preserve, depth + 1) };
  }

  object(s: Json, preserve: boolean, depth: number): MapType {
    const fields = new Map<string, StructField>();
    const props = asObject(s['properties']);
    for (const [name, member] of Object.entries(props ?? {})) {
      const m = asObject(member) ?? {};
      fields.set(name, { type: this.ref(m, preserve, depth), ...('default' in m ? { default: m['default'] } : {}) });
    }
    const ap = s['additionalProperties'];
    let elementType: TypeRef | undefined;
    if (ap === undefined || ap === null) elementType = preserve || fields.size === 0 ? { named: DEDUCED } : undefined;
    else if (ap === true) elementType = { named: DEDUCED };
    else if (ap === false) elementType = undefined;
    else elementType = this.ref(asObject(ap) ?? {}, preserve, depth);
    return { fields, elementType, relationship: this.mapRelationship(s) };
  }

  list(s: Json, preserve: boolean, depth: number): ListType {
    const { relationship, keys } = this.listRelationship(s);
    let elementType: TypeRef;
    const items = s['items'];
    if (items !== undefined && items !== null) {
      const one = asObject(items);
      if (!one) {
        this.error('structural schema arrays must have exactly one member subtype');
        elementType = { named: DEDUCED };
      } else elementType = this.ref(one, preserve, depth);
    } else {
      if (typeof s['type'] === 'string' && s['type'] !== '') this.error('`items` must be specified on arrays');
      elementType = { named: UNTYPED };
    }
    return { elementType, relationship, keys };
  }

  listRelationship(s: Json): { relationship: Relationship; keys: string[] } {
    const lt = s['x-kubernetes-list-type'];
    if (lt !== undefined) {
      if (lt === 'atomic') return { relationship: 'atomic', keys: [] };
      if (lt === 'set') return { relationship: 'associative', keys: [] };
      if (lt === 'map') {
        const keys = s['x-kubernetes-list-map-keys'];
        if (keys === undefined) {
          this.error('missing map keys');
          return { relationship: 'associative', keys: [] };
        }
        if (!Array.isArray(keys)) {
          this.error(`uninterpreted map keys: ${JSON.stringify(keys)}`);
          return { relationship: 'associative', keys: [] };
        }
        return { relationship: 'associative', keys: keys.filter((k): k is string => typeof k === 'string') };
      }
      this.error(`unknown list type ${String(lt)}`);
      return { relationship: 'atomic', keys: [] };
    }
    const ps = s['x-kubernetes-patch-strategy'];
    if (ps !== undefined) {
      if (ps === 'merge' || ps === 'merge,retainKeys') {
        const key = s['x-kubernetes-patch-merge-key'];
        if (key === undefined) return { relationship: 'associative', keys: [] };
        if (typeof key !== 'string') {
          this.error(`uninterpreted merge key: ${JSON.stringify(key)}`);
          return { relationship: 'associative', keys: [] };
        }
        return { relationship: 'associative', keys: [key] };
      }
      if (ps === 'retainKeys') return { relationship: 'atomic', keys: [] };
      this.error(`unknown patch strategy ${String(ps)}`);
      return { relationship: 'atomic', keys: [] };
    }
    return { relationship: 'atomic', keys: [] };
  }

  mapRelationship(s: Json): Relationship {
    const mt = s['x-kubernetes-map-type'];
    if (mt === undefined) return '';
    if (mt === 'atomic') return 'atomic';
    if (mt === 'granular') return 'separable';
    this.error(`unknown map type ${String(mt)}`);
    return '';
  }
}

/**
 * A schema as kube-apiserver publishes it in OpenAPI v2, the document Argo CD builds its parser
 * from (apiextensions-apiserver's ToStructuralOpenAPIV2 and its v2 builder): a nullable schema
 * loses its type, items and properties; one that preserves unknown fields loses its items and
 * properties (and its `object` type; at a kind's root, every property); an array without items
 * loses its type. Applied to every definition: the built-in types carry none of these (checked
 * on the v3 specs of Kubernetes v1.34), so they are as v3 publishes them, and a custom resource's
 * schema converts to what Argo CD converts. References are not followed; inline nesting is
 * bounded as in the conversion.
 */
function asPublishedInV2(s: Json, depth = 0): Json {
  if (depth > MAX_INLINE_DEPTH) return s;
  const out: Json = { ...s };
  const props = asObject(out['properties']);
  if (props)
    out['properties'] = Object.fromEntries(
      Object.entries(props).map(([k, v]) => [k, asObject(v) ? asPublishedInV2(v as Json, depth + 1) : v]),
    );
  const items = asObject(out['items']);
  if (items) out['items'] = asPublishedInV2(items, depth + 1);
  const ap = asObject(out['additionalProperties']);
  if (ap) out['additionalProperties'] = asPublishedInV2(ap, depth + 1);
  const preserve = out['x-kubernetes-preserve-unknown-fields'] === true;
  if (out['nullable'] === true) {
    delete out['type'];
    delete out['nullable'];
    delete out['items'];
    delete out['properties'];
  }
  if (preserve) {
    delete out['items'];
    delete out['properties'];
  }
  if (out['type'] === 'array' && out['items'] === undefined) delete out['type'];
  if (preserve && out['type'] === 'object') delete out['type'];
  return out;
}

/**
 * The schema of one OpenAPI v3 document (`/openapi/v3/apis/<group>/<version>`). Throws, naming the
 * definitions, when schemaconv would refuse it. A GroupVersionKind two definitions claim resolves to
 * nothing, as Argo CD drops such kinds from its parser rather than fail them all.
 */
export function schemaFromOpenApiV3(doc: unknown): Schema {
  const schemas = asObject(asObject(asObject(doc)?.['components'])?.['schemas']) ?? {};
  const entries = Object.entries(schemas);
  if (entries.length > MAX_DEFINITIONS) throw new Error(`more than ${MAX_DEFINITIONS} definitions`);
  const types = new Map<string, Atom>();
  const errors: string[] = [];
  const claims = new Map<string, string[]>();
  for (const [name, raw] of entries) {
    const s = asObject(raw) ?? {};
    for (const g of Array.isArray(s['x-kubernetes-group-version-kind']) ? s['x-kubernetes-group-version-kind'] : []) {
      const o = asObject(g);
      if (!o || typeof o['kind'] !== 'string' || o['kind'] === '') continue;
      const key = gvkString(String(o['group'] ?? ''), String(o['version'] ?? ''), o['kind']);
      claims.set(key, [...(claims.get(key) ?? []), name]);
    }
    if (typeof s['$ref'] === 'string' && s['$ref'] !== '') continue;
    if (name === QUANTITY) types.set(name, { scalar: 'untyped' });
    else if (name === RAW_EXTENSION) types.set(name, untypedAtom);
    else {
      const c = new Converter(name);
      // A kind whose root preserves unknown fields is published in v2 as a bare object.
      const v2 =
        s['x-kubernetes-preserve-unknown-fields'] === true && Array.isArray(s['x-kubernetes-group-version-kind'])
          ? { type: 'object' }
          : asPublishedInV2(s);
      const atom = c.visit(v2, false, 0);
      errors.push(...c.errors);
      if (atom.scalar !== undefined || atom.list || atom.map) types.set(name, atom);
    }
  }
  if (errors.length) throw new Error(`failed to convert models to schema: ${errors.join('\n')}`);
  types.set(UNTYPED, untypedAtom);
  types.set(DEDUCED, deducedAtom);
  const gvks = new Map<string, string>();
  for (const [gvk, names] of claims) if (names.length === 1) gvks.set(gvk, names[0] as string);
  return { types, gvks };
}

/** The atom a reference names, with its relationship override; undefined when there is none. */
export function resolve(schema: Schema, tr: TypeRef): Atom | undefined {
  let atom: Atom | undefined;
  if (tr.named !== undefined) {
    atom = schema.types.get(tr.named);
    if (!atom) return undefined;
  } else atom = tr.inlined ?? {};
  if (tr.relationship === undefined) return atom;
  if (atom.map) return { ...atom, map: { ...atom.map, relationship: tr.relationship } };
  if (atom.list) return { ...atom, list: { ...atom.list, relationship: tr.relationship } };
  return undefined;
}
