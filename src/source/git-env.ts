// The environment every git of the renderer runs with: ours for the checkouts, and the one
// kustomize runs for remote bases. Nothing from the machine's or the user's git configuration
// applies (system and global config off, GIT_* variables dropped), only network protocols are
// allowed (file only when the operator allows local repositories), remote helpers such as ext::
// never, no hooks, no fsmonitor, no credential helper or askpass from the environment, never a
// prompt. It is set through GIT_CONFIG_COUNT so that it holds for every git process below ours,
// whatever arguments it gets.

/** GIT_* variables an operator may set for transport (ssh keys, CA bundles); all others are dropped. */
const KEPT_GIT_VARIABLES = new Set([
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_SSH_VARIANT',
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
  'GIT_HTTP_LOW_SPEED_LIMIT',
  'GIT_HTTP_LOW_SPEED_TIME',
]);

/** The network protocols git may use; `file` is added only when local repositories are allowed. */
export const NETWORK_PROTOCOLS = ['https', 'http', 'ssh', 'git'] as const;

export interface GitEnvOptions {
  /** Allow git's `file` protocol (local paths and file:// URLs). */
  allowFile: boolean;
}

/** The configuration, in order, as [key, value] pairs. */
export function gitConfig(opts: GitEnvOptions): [string, string][] {
  return [
    ['protocol.allow', 'never'],
    ...NETWORK_PROTOCOLS.map((p): [string, string] => [`protocol.${p}.allow`, 'always']),
    ['protocol.file.allow', opts.allowFile ? 'always' : 'never'],
    ['protocol.ext.allow', 'never'],
    ['core.hooksPath', '/dev/null'],
    ['core.fsmonitor', 'false'],
    // An empty value resets the list of helpers; an empty askPass stops the fallback to SSH_ASKPASS.
    ['credential.helper', ''],
    ['core.askPass', ''],
    ['submodule.recurse', 'false'],
    ['fetch.recurseSubmodules', 'false'],
    // No background `gc --auto` outliving the command (and its time limit).
    ['gc.auto', '0'],
    ['maintenance.auto', 'false'],
    // kustomize puts git's whole output in its errors; the detached-HEAD advice is noise there.
    ['advice.detachedHead', 'false'],
    ['init.defaultBranch', 'main'],
    // Small pack windows, so git stays well inside the renderer's address-space limit.
    ['core.packedGitWindowSize', '32m'],
    ['core.packedGitLimit', '256m'],
  ];
}

/** `base` without the git variables that could change what git reads, plus the renderer's configuration. */
export function gitEnvironment(base: NodeJS.ProcessEnv, opts: GitEnvOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(base)) {
    if (key.startsWith('GIT_') && !KEPT_GIT_VARIABLES.has(key)) continue;
    if (key === 'SSH_ASKPASS') continue;
    env[key] = value;
  }
  env.GIT_CONFIG_NOSYSTEM = '1';
  env.GIT_CONFIG_GLOBAL = '/dev/null';
  env.GIT_TERMINAL_PROMPT = '0';
  env.LC_ALL = 'C';
  env.GIT_CONFIG_COUNT = '0';
  return withGitConfig(env, gitConfig(opts));
}

/**
 * `env` with `config` appended to its GIT_CONFIG_COUNT entries. Appended last, they win over the
 * renderer's own entries and over any file (GIT_CONFIG_GLOBAL) for one-valued keys.
 */
export function withGitConfig(env: NodeJS.ProcessEnv, config: readonly [string, string][]): NodeJS.ProcessEnv {
  const out = { ...env };
  const first = Number.parseInt(env.GIT_CONFIG_COUNT ?? '0', 10) || 0;
  config.forEach(([key, value], i) => {
    out[`GIT_CONFIG_KEY_${first + i}`] = key;
    out[`GIT_CONFIG_VALUE_${first + i}`] = value;
  });
  out.GIT_CONFIG_COUNT = String(first + config.length);
  return out;
}
