// Every override of spec.source.kustomize changes the app's own kustomization file in Argo CD
// v3.6.1 (util/kustomize/kustomize.go Build), each with a `kustomize edit` in the app folder, in
// this order: `set nameprefix`, `set namesuffix`, `set image` (build variables substituted), `set
// replicas`, `add label` (`--force`, `--without-selector`, `--include-templates`; values
// substituted), `add annotation` (`--force`; values substituted with commonAnnotationsEnvsubst),
// `set namespace`, then the Application's patches appended to the file's `patches` (there is no
// `kustomize edit` for them), then `add component`. So an Application namePrefix replaces the
// kustomization's own, an image override replaces the file's entry for that image, a label already
// in the file is kustomize's error unless forced, and patches and components run before the file's
// own namePrefix, namespace and labels (a patch's `path` and a component's path are relative to the
// app folder and held to its load restrictor). The checked-out commit is shared with other renders
// and must not be edited: the edits are made in a private copy of the checkout, its files hard
// links to the commit's (linkTree), the kustomization files themselves replaced by copies of their
// own before anything writes to them.
//
// Tenant content: every value is passed after `--`, so none is read as one of kustomize's flags
// (the flags are the renderer's, from booleans). A component path must stay inside the repository,
// as written (`..`, absolute) and physically (no symlink out), checked here with the value files'
// rules (paths.ts) before kustomize is given it; everything the edited kustomization then reaches
// is checked again by the caller (kustomize-check.ts) on the copy, before `kustomize build`.
import { constants } from 'node:fs';
import {
  copyFile,
  link,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { envsubst, type BuildEnv } from './build-env.ts';
import { SourceError, formatBytes } from './errors.ts';
import type { DocumentLimits } from './expand.ts';
import { run, tail, type RunOptions } from './exec.ts';
import { hasScheme } from './kustomize-remote.ts';
import { KUSTOMIZATION_FILES } from './kustomize-check.ts';
import { parseFirstYAMLDocument } from './parse.ts';
import { isInside, physicalRelative } from './paths.ts';

/** spec.source.kustomize as Argo CD's ApplicationSourceKustomize has it (its overrides all edit the kustomization file). */
export interface KustomizationEdits {
  [field: string]: unknown;
  namePrefix?: unknown;
  nameSuffix?: unknown;
  images?: unknown;
  replicas?: unknown;
  commonLabels?: unknown;
  forceCommonLabels?: unknown;
  labelWithoutSelector?: unknown;
  labelIncludeTemplates?: unknown;
  commonAnnotations?: unknown;
  forceCommonAnnotations?: unknown;
  commonAnnotationsEnvsubst?: unknown;
  namespace?: unknown;
  patches?: unknown;
  components?: unknown;
  ignoreMissingComponents?: unknown;
}

const STRINGS = ['namePrefix', 'nameSuffix', 'namespace'] as const;
const LISTS = ['images', 'replicas', 'patches', 'components'] as const;
const MAPS = ['commonLabels', 'commonAnnotations'] as const;
const BOOLEANS = [
  'forceCommonLabels',
  'labelWithoutSelector',
  'labelIncludeTemplates',
  'forceCommonAnnotations',
  'commonAnnotationsEnvsubst',
  'ignoreMissingComponents',
] as const;

const unset = (v: unknown): boolean => v === undefined || v === null;

/**
 * True when the source sets a field that edits the app's kustomization file (as Argo CD's Build
 * tests them: a non-empty string, list or map). A field of the wrong shape is refused (Argo CD
 * could not decode the source), never passed over.
 */
export function hasKustomizationEdits(spec: KustomizationEdits): boolean {
  let any = false;
  const wrong = (field: string, expected: string, v: unknown): SourceError =>
    new SourceError('InvalidSource', `spec.source.kustomize.${field}: expected ${expected}, got ${JSON.stringify(v)}`);
  for (const field of STRINGS) {
    const v = spec[field];
    if (unset(v)) continue;
    if (typeof v !== 'string') throw wrong(field, 'a string', v);
    if (v !== '') any = true;
  }
  for (const field of LISTS) {
    const v = spec[field];
    if (unset(v)) continue;
    if (!Array.isArray(v)) throw wrong(field, 'a list', v);
    if (v.length > 0) any = true;
  }
  for (const i of (Array.isArray(spec.images) ? spec.images : []).keys()) {
    const image = (spec.images as unknown[])[i];
    if (typeof image !== 'string') throw wrong(`images[${i}]`, 'a string', image);
  }
  for (const field of MAPS) {
    const v = spec[field];
    if (unset(v)) continue;
    if (typeof v !== 'object' || Array.isArray(v)) throw wrong(field, 'a map of strings', v);
    for (const [key, value] of Object.entries(v as Record<string, unknown>))
      if (typeof value !== 'string') throw wrong(`${field}.${key}`, 'a string', value);
    if (Object.keys(v as object).length > 0) any = true;
  }
  for (const field of BOOLEANS) {
    const v = spec[field];
    if (!unset(v) && typeof v !== 'boolean') throw wrong(field, 'a boolean', v);
  }
  return any;
}

/**
 * Copies the tree at `from` to `to` (which must not exist): folders made, files hard-linked (copied
 * when the two are on different filesystems), symlinks made again with the same target. Nothing
 * under `to` may be written in place afterwards except a file first replaced (privateFile).
 */
export async function linkTree(from: string, to: string): Promise<void> {
  await mkdir(to);
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const src = path.join(from, entry.name);
    const dst = path.join(to, entry.name);
    if (entry.isDirectory()) await linkTree(src, dst);
    else if (entry.isSymbolicLink()) await symlink(await readlink(src), dst);
    else if (entry.isFile()) {
      try {
        await link(src, dst);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
        await copyFile(src, dst);
      }
    }
    // A FIFO, socket or device is not copied: no kustomization can use one.
  }
}

