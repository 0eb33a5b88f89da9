// Which tool renders a source, by argocd-cm's tool settings (api/tool-settings.ts) as the controller
// sent them: a type argocd-cm turned off is read as a plain directory, as Argo CD's repo-server
// does (GetAppSourceType: "Manifest generation is disabled ... Assuming plain YAML manifest."), and
// `spec.source.kustomize.version` picks the binary of an admin's `kustomize.path.<version>`.
//
// A tenant names a version, never a path: the path is only ever one of the request's, which the
// controller read from argocd-cm, and it must be absolute (a relative one would be looked up from
// the app folder, the tenant's files).
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import type { ApplicationSource } from '../api/application.ts';
import type { ToolSettings } from '../api/tool-settings.ts';
import { SourceError } from './errors.ts';
import type { SourceType } from './spec.ts';

/** The type a source renders as: `found` unless argocd-cm turned it off. */
export function enabledType(found: SourceType, tools: ToolSettings | undefined): SourceType {
  if (found !== 'Directory' && found !== 'Plugin' && tools?.disabled?.includes(found)) return 'Directory';
  return found;
}

/** jsonnet.enable is not "true": a directory's .jsonnet files are left out (Argo CD's findManifests). */
export function jsonnetDisabled(tools: ToolSettings | undefined): boolean {
  return tools?.disabled?.includes('Directory') === true;
}

export interface KustomizeChoice {
  /** The binary of the version asked for; undefined: the renderer's own kustomize. */
  binary?: string | undefined;
  /** argocd-cm's kustomize.buildOptions, split as Argo CD splits them (strings.Fields); undefined: not set. */
  buildOptions?: string[] | undefined;
}

/** Argo CD's GetKustomizeBinaryPath and its build options, for a Kustomize source. */
export function chooseKustomize(source: ApplicationSource, tools: ToolSettings | undefined): KustomizeChoice {
  if (tools?.error) throw new SourceError('InvalidSource', tools.error);
  const options = tools?.kustomize?.buildOptions;
  // Argo CD v3.6.1 builds every version with the global kustomize.buildOptions: it reads
  // kustomize.buildOptions.<version> into its settings and no build uses them.
  const buildOptions = options !== undefined && options !== '' ? options.split(/\s+/).filter(Boolean) : undefined;
  const version = source.kustomize?.version;
  if (!version) return { buildOptions };
  const registered = tools?.kustomize?.versions?.find((v) => v.name === version);
  if (!registered)
    throw new SourceError(
      'InvalidSource',
      `error getting kustomize binary path: kustomize version ${version} is not registered`,
    );
  const binary = registered.path;
  if (!path.isAbsolute(binary))
    throw new SourceError(
      'InvalidSource',
      `argocd-cm kustomize.path.${version} must be an absolute path, not '${binary}'`,
    );
  if (!isExecutable(binary))
    throw new SourceError(
      'ToolMissing',
      `kustomize ${version} not found at '${binary}' (argocd-cm kustomize.path.${version})`,
    );
  return { binary, buildOptions };
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
