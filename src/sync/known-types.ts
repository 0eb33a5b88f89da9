// argocd-cm `resource.customizations.knownTypeFields.<group_kind>`, as Argo CD v3.6.1's diff
// normalizer applies it (util/argo/normalizers/knowntypes_normalizer.go): each named field of a
// custom resource is read into the Kubernetes type named (json.Unmarshal into the Go struct) and
// written back (json.Marshal), on both sides of the comparison. So a field the type does not have
// is dropped, a quantity is written in its canonical form (`1000m` is `1`), a duration and a time as
// Go writes them, an absent field and its zero value compare equal where the Go field is no pointer,
// and a value the type cannot hold leaves the object as far as it got (Argo CD logs the error and
// compares what it has). Argo Rollouts' `spec.template.spec` is a PodSpec unless configured
// otherwise, as in Argo CD.
//
// How Go reads and writes each type comes from known-types.json, generated from k8s.io/api by
// scripts/known-types/generate.mjs; the JSON forms of the types with their own (Quantity,
// IntOrString, Duration, Time, MicroTime) are written here. Pure.
import type { KubeObject } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import table from './known-types.json' with { type: 'json' };
import { canonicalQuantity } from './quantity.ts';

type TypeDesc =
  | 'string'
  | 'bool'
  | 'int32'
  | 'int64'
  | 'bytes'
  | 'time'
  | 'microtime'
  | 'quantity'
  | 'intorstring'
  | 'duration'
  | 'raw'
  | { p: TypeDesc }
  | { s: TypeDesc }
  | { m: TypeDesc }
  | { r: string };

interface FieldDesc {
  n: string;
  o?: boolean;
  z?: boolean;
  t: TypeDesc;
}

const ROOTS = table.roots as Record<string, TypeDesc>;
const STRUCTS = table.structs as unknown as Record<string, FieldDesc[]>;

/** The type names a knownTypeFields entry may give (Argo CD's knownTypes). */
export function isKnownType(name: string): boolean {
  return Object.prototype.hasOwnProperty.call(ROOTS, name);
}

export interface KnownTypeField {
  group: string;
  kind: string;
  /** Dot-separated, as Argo CD splits it. */
  field: string;
  type: string;
}

/** Argo CD's default when no knownTypeFields are configured for argoproj.io/Rollout. */
export const ROLLOUT_DEFAULT: KnownTypeField = {
  group: 'argoproj.io',
  kind: 'Rollout',
  field: 'spec.template.spec',
  type: 'core/v1/PodSpec',
};

class DecodeError extends Error {}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// Go values: a struct is a Map of its fields (all present, zero or not); a pointer, slice, map,
// bytes or raw value that is nil is null; a map is a Map; time is null (zero) or the Date's
// written form; a duration is nanoseconds.
type GoValue = unknown;

const INT_RANGE: Record<string, [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
};

function zero(t: TypeDesc): GoValue {
  if (typeof t === 'string') {
    switch (t) {
      case 'string':
        return '';
      case 'bool':
        return false;
      case 'int32':
      case 'int64':
        return 0;
      case 'quantity':
        return '0';
      case 'intorstring':
        return 0;
      case 'duration':
        return 0n;
      default:
        return null; // bytes, time, microtime, raw
    }
  }
  if ('r' in t) {
    const m = new Map<string, GoValue>();
    for (const f of STRUCTS[t.r] ?? []) m.set(f.n, zero(f.t));
    return m;
  }
  return null;
}

/** The field a JSON key sets: an exact name, else one equal ignoring case (encoding/json). */
function fieldFor(fields: FieldDesc[], key: string): FieldDesc | undefined {
  return fields.find((f) => f.n === key) ?? fields.find((f) => f.n.toLowerCase() === key.toLowerCase());
}

function mismatch(json: unknown, t: string): DecodeError {
  return new DecodeError(`json: cannot unmarshal ${JSON.stringify(json)} into Go value of type ${t}`);
}

