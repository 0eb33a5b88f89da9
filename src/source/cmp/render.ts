// Rendering a source whose type is Plugin (spec.source.plugin, or a plugin set by a source
// parameter file) through a config management plugin sidecar, as Argo CD's repo-server does
// (reposerver/repository/repository.go runConfigManagementPluginSidecars, util/app/discovery):
// the plugin is found among the cmp-server sockets of the renderer's plugin folder, by name
// (`<name>.sock`) or by its discovery rules, is sent the repository and the plugin environment,
// and its manifests are parsed with the render's document limits. With no such plugin the source
// is refused in the repo-server's own words; its folder is never applied as plain manifests.
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ApplicationSource } from '../../api/application.ts';
import type { BuildEnv } from '../build-env.ts';
import type { RenderEnvironment, RenderRequest } from '../render.ts';
import { SourceError, redactURL } from '../errors.ts';
import type { DocumentLimits } from '../expand.ts';
import { parseManifests, type ParsedObject } from '../parse.ts';
import { archiveRepository, chunksOf, type RepoArchive } from './archive.ts';
// The gRPC client is loaded when a plugin socket is there to call: a render thread that never
// meets a plugin does not carry @grpc/grpc-js (renderer/pool.ts: every thread loads this module).
import type { PluginClient, AppStream } from './client.ts';
import { pluginEnv } from './env.ts';

type Plugin = NonNullable<ApplicationSource['plugin']>;

/**
 * The error of a plugin that cannot be found, in the words of Argo CD's
 * DetectConfigManagementPlugin, behind the "CMP processing failed" of its GenerateManifests.
 */
export function pluginNotFound(appName: string, plugin: Plugin, why?: string): SourceError {
  const found = plugin.name
    ? `could not find cmp-server plugin with name ${JSON.stringify(plugin.name)} supporting the given repository`
    : 'could not find plugin supporting the given repository';
  return failed(appName, `${found}${why ? `: ${why}` : ''}`);
}

const failed = (appName: string, message: string, reason: SourceError['reason'] = 'InvalidSource') =>
  new SourceError(reason, `CMP processing failed for application ${JSON.stringify(appName)}: ${message}`);

export interface PluginRenderInput {
  appName: string;
  source: ApplicationSource;
  /** The checkout's physical root and the app folder in it. */
  root: string;
  appDir: string;
  shownPath: string;
  buildEnv?: BuildEnv | undefined;
  kubeVersion?: string | undefined;
  apiVersions?: readonly string[] | undefined;
  /** The folder of cmp-server sockets; absent: no plugin is configured. */
  socketDir?: string | undefined;
  limits: {
    timeoutMs: number;
    maxAnswerBytes: number;
    maxFiles: number;
    maxBytes: number;
    documents: DocumentLimits;
  };
  signal?: AbortSignal | undefined;
  /** Globs of files not streamed to the plugin (Argo CD's --plugin-tar-exclude). */
  tarExclusions?: readonly string[] | undefined;
  /** The source's repository has a credential, which a plugin with provideGitCreds would be given. */
  sourceHasCredential?: boolean | undefined;
}

/** What a plugin render gets: the tool limits of any render, and the build variables. */
export function pluginInput(
  req: RenderRequest,
  env: RenderEnvironment,
  at: Pick<PluginRenderInput, 'root' | 'appDir' | 'source' | 'shownPath'>,
  documents: DocumentLimits,
): PluginRenderInput {
  return {
    ...at,
    appName: req.instanceName ?? req.appName,
    buildEnv: req.buildEnv,
    kubeVersion: req.kubeVersion,
    apiVersions: req.apiVersions,
    socketDir: env.pluginSocketDir,
    ...(env.pluginTarExclusions?.length ? { tarExclusions: env.pluginTarExclusions } : {}),
    limits: {
      timeoutMs: env.limits.toolTimeoutMs,
      maxAnswerBytes: env.limits.maxToolOutputBytes,
      maxFiles: env.limits.checkoutMaxFiles,
      maxBytes: env.limits.maxTotalBytes,
      documents,
    },
    signal: env.signal,
    ...(req.sourceHasCredential ? { sourceHasCredential: true } : {}),
  };
}

/** A plugin found for the source: its client, open until the render ends. */
interface Found {
  client: PluginClient;
  name: string;
}