export interface EditInput {
  binary: string;
  /** The physical root of the private copy. */
  root: string;
  /** The app folder in the copy. */
  appDir: string;
  shownPath: string;
  spec: KustomizationEdits;
  /** Substituted into images, label values and (commonAnnotationsEnvsubst) annotation values. */
  buildEnv?: BuildEnv | undefined;
  /** Largest kustomization file read for `patches`. */
  maxFileBytes: number;
  documents: DocumentLimits;
  /** How kustomize runs: its environment (the git of kustomize-git.ts for remote components), limits, scrubbing. */
  run: Omit<RunOptions, 'cwd' | 'label'>;
}

/** Makes the Application's overrides part of the copy's app kustomization, in Argo CD's order. */
export async function editKustomization(input: EditInput): Promise<void> {
  // Whatever the edits write must land in files of the copy's own, never in the commit's.
  for (const name of KUSTOMIZATION_FILES) await privateFile(input, name);
  const { spec } = input;
  const vars = input.buildEnv;
  const text = (v: unknown): string => (typeof v === 'string' ? v : '');
  const map = (v: unknown): [string, string][] =>
    v !== null && typeof v === 'object' ? (Object.entries(v) as [string, string][]) : [];
  if (text(spec.namePrefix) !== '') await kustomizeEdit(input, ['set', 'nameprefix'], [], [text(spec.namePrefix)]);
  if (text(spec.nameSuffix) !== '') await kustomizeEdit(input, ['set', 'namesuffix'], [], [text(spec.nameSuffix)]);
  if (Array.isArray(spec.images) && spec.images.length > 0)
    // Build variables substituted: an image may name ${ARGOCD_APP_REVISION}.
    await kustomizeEdit(
      input,
      ['set', 'image'],
      [],
      spec.images.map((image) => envsubst(String(image), vars)),
    );
  if (Array.isArray(spec.replicas) && spec.replicas.length > 0) {
    const args = spec.replicas.map((r, i) => replicaArg(r, i));
    await kustomizeEdit(input, ['set', 'replicas'], [], args);
  }
  const labels = map(spec.commonLabels);
  if (labels.length > 0) {
    const flags = [
      ...(spec.forceCommonLabels === true ? ['--force'] : []),
      ...(spec.labelWithoutSelector === true ? ['--without-selector'] : []),
      ...(spec.labelIncludeTemplates === true ? ['--include-templates'] : []),
    ];
    // `key:value` each, as Argo CD's mapToEditAddArgs writes them for kustomize 3.8.5 and newer.
    const args = labels.map(([k, v]) => `${k}:${envsubst(v, vars)}`);
    await kustomizeEdit(input, ['add', 'label'], flags, args);
  }
  const annotations = map(spec.commonAnnotations);
  if (annotations.length > 0) {
    const flags = spec.forceCommonAnnotations === true ? ['--force'] : [];
    const substitute = spec.commonAnnotationsEnvsubst === true;
    const args = annotations.map(([k, v]) => `${k}:${substitute ? envsubst(v, vars) : v}`);
    await kustomizeEdit(input, ['add', 'annotation'], flags, args);
  }
  if (text(spec.namespace) !== '') await kustomizeEdit(input, ['set', 'namespace'], [], [text(spec.namespace)]);
  if (Array.isArray(spec.patches) && spec.patches.length > 0) await appendPatches(input, spec.patches);
  if (Array.isArray(spec.components) && spec.components.length > 0) {
    const found: string[] = [];
    for (const c of spec.components) {
      if (typeof c !== 'string')
        throw new SourceError('InvalidSource', 'spec.source.kustomize.components: each entry must be a string');
      if (spec.ignoreMissingComponents === true) {
        // Argo CD keeps a component only if its folder inside the repository (os.Root's Stat: no
        // `..` or symlink out of it) holds a kustomization file, and stops at the first it keeps
        // (its loop breaks out of the components' loop): the others are left out without a word.
        if (await hasKustomizationInside(input, c)) {
          found.push(c);
          break;
        }
        continue;
      }
      await checkComponent(input, c);
      found.push(c);
    }
    if (found.length > 0) await kustomizeEdit(input, ['add', 'component'], [], found);
  }
}