/** json.Unmarshal of `json` into a value of type `t` that holds `prev`. */
function decode(t: TypeDesc, json: unknown, prev: GoValue): GoValue {
  if (typeof t === 'string') return decodeScalar(t, json, prev);
  if ('p' in t) {
    if (json === null) return null;
    return decode(t.p, json, prev ?? zero(t.p));
  }
  if ('s' in t) {
    if (json === null) return null;
    if (!Array.isArray(json)) throw mismatch(json, 'slice');
    return json.map((x) => decode(t.s, x, zero(t.s)));
  }
  if ('m' in t) {
    if (json === null) return null;
    if (!isRecord(json)) throw mismatch(json, 'map');
    const m = prev instanceof Map ? prev : new Map<string, GoValue>();
    for (const [k, v] of Object.entries(json)) m.set(k, decode(t.m, v, m.get(k) ?? zero(t.m)));
    return m;
  }
  // A struct: null leaves it as it is.
  if (json === null) return prev;
  if (!isRecord(json)) throw mismatch(json, t.r);
  const fields = STRUCTS[t.r] ?? [];
  const m = prev instanceof Map ? prev : (zero(t) as Map<string, GoValue>);
  for (const [k, v] of Object.entries(json)) {
    const f = fieldFor(fields, k);
    if (f) m.set(f.n, decode(f.t, v, m.get(f.n)));
  }
  return m;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function decodeScalar(t: string, json: unknown, prev: GoValue): GoValue {
  switch (t) {
    case 'string':
      if (json === null) return prev;
      if (typeof json !== 'string') throw mismatch(json, 'string');
      return json;
    case 'bool':
      if (json === null) return prev;
      if (typeof json !== 'boolean') throw mismatch(json, 'bool');
      return json;
    case 'int32':
    case 'int64': {
      if (json === null) return prev;
      if (typeof json !== 'number' || !Number.isInteger(json)) throw mismatch(json, t);
      const [lo, hi] = INT_RANGE[t] as [bigint, bigint];
      const b = BigInt(json);
      if (b < lo || b > hi) throw mismatch(json, t);
      return json;
    }
    case 'bytes': {
      if (json === null) return null;
      if (typeof json !== 'string') throw mismatch(json, '[]uint8');
      const s = json.replace(/[\r\n]/g, '');
      if (!BASE64.test(s)) throw new DecodeError(`illegal base64 data in ${JSON.stringify(json)}`);
      return Buffer.from(s, 'base64');
    }
    case 'quantity':
      try {
        return canonicalQuantity(json);
      } catch (err) {
        throw new DecodeError((err as Error).message);
      }
    case 'intorstring':
      // UnmarshalJSON: a string, else an int32 (null leaves 0, as unmarshalling null into an int).
      if (typeof json === 'string') return json;
      if (json === null) return 0;
      return decodeScalar('int32', json, 0);
    case 'duration': {
      if (json !== null && typeof json !== 'string') throw mismatch(json, 'string');
      return parseDuration(json ?? '');
    }
    case 'time':
    case 'microtime':
      if (json === null) return null;
      if (typeof json !== 'string') throw mismatch(json, 'string');
      return parseTime(json, t === 'microtime');
    case 'raw':
      return json === null ? prev : structuredClone(json);
  }
  throw new DecodeError(`unknown type ${t}`);
}

/** Whether encoding/json's omitempty leaves the value out. */
function isEmpty(t: TypeDesc, v: GoValue): boolean {
  if (typeof t === 'string') {
    switch (t) {
      case 'string':
        return v === '';
      case 'bool':
        return v === false;
      case 'int32':
      case 'int64':
        return v === 0;
      case 'bytes':
        return v === null || (v as Buffer).length === 0;
      default:
        return false; // structs with their own JSON form
    }
  }
  if ('p' in t) return v === null;
  if ('s' in t) return v === null || (v as unknown[]).length === 0;
  if ('m' in t) return v === null || (v as Map<string, unknown>).size === 0;
  return false;
}

/** Whether omitzero leaves it out: the Go zero value (Time and MicroTime: the zero time). */
function isZero(t: TypeDesc, v: GoValue): boolean {
  if (typeof t === 'string') {
    if (t === 'time' || t === 'microtime' || t === 'raw' || t === 'bytes') return v === null;
    return v === zero(t);
  }
  if ('r' in t) {
    const m = v as Map<string, GoValue>;
    return (STRUCTS[t.r] ?? []).every((f) => isZero(f.t, m.get(f.n)));
  }
  return v === null;
}

/** json.Marshal of a Go value, read back as JSON. */
function encode(t: TypeDesc, v: GoValue): unknown {
  if (typeof t === 'string') {
    switch (t) {
      case 'bytes':
        return v === null ? null : (v as Buffer).toString('base64');
      case 'duration':
        return formatDuration(v as bigint);
      default:
        return v; // scalars, quantity (canonical), intorstring, time (null or written), raw
    }
  }
  if ('p' in t) return v === null ? null : encode(t.p, v);
  if ('s' in t) return v === null ? null : (v as GoValue[]).map((x) => encode(t.s, x));
  if ('m' in t) {
    if (v === null) return null;
    const out: Record<string, unknown> = {};
    for (const [k, x] of v as Map<string, GoValue>) out[k] = encode(t.m, x);
    return out;
  }
  const m = v as Map<string, GoValue>;
  const out: Record<string, unknown> = {};
  for (const f of STRUCTS[t.r] ?? []) {
    const x = m.get(f.n);
    if (f.o && isEmpty(f.t, x)) continue;
    if (f.z && isZero(f.t, x)) continue;
    out[f.n] = encode(f.t, x);
  }
  return out;
}

/** A JSON value through the type named: throws where Go's json.Unmarshal fails. */
export function remarshal(typeName: string, json: unknown): unknown {
  const t = ROOTS[typeName];
  if (t === undefined) throw new DecodeError(`type '${typeName}' is not supported`);
  return encode(t, decode(t, json, zero(t)));
}

// Go's time.ParseDuration and Duration.String.
const UNITS: Record<string, bigint> = {
  ns: 1n,
  us: 1000n,
  '\u00b5s': 1000n,
  '\u03bcs': 1000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const MAX_DURATION = 2n ** 63n - 1n;

export function parseDuration(s: string): bigint {
  const bad = () => new DecodeError(`time: invalid duration "${s}"`);
  let rest = s;
  let neg = false;
  if (rest[0] === '-' || rest[0] === '+') {
    neg = rest[0] === '-';
    rest = rest.slice(1);
  }
  if (rest === '0') return 0n;
  if (rest === '') throw bad();
  // Exact: the total in units of 1/10^9 ns would do, but Go itself truncates each fraction to ns.
  let total = 0n;
  while (rest !== '') {
    const m = /^(\d*)(?:\.(\d*))?/.exec(rest);
    const whole = m?.[1] ?? '';
    const frac = m?.[2];
    if (whole === '' && (frac === undefined || frac === '')) throw bad();
    rest = rest.slice((m?.[0] ?? '').length);
    const u = /^[^\d.]*/.exec(rest)?.[0] ?? '';
    if (u === '') throw new DecodeError(`time: missing unit in duration "${s}"`);
    const unit = UNITS[u];
    if (unit === undefined) throw new DecodeError(`time: unknown unit "${u}" in duration "${s}"`);
    rest = rest.slice(u.length);
    let v = BigInt(whole || '0') * unit;
    if (frac) {
      // Go: the fraction scaled by the unit, as a float, truncated (exact enough for 19 digits).
      const digits = frac.slice(0, 18);
      v += (BigInt(digits) * unit) / 10n ** BigInt(digits.length);
    }
    total += v;
    if (total > MAX_DURATION + (neg ? 1n : 0n)) throw bad();
  }
  return neg ? -total : total;
}

export function formatDuration(d: bigint): string {
  if (d === 0n) return '0s';
  const neg = d < 0n;
  let u = neg ? -d : d;
  let out: string;
  const frac = (v: bigint, digits: number): string => {
    const p = 10n ** BigInt(digits);
    const f = (v % p).toString().padStart(digits, '0').replace(/0+$/, '');
    return `${v / p}${f ? `.${f}` : ''}`;
  };
  if (u < 1_000_000_000n) {
    if (u < 1000n) out = `${u}ns`;
    else if (u < 1_000_000n) out = `${frac(u, 3)}\u00b5s`;
    else out = `${frac(u, 6)}ms`;
  } else {
    const h = u / 3_600_000_000_000n;
    u %= 3_600_000_000_000n;
    const m = u / 60_000_000_000n;
    u %= 60_000_000_000n;
    out = `${h > 0n ? `${h}h` : ''}${h > 0n || m > 0n ? `${m}m` : ''}${frac(u, 9)}s`;
  }
  return neg ? `-${out}` : out;
}

/** time.Parse(RFC3339) then, written, UTC at the second (Time) or microsecond (MicroTime). */
function parseTime(s: string, micro: boolean): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/.exec(s);
  if (!m) throw new DecodeError(`parsing time ${JSON.stringify(s)} as RFC3339: cannot parse`);
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const fr = m[7] ?? '';
  // RFC3339Micro's `.000000` takes exactly six digits; RFC3339 takes any fraction, or none.
  if (micro && fr.length !== 6)
    throw new DecodeError(`parsing time ${JSON.stringify(s)} as RFC3339Micro: cannot parse`);
  const t = new Date(0);
  t.setUTCFullYear(y, mo - 1, d);
  if (t.getUTCMonth() !== mo - 1 || t.getUTCDate() !== d || h > 23 || mi > 59 || se > 59)
    throw new DecodeError(`parsing time ${JSON.stringify(s)}: out of range`);
  t.setUTCHours(h, mi, se, 0);
  if (m[8]) t.setTime(t.getTime() - (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10])) * 60_000);
  const zeroTime = new Date(0);
  zeroTime.setUTCFullYear(1, 0, 1);
  // The zero time is written as null (Time.IsZero).
  if (t.getTime() === zeroTime.getTime() && /^0*$/.test(fr)) return null;
  return `${t.toISOString().slice(0, 19)}${micro ? `.${(fr + '000000').slice(0, 6)}` : ''}Z`;
}

