// The `git` kustomize runs (kustomize-git.ts says why): a program of its own, started by the shim
// with the policy in IMPERSYNC_KUSTOMIZE_GIT_POLICY. Anything it does not recognise as the clone
// kustomize makes of a remote base is refused with a message on stderr, which kustomize puts in
// its error; anything it lets through runs the real git, with the environment it was given (the
// renderer's git configuration and limits).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { redactURL } from './errors.ts';
import { Refused, runGuard } from './guard-main.ts';
import { GUARD_POLICY_ENV, type GuardPolicy } from './kustomize-git.ts';
import { remoteRefusal } from './kustomize-remote.ts';

/** Set for the real git: a guard started below it (a misconfigured PATH) refuses instead of recursing. */
const INSIDE = 'IMPERSYNC_INSIDE_GIT_GUARD';

function policyFromEnv(): GuardPolicy {
  if (process.env[INSIDE]) throw new Refused('the renderer git guard was started by the git it runs');
  try {
    const p = JSON.parse(process.env[GUARD_POLICY_ENV] ?? '') as GuardPolicy;
    if (typeof p.git === 'string' && path.isAbsolute(p.git)) return p;
  } catch {
    // fall through: no policy, nothing is allowed
  }
  throw new Refused('kustomize ran git without the renderer policy (or the real git was not found)');
}

function checkURL(policy: GuardPolicy, url: string): void {
  const why = remoteRefusal(url, policy.sourceRepos ?? undefined);
  if (why) throw new Refused(`kustomize remote base '${redactURL(url)}' is refused: ${why}`);
}

/** Runs the real git with these arguments; its exit status (a signal is reported as kustomize would not). */
function realGit(
  policy: GuardPolicy,
  args: string[],
  quiet = false,
  maxBuffer = 1024 * 1024,
): { status: number; stdout: string } {
  const r = spawnSync(policy.git, args, {
    stdio: quiet ? ['ignore', 'pipe', 'inherit'] : 'inherit',
    encoding: 'utf8',
    maxBuffer,
    env: { ...process.env, [INSIDE]: '1' },
  });
  if (r.error) throw new Refused(`git could not be started: ${r.error.message}`);
  if (r.signal) {
    const why = r.signal === 'SIGXFSZ' ? ' (file size limit exceeded)' : '';
    process.stderr.write(`git ${args[0]} was killed by ${r.signal}${why}\n`);
    return { status: 1, stdout: '' };
  }
  return { status: r.status ?? 1, stdout: r.stdout ?? '' };
}

async function guard(argv: string[]): Promise<number> {
  const policy = policyFromEnv();
  const [sub, ...rest] = argv;
  const shown = `git ${argv.join(' ')}`;
  switch (sub) {
    case 'init':
      if (rest.length > 0) break;
      return realGit(policy, argv).status;
    case 'remote':
      if (rest.length !== 3 || rest[0] !== 'add' || rest[1] !== 'origin') break;
      checkURL(policy, rest[2] as string);
      return realGit(policy, argv).status;
    case 'fetch': {
      const options = rest.filter((a) => a.startsWith('-'));
      const positional = rest.filter((a) => !a.startsWith('-'));
      if (!options.every((o) => /^--depth=\d+$/.test(o)) || positional.length < 1 || positional.length > 2) break;
      checkURL(policy, positional[0] as string);
      return realGit(policy, ['fetch', ...options, '--', ...positional]).status;
    }
    case 'checkout': {
      if (rest.length !== 1 || rest[0] !== 'FETCH_HEAD') break;
      await checkTree(policy);
      const status = realGit(policy, argv).status;
      if (status !== 0) return status;
      await checkClone(policy);
      return 0;
    }
    case 'submodule':
      // A clone's submodules would be fetched by git itself, out of this guard's sight.
      if (existsSync('.gitmodules')) {
        throw new Refused(
          'the remote base has git submodules, which the renderer does not fetch (add ?submodules=false)',
        );
      }
      return 0;
  }
  throw new Refused(`${shown} is not a command kustomize runs for a remote base`);
}

/** The fetched commit, before it is written: within the renderer's checkout limits. */
async function checkTree(policy: GuardPolicy): Promise<void> {
  const { treeListingBytes, treeOverLimits } = await import('./materialise.ts');
  const max = treeListingBytes(policy.checkout);
  const listing = realGit(policy, ['ls-tree', '-r', '-l', '-z', '--full-tree', 'FETCH_HEAD'], true, max);
  const over = listing.status === 0 ? treeOverLimits(listing.stdout, policy.checkout) : 'a tree git cannot list';
  if (over) throw new Refused(`remote base '${redactURL(origin(policy))}' has ${over}`);
}

function origin(policy: GuardPolicy): string {
  return realGit(policy, ['config', '--get', 'remote.origin.url'], true).stdout.trim();
}

/** The clone in the working folder: no symlink out of it, and its kustomizations held to the same rules. */
async function checkClone(policy: GuardPolicy): Promise<void> {
  // Loaded only here: every other git call starts faster without the YAML parser.
  const [{ checkAllKustomizations }, { findEscapingSymlink }] = await Promise.all([
    import('./kustomize-check.ts'),
    import('./paths.ts'),
  ]);
  const root = await realpath('.');
  const where = `remote base '${redactURL(origin(policy))}'`;
  const bad = await findEscapingSymlink(root);
  if (bad?.why === 'complex') throw new Refused(`${where} has dangling symlinks too many to check (at ${bad.link})`);
  if (bad) throw new Refused(`${where} has a symlink that points outside it: ${bad.link} -> ${bad.target}`);
  await checkAllKustomizations({
    root,
    describe: (rel) => `${where}, ${rel}`,
    sourceRepos: policy.sourceRepos ?? undefined,
    enableHelm: policy.enableHelm,
  });
}

await runGuard(guard);
