// The takeover's prediction (src/sync/takeover.ts afterTakeover) against a naive, independent
// reading of the same rule on random objects: every field and list element that kubectl's
// client-side apply owns and Git's manifest no longer has is removed, list elements paired by their
// FieldsV1 key or value (a port by port and protocol, a set's value), as the server pairs them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from '../../src/api/index.ts';
import { afterTakeover } from '../../src/sync/takeover.ts';

type Fields = Record<string, unknown>;
const CSA = 'kubectl-client-side-apply';

function random(seed: number) {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = <T>(a: readonly T[]): T => a[Math.floor(next() * a.length)] as T;
  return { next, pick };
}

/** A value and the FieldsV1 set of the fields kubectl owns in it, as the server writes them. */
function generate(r: ReturnType<typeof random>, depth: number): [unknown, Fields] {
  const x = r.next();
  if (depth > 3 || x < 0.3) return [r.pick(['x', 1, true, 'y']), {}];
  if (x < 0.55) {
    const value: Record<string, unknown> = {};
    const set: Fields = {};
    for (let i = 0; i < 1 + Math.floor(r.next() * 4); i++) {
      const k = r.pick(['a', 'b', 'c', 'port']);
      const [v, s] = generate(r, depth + 1);
      value[k] = v;
      if (r.next() < 0.8) set[`f:${k}`] = s;
    }
    return [value, set];
  }
  if (x < 0.8) {
    // An associative list: keyed by port and protocol (some elements with a name too), or by name.
    const byPort = r.next() < 0.4;
    const list: Array<Record<string, unknown>> = [];
    const set: Fields = {};
    for (let i = 0; i < Math.floor(r.next() * 5); i++) {
      const el: Record<string, unknown> = byPort
        ? {
            port: r.pick([80, 443, 53]),
            protocol: r.pick(['TCP', 'UDP']),
            ...(r.next() < 0.5 ? { name: r.pick(['http', 'dns']) } : {}),
          }
        : { name: r.pick(['p', 'q', 'r', 's', 't']) };
      const [v, s] = generate(r, depth + 1);
      if (r.next() < 0.6) el['val'] = v;
      const key = byPort
        ? `k:{"port":${String(el['port'])},"protocol":"${String(el['protocol'])}"}`
        : `k:${JSON.stringify({ name: el['name'] })}`;
      if (set[key]) continue;
      list.push(el);
      set[key] = {
        '.': {},
        ...(byPort ? { 'f:port': {}, 'f:protocol': {}, ...(el['name'] ? { 'f:name': {} } : {}) } : { 'f:name': {} }),
        ...(el['val'] !== undefined ? { 'f:val': s } : {}),
      };
    }
    return [list, set];
  }
  // A set of scalars.
  const values = [...new Set(Array.from({ length: Math.floor(r.next() * 5) }, () => r.pick(['s1', 's2', 's3'])))];
  return [values, Object.fromEntries(values.map((v) => [`v:${JSON.stringify(v)}`, {}]))];
}

/** Git's manifest: the live value with some fields and list elements dropped. */
function shrink(r: ReturnType<typeof random>, v: unknown): unknown {
  if (Array.isArray(v)) return v.filter(() => r.next() < 0.6).map((x) => shrink(r, x));
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .filter(() => r.next() < 0.75)
        .map(([k, x]) => [k, shrink(r, x)]),
    );
  return v;
}

const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const isLeaf = (s: Fields) => Object.keys(s).every((k) => k === '.');
function names(el: unknown, step: string): boolean {
  const want = JSON.parse(step.slice(2)) as unknown;
  if (step.startsWith('v:')) return isDeepStrictEqual(el, want);
  return (
    isRecord(el) &&
    isRecord(want) &&
    Object.keys(want).every((k) => el[k] !== undefined && isDeepStrictEqual(el[k], want[k]))
  );
}

/** The rule read naively: scans, no index, no cost bound. */
function expected(v: unknown, git: unknown, set: Fields): unknown {
  if (isRecord(v)) {
    const out = { ...v };
    for (const [step, sub] of Object.entries(set) as Array<[string, Fields]>) {
      const k = step.slice(2);
      if (!step.startsWith('f:') || !(k in out)) continue;
      const has = isRecord(git) && k in git;
      if (isLeaf(sub)) {
        if (!has) delete out[k];
      } else out[k] = expected(out[k], has ? git[k] : undefined, sub);
    }
    return out;
  }
  if (Array.isArray(v)) {
    const out = [...v];
    const drop = new Set<number>();
    for (const [step, sub] of Object.entries(set) as Array<[string, Fields]>) {
      const i = step === '.' ? -1 : out.findIndex((el) => names(el, step));
      if (i < 0) continue;
      const j = Array.isArray(git) ? git.findIndex((el) => names(el, step)) : -1;
      if ((isLeaf(sub) || '.' in sub) && j < 0) drop.add(i);
      else if (!isLeaf(sub)) out[i] = expected(out[i], j < 0 ? undefined : (git as unknown[])[j], sub);
    }
    return out.filter((_, i) => !drop.has(i));
  }
  return v;
}

test("the takeover's prediction removes what kubectl owned and Git dropped, list elements paired by key or value (3,000 random objects)", () => {
  const r = random(777);
  const wrong: string[] = [];
  for (let n = 0; n < 3000; n++) {
    const [spec, set] = generate(r, 0);
    const live: KubeObject = {
      apiVersion: 'v1',
      kind: 'X',
      metadata: { name: 'x', managedFields: [{ manager: CSA, operation: 'Update', fieldsV1: { 'f:spec': set } }] },
      spec,
    } as KubeObject;
    const git = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: shrink(r, spec) } as KubeObject;
    const got = afterTakeover(structuredClone(live), git, live, 'impersync', [CSA])['spec'];
    const want = expected(structuredClone(spec), git['spec'], set);
    if (!isDeepStrictEqual(got, want) && wrong.length < 3)
      wrong.push(
        `live ${JSON.stringify(spec)}\ngit ${JSON.stringify(git['spec'])}\ngot ${JSON.stringify(got)}\nwant ${JSON.stringify(want)}`,
      );
  }
  assert.deepEqual(wrong, []);
});