/**
 * Replaces the copy's hard link (or symlink) `name` in the app folder by a file of its own with the
 * same content, so that `kustomize edit` writing it changes the copy only.
 */
async function privateFile(input: EditInput, name: string): Promise<void> {
  const file = path.join(input.appDir, name);
  const info = await lstat(file).catch(() => undefined);
  if (!info) return;
  let content: Buffer | undefined;
  if (info.isSymbolicLink() || info.isFile()) {
    const physical = await physicalRelative(input.root, file);
    if (physical === undefined)
      throw new SourceError('InvalidSource', `${rel(input, file)}: it is a symlink that leads outside the repository`);
    const real = path.join(input.root, physical);
    const target = await lstat(real).catch(() => undefined);
    if (target?.isFile()) content = await readLimited(real, rel(input, file), input.maxFileBytes);
  }
  if (content === undefined) return; // a folder of that name, or a link to nothing: kustomize finds no file there either
  await unlink(file);
  await writeFile(file, content, { mode: info.isFile() ? info.mode & 0o777 : 0o644 });
}

async function readLimited(file: string, shown: string, max: number): Promise<Buffer> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    // What was opened is what is read: a file put in the checked one's place that is no regular file is refused.
    if (!(await handle.stat()).isFile()) throw new SourceError('InvalidSource', `${shown} is not a regular file`);
    const buffer = Buffer.alloc(max + 1);
    const { bytesRead } = await handle.read(buffer, 0, max + 1, 0);
    if (bytesRead > max)
      throw new SourceError('TooLarge', `${shown} is more than the renderer's limit of ${formatBytes(max)}`);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** `name=count` as Argo CD's KustomizeReplica.GetIntCount gives it: a count may be an integer or a string of one. */