/**
 * Argo CD's normalize(): along `path`, the first list met has each of its objects normalized with
 * the rest of the path (or remarshalled, at the end); without a list, the value at the path is.
 * Works in place; throws where Argo CD's returns an error, leaving what was done done.
 */
function normalizeAt(obj: Record<string, unknown>, typeName: string, path: string[]): void {
  for (let i = 0; i < path.length; i++) {
    const nested = nestedNoCopy(obj, path.slice(0, i + 1));
    if (!nested.found || !Array.isArray(nested.value)) continue;
    const items = nested.value;
    const sub = path.slice(i + 1);
    for (let j = 0; j < items.length; j++) {
      const item = items[j];
      if (!isRecord(item)) continue;
      if (sub.length === 0) items[j] = remarshal(typeName, item);
      else normalizeAt(item, typeName, sub);
    }
    return;
  }
  const at = nestedNoCopy(obj, path);
  if (!at.found) return;
  const value = remarshal(typeName, at.value);
  let cur = obj;
  for (const k of path.slice(0, -1)) cur = cur[k] as Record<string, unknown>;
  cur[path[path.length - 1] as string] = value;
}

/** unstructured.NestedFieldNoCopy: not found past a value that is not an object. */
function nestedNoCopy(obj: Record<string, unknown>, path: string[]): { found: boolean; value?: unknown } {
  let cur: unknown = obj;
  for (const k of path) {
    if (!isRecord(cur) || !(k in cur)) return { found: false };
    cur = cur[k];
  }
  return { found: true, value: cur };
}

