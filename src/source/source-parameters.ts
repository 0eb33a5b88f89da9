// Source parameter files, as Argo CD's repo-server reads them before every render: in the app
// folder, `.argocd-source.yaml` and then `.argocd-source-<app name>.yaml` (what Argo CD Image
// Updater's git write-back commits) are each applied to spec.source as a JSON merge patch, and the
// result is what the render uses: its type, and its helm, kustomize and directory blocks. Where the
// source comes from (repoURL, path, chart, targetRevision) stays what the Application says.
//
// The files are tenant content: read only when they really are in the repository (a symlink out is
// refused), no larger than the renderer's file limit, parsed like manifests (YAML 1.1, aliases
// counted at every use), and the result held to the Application's schema. Whatever it sets then
// meets the same checks as spec.source itself (refused fields, flag-like values, value files
// outside the repository), because those run on the merged source.
import { constants } from 'node:fs';
import { lstat, open, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ApplicationSourceSchema, type ApplicationSource } from '../api/application.ts';
import { SourceError, formatBytes } from './errors.ts';
import type { DocumentLimits } from './expand.ts';
import { isJSONObject, mergePatch, PatchTooDeep, setOwn, type JSONObject } from './merge-patch.ts';
import { parseFirstYAMLDocument } from './parse.ts';
import { isInside, physicalRelative } from './paths.ts';

export const REPO_SOURCE_FILE = '.argocd-source.yaml';
/** Largest source parameter file read (what Image Updater writes is a few hundred bytes). */
export const SOURCE_PARAMETERS_MAX_BYTES = 1024 * 1024;
export const appSourceFile = (appName: string): string => `.argocd-source-${appName}.yaml`;

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
      commonAnnotations: z.record(z.string(), z.string()).optional(),
      commonAnnotationsEnvsubst: flag,
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

export interface SourceParameterInput {
  /** The physical root of the checkout (or unpacked chart). */
  root: string;
  /** The physical app folder, inside `root`. */
  appDir: string;
  source: ApplicationSource;
  appName: string;
  maxFileBytes: number;
  documents: DocumentLimits;
}

const PREFIX = 'error while parsing source parameters: ';
const prefix = (shown: string): string => `${PREFIX}${shown}: `;

/** spec.source with the app folder's source parameter files applied; `source` itself when there are none. */
export async function mergeSourceParameters(input: SourceParameterInput): Promise<ApplicationSource> {
  const names = [REPO_SOURCE_FILE];
  if (input.appName !== '') names.push(appSourceFile(input.appName));
  let merged: ApplicationSource = input.source;
  for (const name of names) {
    const file = path.join(input.appDir, name);
    const shown = path.relative(input.root, file).split(path.sep).join('/');
    // A name with a `/` or `..` in it (no Kubernetes name has one) names no file of this folder: there
    // is none to read, and the name meets its own check (the release name's) afterwards.
    if (path.dirname(file) !== input.appDir || path.basename(file) !== name || !isInside(input.appDir, file)) continue;
    const patch = await readPatch(file, shown, input);
    if (patch === undefined) continue;
    merged = applyPatch(merged, patch, input.source, shown);
  }
  return merged;
}

/** The file's first document (null when empty), or undefined when there is no such file. */
async function readPatch(file: string, shown: string, input: SourceParameterInput): Promise<unknown> {
  if (!(await lstat(file).catch(() => undefined))) return undefined;
  const physical = await physicalRelative(input.root, file);
  if (physical === undefined) {
    throw new SourceError('InvalidSource', `${prefix(shown)}it is a symlink that leads outside the repository`);
  }
  const info = await stat(file).catch(() => undefined);
  // As Argo CD: a link to nothing is no file, and a folder of that name is passed over.
  if (!info || info.isDirectory()) return undefined;
  if (!info.isFile()) throw new SourceError('InvalidSource', `${prefix(shown)}it is not a regular file`);
  const max = Math.min(input.maxFileBytes, SOURCE_PARAMETERS_MAX_BYTES);
  const tooLarge = (size: number) =>
    new SourceError('TooLarge', `${prefix(shown)}it is ${formatBytes(size)}, over the ${formatBytes(max)} limit`);
  if (info.size > max) throw tooLarge(info.size);
  // What is read is the file checked: its physical path, opened without following a link (one put
  // there since is refused) and without blocking, and no more than the limit read from the handle.
  let handle;
  try {
    handle = await open(
      path.join(input.root, physical),
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
  } catch (err) {
    throw new SourceError(
      'InvalidSource',
      `${prefix(shown)}it cannot be read (${(err as NodeJS.ErrnoException).code})`,
    );
  }
  let text: string;
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) throw new SourceError('InvalidSource', `${prefix(shown)}it is not a regular file`);
    const buffer = Buffer.alloc(max + 1);
    const { bytesRead } = await handle.read(buffer, 0, max + 1, 0);
    if (bytesRead > max) throw tooLarge(opened.size);
    text = buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
  try {
    return parseFirstYAMLDocument(text, shown, input.documents);
  } catch (err) {
    if (!(err instanceof SourceError)) throw err;
    // The parser's message starts with the file already.
    throw new SourceError(err.reason === 'TooLarge' ? 'TooLarge' : 'InvalidSource', `${PREFIX}${err.message}`, {
      cause: err,
    });
  }
}

function applyPatch(
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
