// The git kustomize runs for remote bases. kustomize clones them itself (`git init`, `remote add`,
// `fetch --depth=1 URL REF`, `checkout FETCH_HEAD`, `submodule update`), and a remote base can name
// further remote bases that no check before the build can see. So kustomize gets, first on its
// PATH, a `git` of ours (git-guard.ts, run by this Node) that lets through only those commands,
// only for URLs the project's sourceRepos allow, checks every kustomization of each clone the way
// kustomize-check.ts checks the checkout, and then runs the real git with the renderer's git
// configuration (git-env.ts, file protocol never). The policy travels in the environment.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitEnvironment } from './git-env.ts';
import { resolveCommand } from './limits.ts';
import type { CheckoutLimits } from './materialise.ts';

export const GUARD_POLICY_ENV = 'IMPERSYNC_KUSTOMIZE_GIT_POLICY';

export interface GuardPolicy {
  /** The real git (a name is looked up on the PATH kustomize is given, before the shim). */
  git: string;
  /** The AppProject's sourceRepos; null allows no remote base. */
  sourceRepos: readonly string[] | null;
  enableHelm: boolean;
  /** A remote base whose commit is over these is not checked out (materialise.ts). */
  checkout: CheckoutLimits;
}

/** git-guard.ts beside this module (git-guard.js once built). */
const GUARD = fileURLToPath(new URL(`./git-guard${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url));

const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

/** Writes the `git` kustomize finds first, into `binDir`. */
export function writeGitShim(binDir: string): Promise<string> {
  return writeShim(binDir, 'git', GUARD);
}

/** Writes `binDir/name`, a program that runs the Node module `program` with its arguments. */
export async function writeShim(binDir: string, name: string, program: string): Promise<string> {
  await mkdir(binDir, { recursive: true });
  const shim = path.join(binDir, name);
  const node = [process.execPath, '--disable-warning=ExperimentalWarning', program].map(quote).join(' ');
  await writeFile(shim, `#!/bin/sh\nunset NODE_OPTIONS NODE_PATH\nexec ${node} "$@"\n`);
  await chmod(shim, 0o755);
  return shim;
}

/**
 * kustomize's environment: the renderer's git configuration, the shim first on PATH, the policy.
 * The real git is named by its absolute path (looked up on the PATH without the shim): a `git`
 * looked up later would be the shim itself.
 */
export function kustomizeEnvironment(base: NodeJS.ProcessEnv, binDir: string, policy: GuardPolicy): NodeJS.ProcessEnv {
  const env = gitEnvironment(base, { allowFile: false });
  env.PATH = [binDir, base.PATH ?? ''].filter((p) => p !== '').join(path.delimiter);
  const git = resolveCommand(policy.git, base.PATH);
  env[GUARD_POLICY_ENV] = JSON.stringify({ ...policy, git: git ? path.resolve(git) : '' });
  return env;
}