export function replicaArg(replica: unknown, index: number): string {
  const r = (replica ?? {}) as { name?: unknown; count?: unknown };
  const name = typeof r.name === 'string' ? r.name : '';
  let count: bigint;
  if (typeof r.count === 'string') {
    // Go's strconv.Atoi: an optional sign and decimal digits, within 64 bits.
    if (!/^[+-]?\d+$/.test(r.count) || !fitsInt64(BigInt(r.count)))
      throw new SourceError('InvalidSource', `expected integer value for count. Received: ${r.count}`);
    count = BigInt(r.count);
  } else if (typeof r.count === 'number' && Number.isInteger(r.count)) {
    count = BigInt(r.count);
  } else if (r.count === undefined || r.count === null) {
    count = 0n; // intstr's zero value
  } else {
    throw new SourceError(
      'InvalidSource',
      `spec.source.kustomize.replicas[${index}].count: expected an integer or a string, got ${JSON.stringify(r.count)}`,
    );
  }
  return `${name}=${count.toString()}`;
}

function fitsInt64(n: bigint): boolean {
  return n >= -(2n ** 63n) && n < 2n ** 63n;
}

/** A component that is a local path must lead to a place inside the repository, as written and physically. */
async function checkComponent(input: EditInput, component: string): Promise<void> {
  // A URL (a remote component) is kustomize's to fetch, through the git that holds it to the
  // project's sourceRepos; the edited kustomization is checked as a whole afterwards.
  if (hasScheme(component)) return;
  const abs = path.resolve(input.appDir, component);
  if (!isInside(input.root, abs))
    throw new SourceError(
      'InvalidSource',
      `kustomize component '${component}' of '${input.shownPath}' is outside the repository`,
    );
  if ((await physicalRelative(input.root, abs)) === undefined)
    throw new SourceError(
      'InvalidSource',
      `kustomize component '${component}' of '${input.shownPath}' leads outside the repository through a symlink`,
    );
}

/**
 * What Argo CD's ignoreMissingComponents keeps: a folder that holds a regular kustomization.yaml,
 * kustomization.yml or Kustomization, inside the repository physically.
 */
async function hasKustomizationInside(input: EditInput, component: string): Promise<boolean> {
  const dir = path.join(input.appDir, component);
  for (const name of KUSTOMIZATION_FILES) {
    const abs = path.join(dir, name);
    if (!isInside(input.root, abs)) return false;
    const physical = await physicalRelative(input.root, abs);
    if (physical === undefined) continue;
    if ((await stat(path.join(input.root, physical)).catch(() => undefined))?.isFile()) return true;
  }
  return false;
}

/**
 * The Application's patches after the kustomization's own, as Argo CD writes them: the file read
 * as sigs.k8s.io/yaml reads it (its first document), each patch with the fields of Argo CD's
 * KustomizePatch only.
 */
async function appendPatches(input: EditInput, patches: unknown[]): Promise<void> {
  let name: string | undefined;
  for (const f of KUSTOMIZATION_FILES) if (name === undefined && (await exists(path.join(input.appDir, f)))) name = f;
  if (name === undefined) throw new SourceError('InvalidSource', 'kustomization file not found in the path');
  const file = path.join(input.appDir, name);
  const shown = rel(input, file);
  const text = (await readLimited(file, shown, input.maxFileBytes)).toString('utf8');
  let doc: unknown;
  try {
    doc = parseFirstYAMLDocument(text, shown, input.documents);
  } catch (err) {
    if (!(err instanceof SourceError)) throw err;
    throw new SourceError(
      err.reason === 'TooLarge' ? 'TooLarge' : 'InvalidSource',
      `failed to unmarshal kustomization.yaml: ${err.message}`,
    );
  }
  // Argo CD names the type of its (typed, empty) map here, whatever the file holds.
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new SourceError(
      'InvalidSource',
      'expected kustomization.yaml to be type map[string]any, but got map[string]interface {}',
    );
  const k = doc as Record<string, unknown>;
  const typed = patches.map((p, i) => kustomizePatch(p, i));
  if (Object.hasOwn(k, 'patches')) {
    if (!Array.isArray(k.patches))
      throw new SourceError(
        'InvalidSource',
        `expected 'patches' field in kustomization.yaml to be []any, but got ${goType(k.patches)}`,
      );
    k.patches = [...(k.patches as unknown[]), ...typed];
  } else {
    k.patches = typed;
  }
  // JSON is YAML: kustomize reads it back as it reads the file Argo CD writes.
  await writeFile(file, JSON.stringify(k, null, 2));
}

