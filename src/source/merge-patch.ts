// JSON Merge Patch (RFC 7386) on plain JSON values: a patch that is an object is merged into the
// target key by key (a null deletes the key, an object merges recursively, anything else replaces);
// a patch that is not an object replaces the target whole. Values here come from tenant files, so
// every key is written as an own data property (a `__proto__` key stays a key and never becomes a
// prototype) and nesting is bounded (recursion follows the patch).

/** Deeper than this, a patch is refused rather than walked (nothing Argo CD reads is nested so deep). */
export const MAX_PATCH_DEPTH = 512;

export class PatchTooDeep extends Error {
  constructor() {
    super(`nested more than ${MAX_PATCH_DEPTH} levels deep`);
  }
}

export type JSONObject = { [key: string]: unknown };

export function isJSONObject(v: unknown): v is JSONObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Sets `key` of `obj` as an own, enumerable data property, whatever the key is. */
export function setOwn(obj: JSONObject, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

/** `target` with `patch` applied; neither is modified. */
export function mergePatch(target: unknown, patch: unknown, depth = 0): unknown {
  if (depth > MAX_PATCH_DEPTH) throw new PatchTooDeep();
  if (!isJSONObject(patch)) return patch;
  const out: JSONObject = {};
  if (isJSONObject(target)) for (const [k, v] of Object.entries(target)) setOwn(out, k, v);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) {
      delete out[k];
      continue;
    }
    const current = Object.hasOwn(out, k) ? out[k] : undefined;
    setOwn(out, k, mergePatch(current, v, depth + 1));
  }
  return out;
}
