// Kubernetes resource quantities (k8s.io/apimachinery pkg/api/resource) read and written as the Go
// type reads and writes them: parsed into an exact value (rounded up to a nano, as ParseQuantity
// does) and a format (DecimalSI, BinarySI, DecimalExponent), written in the canonical form
// (CanonicalizeBytes): `1000m` is `1`, `1536Mi` stays, `0.5Gi` is `512Mi`, `1e3` stays. Pure.

export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

export interface Quantity {
  /** The value is unscaled / 10^scale. */
  unscaled: bigint;
  scale: number;
  format: QuantityFormat;
  /** The string as given, where Go keeps it (it reckons it canonical): written as it is. */
  s?: string;
}

const DEC_SUFFIXES: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BIN_SUFFIXES: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const MAX_INT64 = (1n << 63n) - 1n;

export class QuantityError extends Error {}

/** The number, fraction and suffix of a quantity string, as parseQuantityString splits it. */
function split(str: string): { positive: boolean; value: string; num: string; denom: string; suffix: string } {
  let positive = true;
  let pos = 0;
  const end = str.length;
  if (str[0] === '-') {
    positive = false;
    pos++;
  } else if (str[0] === '+') pos++;
  for (;;) {
    if (pos >= end) return { positive, value: '0', num: '0', denom: '', suffix: '' };
    if (str[pos] !== '0') break;
    pos++;
  }
  const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
  let i = pos;
  while (i < end && isDigit(str[i])) i++;
  if (i >= end) return { positive, value: str, num: str.slice(pos), denom: '', suffix: '' };
  const num = str.slice(pos, i) || '0';
  pos = i;
  let denom = '';
  if (str[pos] === '.') {
    pos++;
    let j = pos;
    while (j < end && isDigit(str[j])) j++;
    denom = str.slice(pos, j);
    if (j >= end) return { positive, value: str, num, denom, suffix: '' };
    pos = j;
  }
  const value = str.slice(0, pos);
  const suffixStart = pos;
  let k = pos;
  while (k < end && 'eEinumkKMGTP'.includes(str[k] as string)) k++;
  if (k >= end) return { positive, value, num, denom, suffix: str.slice(suffixStart) };
  if (str[k] === '-' || str[k] === '+') k++;
  while (k < end && isDigit(str[k])) k++;
  if (k < end) throw new QuantityError('quantities must match the regular expression');
  return { positive, value, num, denom, suffix: str.slice(suffixStart) };
}

/** The base, exponent and format a suffix stands for (quantitySuffixer.interpret). */
function interpret(suffix: string): { base: 10 | 2; exponent: number; format: QuantityFormat } {
  if (suffix in DEC_SUFFIXES) return { base: 10, exponent: DEC_SUFFIXES[suffix] as number, format: 'DecimalSI' };
  if (suffix in BIN_SUFFIXES) return { base: 2, exponent: BIN_SUFFIXES[suffix] as number, format: 'BinarySI' };
  if (suffix.length > 1 && (suffix[0] === 'E' || suffix[0] === 'e')) {
    const e = suffix.slice(1);
    // strconv.ParseInt(_, 10, 32)
    if (/^[+-]?\d+$/.test(e)) {
      const n = Number(e);
      if (n >= -(2 ** 31) && n < 2 ** 31) return { base: 10, exponent: n, format: 'DecimalExponent' };
    }
  }
  throw new QuantityError('unable to parse quantity\u2019s suffix');
}

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

/** ParseQuantity: throws QuantityError where Go returns an error. */
export function parseQuantity(str: string): Quantity {
  if (str.length === 0) throw new QuantityError('quantities must match the regular expression');
  if (str === '0') return { unscaled: 0n, scale: 0, format: 'DecimalSI' };
  const { positive, num, denom, suffix } = split(str);
  const { base, exponent, format: parsedFormat } = interpret(suffix);
  let format = parsedFormat;
  const kept = keptString(str, num, denom, exponent, format);
  // The exact value: (num.denom) × base^exponent, then rounded up (away from zero) to a nano.
  let unscaled = BigInt(num + denom);
  let scale = denom.length;
  if (base === 10) scale -= exponent;
  else unscaled *= 1n << BigInt(exponent);
  if (scale > 9) {
    const div = pow10(scale - 9);
    const q = unscaled / div;
    unscaled = q * div === unscaled ? q : q + 1n;
    scale = 9;
  }
  if (format === 'BinarySI') {
    // The cap at the largest int64 and, below one, DecimalSI: both only where Go takes its slow path
    // (a fraction, a negative exponent, or too many digits), where the two can matter at all.
    const max = MAX_INT64 * pow10(Math.max(scale, 0));
    const scaledMax = scale >= 0 ? max : MAX_INT64 / pow10(-scale);
    if (unscaled > scaledMax) {
      unscaled = scale >= 0 ? max : scaledMax;
    }
    const one = scale >= 0 ? pow10(scale) : 1n;
    if (scale >= 0 && unscaled < one && unscaled > 0n) format = 'DecimalSI';
  }
  return { unscaled: positive ? unscaled : -unscaled, scale, format, ...(kept ? { s: str } : {}) };
}