/**
 * A copy of `obj` with the fields configured for its group and kind read through their types; and
 * the error Argo CD would log, if one stopped it.
 */
export function normalizeKnownTypes(
  fields: readonly KnownTypeField[],
  obj: KubeObject,
): { object: KubeObject; error?: string } {
  const group = groupOf(obj.apiVersion);
  const mine = fields.filter((f) => f.group === group && f.kind === obj.kind);
  if (mine.length === 0) return { object: obj };
  const copy = structuredClone(obj) as KubeObject & Record<string, unknown>;
  for (const f of mine) {
    try {
      normalizeAt(copy, f.type, f.field.split('.'));
    } catch (err) {
      if (!(err instanceof DecodeError)) throw err;
      return { object: copy, error: `${f.field} as ${f.type}: ${err.message}` };
    }
  }
  return { object: copy };
}

/**
 * The knownTypeFields in force: those configured (an unknown type is left out, named in
 * `errors`), and the Rollout default unless some were configured for argoproj.io/Rollout.
 */
export function knownTypeFieldsOf(configured: readonly KnownTypeField[]): {
  fields: KnownTypeField[];
  errors: string[];
} {
  const errors: string[] = [];
  const fields: KnownTypeField[] = [];
  for (const f of configured) {
    if (!isKnownType(f.type))
      errors.push(`knownTypeFields ${f.group}/${f.kind} ${f.field}: type '${f.type}' is not supported`);
    else fields.push(f);
  }
  if (!fields.some((f) => f.group === ROLLOUT_DEFAULT.group && f.kind === ROLLOUT_DEFAULT.kind))
    fields.push(ROLLOUT_DEFAULT);
  return { fields, errors };
}
