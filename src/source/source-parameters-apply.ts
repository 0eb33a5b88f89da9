// Applying a source parameter file's patch to spec.source (source-parameters.ts reads the file):
// apart from the reader so that the schemas it checks with are loaded only by a render whose
// folder has such a file.
import { z } from 'zod';
import { ApplicationSourceSchema, type ApplicationSource } from '../api/application.ts';
import { SourceError } from './errors.ts';
import { isJSONObject, mergePatch, PatchTooDeep, setOwn, type JSONObject } from './merge-patch.ts';
import { prefix } from './source-parameters.ts';

const flag = z.boolean().optional();
const SELECTOR_FIELDS = ['group', 'version', 'kind', 'name', 'namespace', 'annotationSelector', 'labelSelector'];
/** The fields of helm and kustomize the renderer reads that ApplicationSourceSchema leaves untyped. */
const TYPED_FIELDS = z.looseObject({
  helm: z
    .looseObject({
      namespace: z.string().optional(),
      kubeVersion: z.string().optional(),
      apiVersions: z.array(z.string()).optional(),
      version: z.string().optional(),
      skipCrds: flag,
      skipTests: flag,
      skipSchemaValidation: flag,
      ignoreMissingValueFiles: flag,
      passCredentials: flag,
      fileParameters: z.array(z.looseObject({ name: z.string().optional(), path: z.string().optional() })).optional(),
    })
    .optional(),
  kustomize: z
    .looseObject({
      namespace: z.string().optional(),
      version: z.string().optional(),
      kubeVersion: z.string().optional(),
      apiVersions: z.array(z.string()).optional(),
      commonAnnotations: z.record(z.string(), z.string()).optional(),
      commonAnnotationsEnvsubst: flag,
      forceCommonLabels: flag,
      forceCommonAnnotations: flag,
      labelWithoutSelector: flag,
      labelIncludeTemplates: flag,
      replicas: z
        .array(z.looseObject({ name: z.string().optional(), count: z.union([z.int(), z.string()]).optional() }))
        .optional(),
      patches: z
        .array(
          z.looseObject({
            path: z.string().optional(),
            patch: z.string().optional(),
            target: z
              .looseObject(Object.fromEntries(SELECTOR_FIELDS.map((f) => [f, z.string().optional()])))
              .optional(),
            options: z.record(z.string(), z.boolean()).optional(),
          }),
        )
        .optional(),
      components: z.array(z.string()).optional(),
      ignoreMissingComponents: flag,
    })
    .optional(),
});

/** What the files may not change: where the source comes from (Argo CD puts these back too). */
const KEPT = ['repoURL', 'path', 'chart', 'targetRevision'] as const;

export function applyPatch(
  current: ApplicationSource,
  patch: unknown,
  original: ApplicationSource,
  shown: string,
): ApplicationSource {
  if (patch !== null && !isJSONObject(patch)) {
    const what = Array.isArray(patch) ? 'a list' : `a ${typeof patch}`;
    throw new SourceError('InvalidSource', `${prefix(shown)}it holds ${what}, not a map of source fields`);
  }
  let patched: unknown;
  try {
    patched = mergePatch(current, patch);
  } catch (err) {
    if (err instanceof PatchTooDeep) throw new SourceError('InvalidSource', `${prefix(shown)}${err.message}`);
    throw err;
  }
  // Argo CD decodes the patched JSON into the source it started from (Go's json.Unmarshal into an
  // existing struct), which keeps every field the JSON leaves out: a null in the file deletes
  // nothing of spec.source except inside helm.valuesObject (raw JSON, replaced whole), and an
  // empty file (null: a patch that replaces the whole document) changes nothing.
  const decoded = decodeInto(current, patched, '');
  const next: JSONObject = isJSONObject(decoded) ? decoded : { ...current };
  for (const key of KEPT) {
    if (original[key] === undefined) delete next[key];
    else setOwn(next, key, original[key]);
  }
  const checked = ApplicationSourceSchema.safeParse(next);
  // The CRD's types hold spec.source to its shape at admission; nothing holds a file to it, so
  // the fields the renderer reads are typed here (Argo CD's decoding refuses a wrong type too).
  const wrong = checked.success ? TYPED_FIELDS.safeParse(next).error : checked.error;
  if (wrong || !checked.success) {
    const issue = wrong?.issues[0];
    const field = issue?.path.map(String).join('.') || '(the whole file)';
    throw new SourceError('InvalidSource', `${prefix(shown)}${field}: ${issue?.message ?? 'invalid'}`);
  }
  const result = checked.data;
  return result;
}

/** What Go's json.Unmarshal of `next` into the value `prev` leaves there (see applyPatch). */
function decodeInto(prev: unknown, next: unknown, at: string): unknown {
  if (next === null && at === '') return prev;
  if (!isJSONObject(prev) || !isJSONObject(next) || at === 'helm.valuesObject') return next;
  const out: JSONObject = {};
  for (const [k, v] of Object.entries(prev)) setOwn(out, k, v);
  for (const [k, v] of Object.entries(next)) {
    // A null sets a pointer, list or map field to nil: absent.
    if (v === null) delete out[k];
    else setOwn(out, k, decodeInto(Object.hasOwn(out, k) ? out[k] : undefined, v, at === '' ? k : `${at}.${k}`));
  }
  return out;
}