/** The manifests of a Plugin source, or the repo-server's error. */
export async function renderPlugin(input: PluginRenderInput): Promise<ParsedObject[]> {
  const plugin = input.source.plugin ?? {};
  const call = { deadline: new Date(Date.now() + input.limits.timeoutMs), signal: input.signal };
  const stream = streamMaker(input, plugin);
  const found = await detect(input, plugin, stream, call);
  try {
    // Argo CD asks again, for provideGitCreds, and hands the plugin the source repository's Git
    // credential when it has one. The plugin runs what the repository holds, and a credential
    // (often a template's, shared by every repository under it) would go wherever that sends it:
    // the renderer never gives one, and refuses rather than render without what the plugin expects.
    const config = await found.client.checkPluginConfiguration(call);
    if (config.provideGitCreds && input.sourceHasCredential)
      throw failed(
        input.appName,
        `plugin ${found.name} asks for the Git credentials of '${redactURL(input.source.repoURL)}' (provideGitCreds: true in its discovery config): impersync never hands a repository credential to a plugin, which runs the repository's content; set provideGitCreds to false, or use the repository without a credential`,
      );
    const answer = await found.client.generateManifest(await stream(), call).catch((err: unknown) => {
      throw callFailed(input, err, 'error generating manifests in cmp', call.deadline);
    });
    const objects: ParsedObject[] = [];
    answer.manifests.forEach((text, i) => {
      objects.push(
        ...parseManifests(text, `${input.shownPath} (plugin ${found.name} output, manifest ${i + 1})`, {
          limits: input.limits.documents,
        }),
      );
    });
    return objects;
  } finally {
    found.client.close();
  }
}

/**
 * DetectConfigManagementPlugin: with a name, `<name>.sock` supports the source unless its
 * discovery rules say no; without, the first socket (in name order) whose discovery matches.
 */
async function detect(
  input: PluginRenderInput,
  plugin: Plugin,
  stream: () => Promise<AppStream>,
  call: { deadline: Date; signal?: AbortSignal | undefined },
): Promise<Found> {
  if (input.socketDir === undefined) {
    throw pluginNotFound(input.appName, plugin, 'no config management plugin is configured for the renderer');
  }
  if (plugin.name) {
    const file = `${plugin.name}.sock`;
    if (path.basename(file) !== file) {
      throw pluginNotFound(
        input.appName,
        plugin,
        `invalid socket file path, ${JSON.stringify(file)} is outside plugin socket dir`,
      );
    }
    const result = await supports(input, path.join(input.socketDir, file), file, true, stream, call);
    if ('error' in result) throw pluginNotFound(input.appName, plugin, result.error);
    if (!result.found) throw pluginNotFound(input.appName, plugin);
    return result.found;
  }
  const names = await readdir(input.socketDir).catch((err: NodeJS.ErrnoException) => {
    throw failed(input.appName, `failed to list all plugins in dir: ${err.code ?? err.message}`);
  });
  let lastError: string | undefined;
  for (const name of names.sort()) {
    const socket = path.join(input.socketDir, name);
    if (!(await stat(socket).catch(() => undefined))?.isSocket()) continue;
    const result = await supports(input, socket, name, false, stream, call);
    if ('error' in result) lastError = result.error;
    else if (result.found) return result.found;
  }
  throw pluginNotFound(input.appName, plugin, lastError);
}

/** cmpSupports: whether the plugin at `socket` takes the source (`named`: the Application named it). */
async function supports(
  input: PluginRenderInput,
  socket: string,
  file: string,
  named: boolean,
  stream: () => Promise<AppStream>,
  call: { deadline: Date; signal?: AbortSignal | undefined },
): Promise<{ found?: Found } | { error: string }> {
  if (!(await stat(socket).catch(() => undefined))?.isSocket()) {
    return { error: `error dialing to cmp-server for plugin ${file}: no socket ${file} in ${input.socketDir}` };
  }
  const { PluginClient } = await import('./client.ts');
  const client = new PluginClient(socket, input.limits.maxAnswerBytes);
  const found = { client, name: file.replace(/\.sock$/, '') };
  try {
    const config = await client.checkPluginConfiguration(call);
    if (!config.isDiscoveryConfigured) {
      if (named) return { found };
      client.close();
      return {};
    }
    const match = await client.matchRepository(await stream(), call);
    if (match.isSupported || (!match.isDiscoveryEnabled && named)) return { found };
    client.close();
    return {};
  } catch (err) {
    client.close();
    if (call.signal?.aborted || Date.now() >= call.deadline.getTime() - DEADLINE_MARGIN_MS) {
      throw callFailed(input, err, 'plugin', call.deadline);
    }
    return { error: `error checking plugin configuration ${file}: ${grpcMessage(err)}` };
  }
}

