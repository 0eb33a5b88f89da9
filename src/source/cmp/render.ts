// Rendering a source whose type is Plugin (spec.source.plugin, or a plugin set by a source
// parameter file): Argo CD's repo-server hands it to a config management plugin sidecar. Until a
// plugin is configured for the renderer, such a source is refused with the repo-server's own
// message, so a folder meant for a plugin (say argocd-vault-plugin's `<password>` placeholders) is
// never applied as plain manifests.
import type { ApplicationSource } from '../../api/application.ts';
import { SourceError } from '../errors.ts';

type Plugin = NonNullable<ApplicationSource['plugin']>;

/**
 * The error of a plugin that cannot be found, in the words of Argo CD's
 * DetectConfigManagementPlugin, behind the "CMP processing failed" of its GenerateManifests.
 */
export function pluginNotFound(appName: string, plugin: Plugin, why?: string): SourceError {
  const found = plugin.name
    ? `could not find cmp-server plugin with name ${JSON.stringify(plugin.name)} supporting the given repository`
    : 'could not find plugin supporting the given repository';
  return new SourceError(
    'InvalidSource',
    `CMP processing failed for application ${JSON.stringify(appName)}: ${found}${why ? `: ${why}` : ''}`,
  );
}

export interface PluginRenderInput {
  appName: string;
  source: ApplicationSource;
}

export function renderPlugin(input: PluginRenderInput): never {
  throw pluginNotFound(
    input.appName,
    input.source.plugin ?? {},
    'no config management plugin is configured for the renderer',
  );
}
