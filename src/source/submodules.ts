// Git submodules, checked out as Argo CD's repo-server checks them out (`git submodule update
// --init --recursive` after the checkout, unless ARGOCD_GIT_MODULES_ENABLED is false), but with
// every submodule URL judged like a source URL before anything is fetched from it: network
// transports only (never file://, a local path or `ext::`, whatever the renderer allows for
// repoURLs), relative URLs resolved against the superproject's URL first, the project's
// sourceRepos, and credentials only as the controller gives them for that URL
// (NeedsRepositories: the renderer names the URLs, the controller decides, as for a chart's
// dependencies). Each submodule is a checkout of its own (its clone, its limits); they are copied
// with the superproject into a private folder, counted together against the checkout limits, and
// refused when a symlink in the whole leads out of it.
import { cp, mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import type { RepositoryAccess } from '../api/repository.ts';
import { NeedsRepositories, SourceError, redactURL } from './errors.ts';
import type { Checkout } from './git.ts';
import { sizeOverLimits, type CheckoutLimits } from './materialise.ts';
import { findEscapingSymlink, physicalRelative } from './paths.ts';
import { sourceRepoRefusal } from './permitted.ts';
import { classifyRepoURL } from './repo-url.ts';
import { resolveSubmoduleURL, type SubmoduleListing } from './submodule-list.ts';

/** A submodule repository and the credentials the controller gave it (none: anonymous). */
export interface SubmoduleRepository {
  url: string;
  repository?: RepositoryAccess | undefined;
}

/** What of the Git cache submodules need (git.ts). */
export interface SubmoduleGit {
  submodules(repoURL: string, sha: string, access: RepositoryAccess | undefined): Promise<SubmoduleListing>;
  checkout(
    repoURL: string,
    sha: string,
    opts: { access?: RepositoryAccess | undefined; deadline?: number | undefined },
  ): Promise<Checkout>;
}

export interface SubmoduleInput {
  git: SubmoduleGit;
  repoURL: string;
  sha: string;
  access: RepositoryAccess | undefined;
  /** The superproject's checkout. */
  dir: string;
  workRoot: string;
  sourceRepos: readonly string[] | undefined;
  /** The controller's answer to the URLs named so far; undefined: not asked yet. */
  given: readonly SubmoduleRepository[] | undefined;
  limits: CheckoutLimits;
  deadline?: number | undefined;
}

/** Submodules within submodules, as deep as this; deeper is refused (a cycle would go on for ever). */
export const MAX_SUBMODULE_DEPTH = 8;

/**
 * The commit with its submodules in a private folder (dispose() removes it), or undefined when it
 * has none (the checkout is used as it is).
 */
export async function withSubmodules(
  input: SubmoduleInput,
): Promise<{ dir: string; dispose(): Promise<void> } | undefined> {
  const top = await input.git.submodules(input.repoURL, input.sha, input.access);
  if (top.submodules.length === 0) return undefined;
  await mkdir(input.workRoot, { recursive: true });
  const work = await realpath(await mkdtemp(path.join(input.workRoot, 'submodules-')));
  const held: Checkout[] = [];
  const dispose = async () => {
    for (const c of held) c.release();
    held.length = 0;
    await rm(work, { recursive: true, force: true });
  };
  try {
    const root = path.join(work, 'tree');
    await cp(input.dir, root, { recursive: true, verbatimSymlinks: true });
    const count = { files: top.files, bytes: top.bytes };
    await fill(input, { url: input.repoURL, sha: input.sha, listing: top, at: '', depth: 0 }, root, count, held);
    const bad = await findEscapingSymlink(root);
    // Argo CD checks the work tree with its submodules the same way, in the same words.
    if (bad) throw new SourceError('InvalidSource', `repository contains out-of-bounds symlinks. file: ${bad.link}`);
    // The checkouts were copied: they need not be held while the render runs.
    for (const c of held) c.release();
    held.length = 0;
    return { dir: root, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

interface Node {
  url: string;
  sha: string;
  listing: SubmoduleListing;
  /** Where it is in the whole, `/`-separated ('' for the superproject). */
  at: string;
  depth: number;
}

async function fill(
  input: SubmoduleInput,
  node: Node,
  root: string,
  count: { files: number; bytes: number },
  held: Checkout[],
): Promise<void> {
  // Every URL of this level judged, and its credentials known, before the first fetch of any.
  const subs = node.listing.submodules.map((s) => {
    const at = node.at ? `${node.at}/${s.path}` : s.path;
    const url = resolveSubmoduleURL(node.url, s.url);
    return { ...s, at, url, shown: `submodule '${at}' ('${redactURL(url)}') of '${redactURL(input.repoURL)}'` };
  });
  const refusals: string[] = [];
  for (const s of subs) {
    const kind = classifyRepoURL(s.url);
    if (kind.kind !== 'network') {
      const why = kind.kind === 'refused' ? kind.why : 'it is a local path or file:// URL';
      refusals.push(`${s.shown}: refused (${why}): only network repositories (https, http, ssh, git) are allowed`);
      continue;
    }
    const refused = sourceRepoRefusal(s.url, input.sourceRepos);
    if (refused) refusals.push(`${s.shown}: ${refused}`);
  }
  if (refusals.length > 0)
    throw new SourceError(
      'InvalidSource',
      `${refusals.join('; ')}: add the repository to the AppProject's sourceRepos, or turn submodules off (ARGOCD_GIT_MODULES_ENABLED=false)`,
    );
  const missing = [...new Set(subs.map((s) => s.url))].filter((u) => !input.given?.some((g) => g.url === u));
  if (missing.length > 0) throw new NeedsRepositories(missing.map((url) => ({ url, submodule: true })));
  if (node.depth + 1 > MAX_SUBMODULE_DEPTH)
    throw new SourceError(
      'InvalidSource',
      `${subs[0]?.shown}: submodules are nested more than ${MAX_SUBMODULE_DEPTH} deep`,
    );
  for (const s of subs) {
    const access = input.given?.find((g) => g.url === s.url)?.repository;
    const checkout = await input.git.checkout(s.url, s.sha, { access, deadline: input.deadline });
    held.push(checkout);
    const listing = await input.git.submodules(s.url, s.sha, access);
    count.files += listing.files;
    count.bytes += listing.bytes;
    // Named as the superproject's own tree would be (materialise.ts), with the submodule that tipped it over.
    const over = sizeOverLimits(count, input.limits);
    if (over)
      throw new SourceError(
        'TooLarge',
        `commit ${input.sha} of '${redactURL(input.repoURL)}' with its submodules has ${over} (at ${s.shown})`,
      );
    // The gitlink's folder, reached without a symlink: what git wrote there is a plain folder.
    const target = path.join(root, ...s.at.split('/'));
    if ((await physicalRelative(root, target)) !== s.at)
      throw new SourceError('InvalidSource', `${s.shown}: its path leads through a symlink`);
    await rm(target, { recursive: true, force: true });
    await cp(checkout.dir, target, { recursive: true, verbatimSymlinks: true });
    await fill(input, { url: s.url, sha: s.sha, listing, at: s.at, depth: node.depth + 1 }, root, count, held);
  }
}

/**
 * Argo CD's switch, read as its repo-server reads it (env.ParseBoolFromEnv, default true): the
 * install sets the variable from argocd-cmd-params-cm `reposerver.enable.git.submodule`.
 */
export function gitModulesEnabled(env: NodeJS.ProcessEnv): boolean {
  const v = env['ARGOCD_GIT_MODULES_ENABLED'];
  if (v === undefined) return true;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return true;
}
