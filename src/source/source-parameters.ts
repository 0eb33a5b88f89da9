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
import type { ApplicationSource } from '../api/application.ts';
import { SourceError, formatBytes } from './errors.ts';
import type { DocumentLimits } from './expand.ts';
import { parseFirstYAMLDocument } from './parse.ts';
import { isInside, physicalRelative } from './paths.ts';

export const REPO_SOURCE_FILE = '.argocd-source.yaml';
/** Largest source parameter file read (what Image Updater writes is a few hundred bytes). */
export const SOURCE_PARAMETERS_MAX_BYTES = 1024 * 1024;
export const appSourceFile = (appName: string): string => `.argocd-source-${appName}.yaml`;

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

export const PREFIX = 'error while parsing source parameters: ';
export const prefix = (shown: string): string => `${PREFIX}${shown}: `;

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
    // The schemas that check a patched source (zod) are loaded when a folder has a file to apply.
    const { applyPatch } = await import('./source-parameters-apply.ts');
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
