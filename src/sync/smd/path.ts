// Field paths as structured-merge-diff (sigs.k8s.io/structured-merge-diff fieldpath) names them: a
// path is a list of elements, each a field name, an associative list's key fields, a set's value,
// or an index. Each element has one canonical string (the managedFields FieldsV1 key: `f:name`,
// `k:{"name":"x"}`, `v:"a"`, `i:0`), which is what sets compare by.

/** A JSON value as Kubernetes sends it. */
export type Value = null | boolean | number | string | Value[] | { [k: string]: Value };

export type PathElement =
  { field: string } | { key: ReadonlyArray<readonly [string, Value]> } | { value: Value } | { index: number };

export type Path = readonly PathElement[];

/** JSON with object keys sorted, so equal values give equal strings. */
export function canonicalJson(v: Value | undefined): string {
  if (v === undefined) return 'null';
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`).join(',')}}`;
}

/** The FieldsV1 key of an element; also its identity in a set. */
export function elementKey(pe: PathElement): string {
  if ('field' in pe) return `f:${pe.field}`;
  if ('key' in pe) return `k:{${pe.key.map(([n, v]) => `${JSON.stringify(n)}:${canonicalJson(v)}`).join(',')}}`;
  if ('value' in pe) return `v:${canonicalJson(pe.value)}`;
  return `i:${pe.index}`;
}

/** As structured-merge-diff prints an element in its messages: `.name`, `[name="x"]`, `[="a"]`, `[0]`. */
export function elementString(pe: PathElement): string {
  if ('field' in pe) return `.${pe.field}`;
  if ('key' in pe) return `[${pe.key.map(([n, v]) => `${n}=${canonicalJson(v)}`).join(',')}]`;
  if ('value' in pe) return `[=${canonicalJson(pe.value)}]`;
  return `[${pe.index}]`;
}

export function pathString(p: Path): string {
  return p.map(elementString).join('');
}

/** Key fields in name order, as structured-merge-diff sorts them. */
export function keyElement(fields: Array<readonly [string, Value]>): PathElement {
  return { key: [...fields].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) };
}

/** A FieldsV1 key read back into an element; null for a prefix structured-merge-diff does not know. */
export function parseElementKey(s: string): PathElement | null {
  if (s.length < 2) throw new Error(`key must be 2 characters long: ${s}`);
  if (s[1] !== ':') throw new Error(`missing colon: ${s}`);
  const body = s.slice(2);
  switch (s[0]) {
    case 'f':
      return { field: body };
    case 'v':
      return { value: JSON.parse(body) as Value };
    case 'k': {
      const parsed = JSON.parse(body) as unknown;
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new Error(`key of ${s} is not a JSON object`);
      return keyElement(Object.entries(parsed as Record<string, Value>));
    }
    case 'i': {
      if (!/^[+-]?\d+$/.test(body)) throw new Error(`invalid index: ${s}`);
      return { index: Number(body) };
    }
    default:
      return null;
  }
}