/** Whether the socket folder holds any plugin's socket (none, or no folder: no plugin is asked). */
export async function pluginsPresent(socketDir: string | undefined): Promise<boolean> {
  if (socketDir === undefined) return false;
  const names = await readdir(socketDir).catch(() => [] as string[]);
  return names.length > 0;
}

/**
 * Whether a plugin's discovery rules claim a source that names no type (Argo CD's Discover asks
 * the plugins before it looks for a Chart.yaml or a kustomization). No socket folder, or none in
 * it, is no; the repository is archived only when there is a plugin to ask.
 */
export async function discoverPlugin(input: PluginRenderInput): Promise<boolean> {
  if (!(await pluginsPresent(input.socketDir))) return false;
  return detect(input, {}, streamMaker(input, {}), {
    deadline: new Date(Date.now() + input.limits.timeoutMs),
    signal: input.signal,
  }).then(
    (found) => (found.client.close(), true),
    (err: unknown) => {
      if (err instanceof SourceError && err.reason !== 'InvalidSource') throw err;
      return false;
    },
  );
}

/** The app stream, made once (the repository archived on first use) and replayed for each call. */
function streamMaker(input: PluginRenderInput, plugin: Plugin): () => Promise<AppStream> {
  let archive: Promise<RepoArchive> | undefined;
  const env = pluginEnv({ ...input, plugin });
  return async () => {
    archive ??= archiveRepository(
      input.root,
      { maxFiles: input.limits.maxFiles, maxBytes: input.limits.maxBytes },
      input.tarExclusions,
    );
    return appStream(input, await archive, env);
  };
}

function appStream(input: PluginRenderInput, archive: RepoArchive, env: AppStream['metadata']['env']): AppStream {
  return {
    metadata: {
      appName: path.basename(input.appDir),
      appRelPath: path.relative(input.root, input.appDir) || '.',
      checksum: archive.checksum,
      size: archive.tgz.length,
      env,
    },
    chunks: chunksOf(archive.tgz),
  };
}

/**
 * The cmp-server stops its command 100 ms before the call's deadline and answers that it failed
 * (cmpTimeoutBuffer): a failure this close to the deadline is the time limit.
 */
const DEADLINE_MARGIN_MS = 1000;

/** A failed call: past the render's time limit is Timeout, an answer over the limit TooLarge. */
function callFailed(input: PluginRenderInput, err: unknown, what: string, deadline: Date): SourceError {
  const code = (err as { code?: number }).code;
  const late = Date.now() >= deadline.getTime() - DEADLINE_MARGIN_MS;
  if (code === 4 /* DEADLINE_EXCEEDED */ || code === 1 /* CANCELLED */ || input.signal?.aborted || late) {
    return failed(
      input.appName,
      `the plugin took longer than the render's time limit of ${input.limits.timeoutMs / 1000}s`,
      'Timeout',
    );
  }
  if (code === 8 /* RESOURCE_EXHAUSTED */) {
    return failed(
      input.appName,
      `the plugin's answer is larger than the renderer's limit: ${grpcMessage(err)}`,
      'TooLarge',
    );
  }
  return failed(input.appName, `${what}: ${grpcMessage(err)}`, 'ToolFailed');
}

/** gRPC's error as Go's status prints it: `rpc error: code = ... desc = ...`. */
function grpcMessage(err: unknown): string {
  const e = err as { code?: number; details?: string; message?: string };
  if (typeof e.code === 'number' && typeof e.details === 'string') {
    return `rpc error: code = ${GRPC_CODES[e.code] ?? e.code} desc = ${e.details}`;
  }
  return e.message ?? String(err);
}

const GRPC_CODES = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];