/** os.Stat's answer, as findKustomizeFile asks it: something is there (a link followed). */
async function exists(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined)) !== undefined;
}

/** The type name Go's %T gives a value sigs.k8s.io/yaml decoded. */
function goType(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return '[]interface {}';
  if (typeof v === 'object') return 'map[string]interface {}';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  return 'float64';
}

const SELECTOR_FIELDS = ['group', 'version', 'kind', 'name', 'namespace', 'annotationSelector', 'labelSelector'];

/** One patch as Argo CD's KustomizePatch marshals it: path, patch, target and options, empty ones left out. */
function kustomizePatch(patch: unknown, index: number): Record<string, unknown> {
  const where = `spec.source.kustomize.patches[${index}]`;
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch))
    throw new SourceError('InvalidSource', `${where}: expected a map`);
  const p = patch as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of ['path', 'patch']) {
    const v = p[key];
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string') throw new SourceError('InvalidSource', `${where}.${key}: expected a string`);
    out[key] = v;
  }
  if (p.target !== undefined && p.target !== null) {
    if (typeof p.target !== 'object' || Array.isArray(p.target))
      throw new SourceError('InvalidSource', `${where}.target: expected a map`);
    const t = p.target as Record<string, unknown>;
    const target: Record<string, unknown> = {};
    for (const key of SELECTOR_FIELDS) {
      const v = t[key];
      if (v === undefined || v === null || v === '') continue;
      if (typeof v !== 'string') throw new SourceError('InvalidSource', `${where}.target.${key}: expected a string`);
      target[key] = v;
    }
    out.target = target;
  }
  if (p.options !== undefined && p.options !== null) {
    if (typeof p.options !== 'object' || Array.isArray(p.options))
      throw new SourceError('InvalidSource', `${where}.options: expected a map of booleans`);
    const options = Object.entries(p.options as Record<string, unknown>);
    for (const [k, v] of options)
      if (typeof v !== 'boolean') throw new SourceError('InvalidSource', `${where}.options.${k}: expected a boolean`);
    if (options.length > 0) out.options = Object.fromEntries(options);
  }
  return out;
}

/**
 * `kustomize edit <verb...> <flags...> -- <args>` in the copy's app folder; a failure is ToolFailed
 * with kustomize's words.
 */
async function kustomizeEdit(input: EditInput, verb: string[], flags: string[], args: string[]): Promise<void> {
  // After `--`, nothing a tenant wrote can be read as one of kustomize's flags.
  const label = `kustomize edit ${verb.join(' ')} of '${input.shownPath}'`;
  const r = await run(input.binary, ['edit', ...verb, ...flags, '--', ...args], {
    ...input.run,
    cwd: input.appDir,
    label,
  });
  if (r.code !== 0) {
    // cobra prints the command's usage after the error: the error is what is said.
    const error = r.stderr.split(/\r?\nUsage:\r?\n/)[0] ?? '';
    throw new SourceError('ToolFailed', `${label} failed: ${tail(error) || `exit code ${r.code}`}`);
  }
}

function rel(input: EditInput, file: string): string {
  return path.relative(input.root, file).split(path.sep).join('/');
}