/**
 * Whether ParseQuantity keeps the string it was given (its fast path, for a value that fits an
 * int64 at a scale of a nano or coarser, and a string it takes for canonical by these tests).
 */
function keptString(str: string, num: string, denom: string, exponent: number, format: QuantityFormat): boolean {
  let precision: number;
  let scale: number;
  if (format === 'BinarySI') {
    if (exponent < 0 || denom.length > 0) return false;
    precision = 15 - num.length - Math.trunc(Math.fround((Math.fround(exponent) * 3) / 10)) - 1;
    scale = 0;
  } else {
    precision = 18 - (num.length + denom.length);
    scale = exponent - denom.length;
  }
  if (precision < 0 || scale < -9) return false;
  const shifted = num + denom;
  const value = BigInt(shifted);
  const max = (1n << 63n) - 1n;
  if (value > max) return false;
  const mantissa = format === 'BinarySI' ? 1n << BigInt(exponent) : 1n;
  if (value * mantissa > max) return false;
  if (format === 'BinarySI') return exponent % 10 === 0 && (value & 7n) !== 0n;
  return scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0';
}

/** Mantissa and exponent (a multiple of 3) of the value, factors of ten moved into the exponent. */
function canonicalDecimal(q: Quantity): { mantissa: bigint; exponent: number } {
  let mantissa = q.unscaled;
  let exponent = -q.scale;
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    exponent++;
  }
  while (((exponent % 3) + 3) % 3 !== 0) {
    mantissa *= 10n;
    exponent--;
  }
  return { mantissa, exponent };
}

function decSuffix(exponent: number, format: QuantityFormat): string {
  if (format === 'DecimalExponent') return exponent === 0 ? '' : `e${exponent}`;
  // A DecimalSI exponent without a suffix (past E) is written without one, as Go does.
  for (const [s, e] of Object.entries(DEC_SUFFIXES)) if (e === exponent) return s;
  return '';
}

/** Quantity.String(): the canonical form. */
export function formatQuantity(q: Quantity): string {
  if (q.s !== undefined) return q.s;
  if (q.unscaled === 0n) return '0';
  let format = q.format;
  let integer: bigint | undefined;
  if (format === 'BinarySI') {
    const abs = q.unscaled < 0n ? -q.unscaled : q.unscaled;
    const lt1024 = q.scale >= 0 ? abs < 1024n * pow10(q.scale) : false;
    if (lt1024) format = 'DecimalSI';
    else if (q.scale <= 0) integer = q.unscaled * pow10(-q.scale);
    else if (q.unscaled % pow10(q.scale) === 0n) integer = q.unscaled / pow10(q.scale);
    else format = 'DecimalSI';
  }
  if (format !== 'BinarySI' || integer === undefined) {
    const { mantissa, exponent } = canonicalDecimal(q);
    return `${mantissa}${decSuffix(exponent, format)}`;
  }
  let amount = integer;
  let e = 0;
  while (amount !== 0n && amount % 1024n === 0n) {
    amount /= 1024n;
    e++;
  }
  const suffix = Object.entries(BIN_SUFFIXES).find(([, x]) => x === e * 10)?.[0] ?? '';
  return `${amount}${suffix}`;
}

/** A quantity's JSON value as resource.Quantity's UnmarshalJSON + MarshalJSON leave it. */
export function canonicalQuantity(json: unknown): string {
  if (json === null) return '0';
  let text: string;
  if (typeof json === 'string') text = json;
  else if (typeof json === 'number') text = numberLiteral(json);
  else throw new QuantityError(`cannot read a quantity from ${JSON.stringify(json)}`);
  return formatQuantity(parseQuantity(text.trim()));
}

/** How Go's encoder wrote a JSON number the server sent (integers without exponent when they fit). */
function numberLiteral(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return BigInt(n).toString();
  return String(n);
}
