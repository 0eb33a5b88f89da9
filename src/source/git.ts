// A cache of Git repositories for rendering Applications (issue 4, "Desired state from Git").
//
// Each repository URL gets one bare clone under <cacheDir>/repos/. A revision resolves to a commit
// SHA: HEAD (the default), a branch, a tag or a full or short SHA. Refs are asked of the remote on
// every call (`git ls-remote`), so a pushed branch is seen at once; a SHA already in the clone is not
// fetched again, and works offline. The files of a commit are materialised once into their own
// directory under <cacheDir>/trees/ (read-only by convention, shared by concurrent renders, evicted
// when unused and over the limit), unless the commit is over the checkout limits (materialise.ts).
// Both caches are bounded in bytes, so that together they stay below the volume they live on: the
// checked-out trees by the sizes their tree listings give before anything is written (a new one
// waits for room when the trees in use fill the budget), the clones by their size on disk after
// each fetch (the least recently used clones nobody is using are removed first).
// Each instance keeps its trees in a folder of its own (trees/<pid>-<random>/); folders of
// processes that are gone are removed on first use. Only network repositories are fetched unless
// local ones are allowed (repo-url.ts), and every git runs with the renderer's own configuration
// (git-env.ts), under the tool limits (limits.ts), its messages scrubbed (scrub.ts). A git that
// carries the repository's credentials follows no redirect off its origin (git-redirect.ts).
//
// Concurrency: git commands on one clone run one at a time (a mutex per repository, within this
// process); different repositories run in parallel. Two processes sharing a cacheDir rely on git's
// own ref locks for the clones.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatBytes, SourceError, type SourceErrorReason } from './errors.ts';
import { run, tail, type RunResult } from './exec.ts';
import { KeyedMutex } from './lock.ts';
import { DEFAULT_TOOL_LIMITS, type ToolLimits } from './limits.ts';
import {
  CommitRefused,
  DEFAULT_CHECKOUT_LIMITS,
  materialise,
  type CheckoutLimits,
  type GitRunner,
} from './materialise.ts';
import { checkRevision, matchRef } from './refs.ts';
import { repoLocation } from './repo-url.ts';
import { gitEnvironment, withGitConfig } from './git-env.ts';
import { redirectStatus, redirectedRemote } from './git-redirect.ts';
import { removeDeadOwners } from './trees.ts';
import { listSubmodules, type SubmoduleListing } from './submodule-list.ts';
import { scrubber, type Scrub } from './scrub.ts';
import type { RepositoryAccess } from '../api/repository.ts';
import { ANONYMOUS, carriesCredential, credentialId, gitCredentials } from './credentials.ts';
import { ByteLru } from './byte-lru.ts';

export interface GitRepoCacheOptions {
  cacheDir: string;
  /** The git binary (default `git` from PATH). */
  gitBinary?: string;
  /** Limit for commands that talk to the remote (ls-remote, fetch). Default 120 s. */
  networkTimeoutMs?: number;
  /** Limit for local commands (rev-parse, checkout). Default 60 s. */
  localTimeoutMs?: number;
  /** Checked-out commits kept on disk when nobody uses them. Default 16. */
  maxTrees?: number;
  /** Bytes of checked-out commits on disk, in use or not. Default 2 GiB (at least the checkout limit). */
  treeCacheMaxBytes?: number;
  /** Bytes of clones on disk. Default 2 GiB. */
  cloneCacheMaxBytes?: number;
  /** Environment for git (default: this process's), made safe by gitEnvironment (git-env.ts). */
  env?: NodeJS.ProcessEnv;
  /** Allow file:// URLs and local paths as repositories (demos and tests; never in an install). Default false. */
  allowLocalRepositories?: boolean;
  /** Memory and file-size limits of every git process (limits.ts). */
  toolLimits?: Partial<ToolLimits>;
  /** A commit over these is refused before it is written (materialise.ts). Defaults 1 GiB, 100,000 files. */
  checkoutLimits?: Partial<CheckoutLimits>;
  /** Bytes of commits' folder listings kept (folderContent). Default 32 MiB. */
  listingCacheBytes?: number;
  /** Bytes of listed refs kept, for all repositories together. Default 64 MiB. */
  refsCacheBytes?: number;
  /** Bytes of commits' refusals kept (their messages). Default 1 MiB. */
  refusedCacheBytes?: number;
  /** Told when a request to a remote starts (the URL as shown, its password hidden); the function it returns, when it ends. */
  onRequest?: GitRequestHook | undefined;
}

/** Argo CD's repo-server git metrics' hook (reposerver/metrics/githandlers.go): fetch and ls-remote. */
export type GitRequestHook = (repo: string, type: 'fetch' | 'ls-remote') => () => void;

/** How a repository is reached: its credentials (none: anonymous), and how old its refs may be. */
export interface RepoOptions {
  access?: RepositoryAccess | undefined;
  /**
   * Refs listed by `git ls-remote` less than this long ago (for the same repository and credential)
   * are used again: one ls-remote per repository per refresh interval, however many Applications
   * share it. 0 or absent: ask the remote now.
   */
  maxAgeMs?: number | undefined;
  /**
   * A checkout waits for room in the tree cache (the trees in use fill it) until then at the
   * latest, and then fails as a Timeout: a render that holds one tree while it waits for another
   * cannot wait on itself, or on another such render, for ever.
   */
  deadline?: number | undefined;
}

/** The files of one commit, on disk until released. */
export interface Checkout {
  dir: string;
  revision: string;
  release(): void;
}

interface Tree {
  dir: string;
  /** The size of its files, from the tree listing. */
  bytes: number;
  leases: number;
  lastUsed: number;
  /** Its submodule listing, read once: a commit's tree never changes. */
  submodules?: SubmoduleListing;
}

export const DEFAULT_TREE_CACHE_BYTES = 2 * 1024 * 1024 * 1024;
export const DEFAULT_CLONE_CACHE_BYTES = 2 * 1024 * 1024 * 1024;

const FULL_SHA = /^[0-9a-f]{40}$/;
/** Bytes of commits' folder listings remembered (folderContent); one commit's never takes more. */
export const DEFAULT_LISTING_CACHE_BYTES = 32 * 1024 * 1024;
/** Bytes of the refusals of commits remembered (their messages). */
export const DEFAULT_REFUSED_CACHE_BYTES = 1024 * 1024;
/** Bytes of listed refs remembered for all repositories together (a server lists as many as it likes). */
export const DEFAULT_REFS_CACHE_BYTES = 64 * 1024 * 1024;
const SHORT_SHA = /^[0-9a-f]{7,40}$/i;
const GIT_HOW_TO = 'install git (for example `apt-get install git`) or set gitBinary';

export class GitRepoCache {
  readonly #cacheDir: string;
  readonly #git: string;
  readonly #networkTimeoutMs: number;
  readonly #localTimeoutMs: number;
  readonly #maxTrees: number;
  readonly #env: NodeJS.ProcessEnv;
  readonly #allowLocal: boolean;
  /** git's messages name the cache's folders; tenants see `<cache>` instead. */
  readonly #scrub: Scrub;
  readonly #toolLimits: ToolLimits;
  readonly #checkoutLimits: CheckoutLimits;
  readonly #onRequest: GitRequestHook | undefined;
  readonly #mutex = new KeyedMutex();
  readonly #lsRemoteInFlight = new Map<string, Promise<Map<string, string>>>();
  /** The last refs listed per clone key, and when (coalescing, RepoOptions.maxAgeMs), by their bytes. */
  readonly #refs: ByteLru<{ at: number; refs: Map<string, string> }>;
  /** `git ls-remote` runs, for tests and the benchmark. */
  lsRemoteCount = 0;
  readonly #trees = new Map<string, Tree>();
  readonly #treeCacheMaxBytes: number;
  /** Bytes of the trees on disk plus the room reserved for trees being written. */
  #treeBytes = 0;
  /** Checkouts waiting for room in the tree cache: called when a tree is released or removed. */
  readonly #roomWaiters: Array<() => void> = [];
  readonly #cloneCacheMaxBytes: number;
  /** Clones on disk: their size after their last fetch, and when they were last used. */
  readonly #clones = new Map<string, { dir: string; bytes: number; lastUsed: number }>();
  #clonesScanned: Promise<void> | undefined;
  #treesCleared: Promise<void> | undefined;
  /** This instance's own folder of trees: other processes (or instances) on the cacheDir never touch it. */
  readonly #treesDir: string;
  /** Commits' folder listings (folderContent), kept by their bytes; null: the commit gives no folder a key. */
  readonly #listings: ByteLru<TreeListing | null>;
  readonly #listingsInFlight = new Map<string, Promise<TreeListing | null>>();
  /** Commits the checkout refused for what they hold (their size, their symlinks), and why. */
  readonly #refused: ByteLru<{ reason: SourceErrorReason; message: string }>;

  constructor(opts: GitRepoCacheOptions) {
    this.#cacheDir = path.resolve(opts.cacheDir);
    this.#git = opts.gitBinary ?? 'git';
    this.#networkTimeoutMs = opts.networkTimeoutMs ?? 120_000;
    this.#localTimeoutMs = opts.localTimeoutMs ?? 60_000;
    this.#maxTrees = opts.maxTrees ?? 16;
    this.#cloneCacheMaxBytes = opts.cloneCacheMaxBytes ?? DEFAULT_CLONE_CACHE_BYTES;
    this.#allowLocal = opts.allowLocalRepositories === true;
    this.#scrub = scrubber([{ from: this.#cacheDir, to: '<cache>' }]);
    this.#toolLimits = { ...DEFAULT_TOOL_LIMITS, ...opts.toolLimits };
    this.#checkoutLimits = { ...DEFAULT_CHECKOUT_LIMITS, ...opts.checkoutLimits };
    this.#onRequest = opts.onRequest;
    this.#listings = new ByteLru(opts.listingCacheBytes ?? DEFAULT_LISTING_CACHE_BYTES);
    this.#refs = new ByteLru(opts.refsCacheBytes ?? DEFAULT_REFS_CACHE_BYTES);
    this.#refused = new ByteLru(opts.refusedCacheBytes ?? DEFAULT_REFUSED_CACHE_BYTES);
    // One commit at the checkout limit must always fit.
    this.#treeCacheMaxBytes = Math.max(
      opts.treeCacheMaxBytes ?? DEFAULT_TREE_CACHE_BYTES,
      this.#checkoutLimits.checkoutMaxBytes,
    );
    this.#env = gitEnvironment(opts.env ?? process.env, { allowFile: this.#allowLocal });
    this.#treesDir = path.join(this.#cacheDir, 'trees', `${process.pid}-${randomBytes(4).toString('hex')}`);
  }

  /** The commit SHA that `targetRevision` (default HEAD) names in `repoURL` now. */
  async resolveRevision(repoURL: string, targetRevision?: string, opts: RepoOptions = {}): Promise<string> {
    const repo = await this.#repo(repoURL, opts.access);
    const rev = checkRevision(targetRevision, repo.shown);
    // A commit checked out here is in its clone while the clone is kept (a clone over the budget goes
    // with its trees left): every render of it asks again, with no git run.
    if (FULL_SHA.test(rev) && this.#trees.has(`${repo.key}/${rev}`) && existsSync(path.join(repo.dir, 'HEAD')))
      return rev;
    if (SHORT_SHA.test(rev)) {
      // A SHA already in the clone needs no network (and a ref cannot change what it names).
      const local = await this.#mutex.with(repo.key, async () => {
        await this.#ensureClone(repo);
        return this.#localCommit(repo, rev);
      });
      if (local) return local;
    }
    const refs = await this.#lsRemote(repo, opts.maxAgeMs ?? 0);
    const fromRef = matchRef(refs, rev);
    if (fromRef && rev.startsWith('refs/') && !/^refs\/(heads|tags)\//.test(rev)) {
      // Refs outside branches and tags (refs/pull/1/head, ...) are fetched by name now: checkout
      // fetches only branches and tags, and servers need not serve an unadvertised SHA.
      await this.#mutex.with(repo.key, async () => {
        await this.#ensureClone(repo);
        if (!(await this.#localCommit(repo, fromRef))) await this.#fetch(repo, [`+${rev}:${rev}`], true);
      });
    }
    if (fromRef) return fromRef;
    if (SHORT_SHA.test(rev)) {
      const fetched = await this.#mutex.with(repo.key, () => this.#fetchCommit(repo, rev));
      if (fetched) return fetched;
    }
    throw new SourceError('RevisionNotFound', `revision '${rev}' not found in '${repo.shown}'`);
  }

  /** The files of commit `revision` (a full SHA from resolveRevision); call release() when done. */
  async checkout(repoURL: string, revision: string, opts: RepoOptions = {}): Promise<Checkout> {
    const repo = await this.#repo(repoURL, opts.access);
    if (!FULL_SHA.test(revision)) {
      throw new SourceError('InvalidSource', `checkout of '${repo.shown}' needs a full commit SHA, got '${revision}'`);
    }
    this.#treesCleared ??= removeDeadOwners(path.join(this.#cacheDir, 'trees'));
    await this.#treesCleared;
    const treeKey = `${repo.key}/${revision}`;
    const tree = await this.#mutex.with(repo.key, async () => {
      const known = this.#trees.get(treeKey);
      if (known) {
        known.leases++;
        return known;
      }
      const refused = this.#refused.get(treeKey);
      if (refused) throw new CommitRefused(refused.reason, refused.message);
      await this.#ensureClone(repo);
      if (!(await this.#fetchCommit(repo, revision))) {
        throw new SourceError('RevisionNotFound', `revision '${revision}' not found in '${repo.shown}'`);
      }
      const { dir, bytes } = await this.#materialise(repo, revision, opts.deadline).catch((err: unknown) => {
        // What the commit itself is (too large, symlinks that lead out) refuses it at every checkout
        // under these limits: said again without listing it again.
        if (err instanceof CommitRefused)
          this.#refused.set(treeKey, { reason: err.reason, message: err.message }, 2 * err.message.length + 64);
        throw err;
      });
      const created: Tree = { dir, bytes, leases: 1, lastUsed: Date.now() };
      this.#trees.set(treeKey, created);
      return created;
    });
    this.#touchClone(repo);
    this.#evict();
    let released = false;
    return {
      dir: tree.dir,
      revision,
      release: () => {
        if (released) return;
        released = true;
        tree.leases--;
        tree.lastUsed = Date.now();
        this.#evict();
        this.#wakeRoomWaiters();
      },
    };
  }

  /**
   * Makes the clone's `refs/tags/<name>` the tag object the remote advertised at the last listing
   * (listed now if none is known), fetching it when it is missing or moved: a checkout fetches only
   * when its commit is missing, and verifying a tag's signature reads the tag itself.
   */
  async fetchTag(repoURL: string, access: RepositoryAccess | undefined, name: string): Promise<void> {
    const repo = await this.#repo(repoURL, access);
    const ref = `refs/tags/${name}`;
    const remote = (await this.#lsRemote(repo, Number.MAX_SAFE_INTEGER)).get(ref);
    if (!remote) return;
    await this.#mutex.with(repo.key, async () => {
      await this.#ensureClone(repo);
      const r = await this.#gitIn(
        repo,
        ['rev-parse', '--verify', '--quiet', '--end-of-options', ref],
        'git rev-parse',
        this.#localTimeoutMs,
      );
      if (r.stdout.toString('utf8').trim() !== remote) await this.#fetch(repo, [`+${ref}:${ref}`], true);
    });
  }

  /** The submodules commit `revision` records (submodule-list.ts), from the clone a checkout of it made. */
  async submodules(repoURL: string, revision: string, access: RepositoryAccess | undefined): Promise<SubmoduleListing> {
    const repo = await this.#repo(repoURL, access);
    const known = this.#trees.get(`${repo.key}/${revision}`);
    if (known?.submodules) return known.submodules;
    const listing = await this.#mutex.with(repo.key, () =>
      listSubmodules(this.#cloneRunner(repo), revision, repo.shown),
    );
    if (known) known.submodules = listing;
    return listing;
  }

  /**
   * The files changed between two commits (git diff --name-only), as Argo CD's ChangedFiles; undefined
   * when either commit cannot be had (force-pushed away): the caller then takes the source as changed.
   */
  async changedFiles(
    repoURL: string,
    from: string,
    to: string,
    access: RepositoryAccess | undefined,
  ): Promise<string[] | undefined> {
    if (!FULL_SHA.test(from) || !FULL_SHA.test(to)) return undefined;
    const repo = await this.#repo(repoURL, access);
    return this.#mutex.with(repo.key, async () => {
      if (!(await this.#fetchCommit(repo, from)) || !(await this.#fetchCommit(repo, to))) return undefined;
      const r = await this.#gitIn(
        repo,
        ['diff', '--name-only', '-z', '--no-renames', from, to, '--'],
        'git diff',
        this.#localTimeoutMs,
      );
      if (r.code !== 0) return undefined;
      return r.stdout
        .toString('utf8')
        .split('\0')
        .filter((f) => f !== '');
    });
  }

  /**
   * What the files of folder `dir` of commit `revision` are, whatever commit holds them: the
   * folder's tree id, with the ids of the `.gitattributes` files above it (they decide how its files
   * are written out, and lie outside it). Undefined when those files alone may not decide what a
   * plain directory renders: `dir` is not a folder of the commit (missing, a symlink, outside it),
   * the commit has submodules, or the folder holds a symlink (which may lead to a file elsewhere),
   * a submodule or a Jsonnet file (which may import one). The commit must be in the clone (checked
   * out). One listing of the commit's tree answers every folder of it (the last few are kept).
   */
  async folderContent(
    repoURL: string,
    revision: string,
    dir: string,
    access: RepositoryAccess | undefined,
  ): Promise<string | undefined> {
    if (!FULL_SHA.test(revision)) return undefined;
    const folder = path.posix.normalize(dir === '' ? '.' : dir).replace(/\/+$/, '');
    if (folder === '' || folder === '..' || folder.startsWith('../') || folder.startsWith('/')) return undefined;
    const repo = await this.#repo(repoURL, access);
    const listing = await this.#treeListing(repo, revision);
    if (!listing || listing.submodules) return undefined;
    const found = listing.folders.get(folder);
    if (found === undefined || found.impure) return undefined;
    const above: string[] = [];
    if (folder !== '.') {
      const parts = folder.split('/');
      for (let i = 0; i < parts.length; i++) above.push([...parts.slice(0, i), '.gitattributes'].join('/'));
    }
    return [found.tree, ...above.map((f) => `${f}=${listing.attributes.get(f) ?? ''}`)].join('\n');
  }

  /**
   * Commit `revision`'s folders, from one listing of its whole tree (`git ls-tree -r -t`): each
   * folder's tree id and whether a plain directory's render of it may read past it (a symlink,
   * submodule or Jsonnet file at any depth below), and each `.gitattributes`. Null when the commit
   * cannot be listed within 32 MiB of output (about the checkout limit's files), or its folders
   * would take more than the listing cache's bytes: then no folder of it has a key, and it is not
   * listed again while that answer is kept.
   */
  #treeListing(repo: Repo, revision: string): Promise<TreeListing | null> {
    const key = `${repo.key}/${revision}`;
    const kept = this.#listings.get(key);
    if (kept !== undefined) return Promise.resolve(kept);
    const inFlight = this.#listingsInFlight.get(key);
    if (inFlight) return inFlight;
    const listed = this.#mutex
      .with(repo.key, async (): Promise<{ listing: TreeListing | null; keep: boolean }> => {
        const timeout = this.#localTimeoutMs;
        const root = await this.#gitIn(
          repo,
          ['rev-parse', '--verify', '--quiet', '--end-of-options', `${revision}^{tree}`],
          'git rev-parse',
          timeout,
        );
        const all = await this.#gitIn(
          repo,
          ['ls-tree', '-r', '-t', '-z', '--end-of-options', revision],
          'git ls-tree',
          timeout,
          32 * 1024 * 1024,
        ).catch((err: unknown) => (err instanceof SourceError && err.reason === 'TooLarge' ? 'over' : undefined));
        // Over the output's bound: so at every try. A failure (a timeout on a busy machine): this time.
        if (all === 'over') return { listing: null, keep: true };
        if (root.code !== 0 || all === undefined || all.code !== 0) return { listing: null, keep: false };
        return { listing: listFolders(`tree ${root.stdout.toString('utf8').trim()}`, all.stdout), keep: true };
      })
      .then(({ listing, keep }) => {
        // A listing too large to keep is kept as its absence, a few bytes.
        const kept = listing !== null && this.#listings.fits(key, listing.bytes) ? listing : null;
        if (keep) this.#listings.set(key, kept, kept ? kept.bytes : 0);
        return kept;
      })
      .finally(() => this.#listingsInFlight.delete(key));
    this.#listingsInFlight.set(key, listed);
    return listed;
  }

  /** Bytes of the folder listings kept (counted as listFolders counts them), for tests. */
  get listingBytes(): number {
    return this.#listings.bytes;
  }

  /** A local git command in the clone a checkout of `repoURL` made (signatures.ts), `env` added. */
  async inClone(repoURL: string, access: RepositoryAccess | undefined, args: string[], env: NodeJS.ProcessEnv) {
    const repo = await this.#repo(repoURL, access);
    return this.#mutex.with(repo.key, () => this.#cloneRunner(repo)(args, { label: `git ${args[0]}`, env }));
  }

  /** The clone of `repoURL` for this credential: one per (URL, credential), never shared across credentials. */
  async #repo(repoURL: string, access: RepositoryAccess | undefined): Promise<Repo> {
    const where = repoLocation(repoURL, this.#allowLocal);
    const cred = await credentialId(this.#cacheDir, access);
    const key = cred === ANONYMOUS ? where.key : `${where.key}-${cred}`;
    return { ...where, key, access, dir: path.join(this.#cacheDir, 'repos', `${key}.git`) };
  }

  async #ensureClone(repo: Repo): Promise<void> {
    if (existsSync(path.join(repo.dir, 'HEAD'))) return;
    await mkdir(path.dirname(repo.dir), { recursive: true });
    const tmp = `${repo.dir}.tmp-${randomBytes(4).toString('hex')}`;
    await this.#mustGit(['init', '--bare', '--quiet', tmp], { label: 'git init', timeoutMs: this.#localTimeoutMs });
    await writeFile(path.join(tmp, 'impersync-remote'), `${repo.shown}\n`);
    await rename(tmp, repo.dir);
  }

  async #localCommit(repo: Repo, rev: string): Promise<string | undefined> {
    const r = await this.#gitIn(
      repo,
      ['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`],
      'git rev-parse',
      this.#localTimeoutMs,
    );
    const sha = r.stdout.toString('utf8').trim();
    return r.code === 0 && FULL_SHA.test(sha) ? sha : undefined;
  }

  /** Makes `rev` (a SHA, full or short) present in the clone, fetching only when it is missing. Holds the mutex. */
  async #fetchCommit(repo: Repo, rev: string): Promise<string | undefined> {
    await this.#ensureClone(repo);
    const present = await this.#localCommit(repo, rev);
    if (present) return present;
    await this.#fetch(repo, ['+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*'], true);
    const afterFetch = await this.#localCommit(repo, rev);
    if (afterFetch || !FULL_SHA.test(rev)) return afterFetch;
    // A commit no branch or tag reaches (e.g. a pull request head): servers may serve it by SHA.
    await this.#fetch(repo, [rev], false);
    return this.#localCommit(repo, rev);
  }

  async #fetch(repo: Repo, refspecs: string[], mustSucceed: boolean): Promise<void> {
    const done = this.#onRequest?.(repo.shown, 'fetch');
    const r = await this.#remoteGit(
      repo,
      (remote) => ['fetch', '--quiet', '--prune', '--force', '--no-write-fetch-head', '--', remote, ...refspecs],
      { cwd: repo.dir, env: { GIT_DIR: repo.dir }, label: `git fetch of '${repo.shown}'` },
    ).finally(() => done?.());
    await this.#measureClone(repo);
    if (r.code !== 0 && mustSucceed) {
      throw new SourceError(
        'RepositoryUnreachable',
        `repository '${repo.shown}' not reachable: ${tail(r.stderr) || `git fetch exited with ${r.code}`}`,
      );
    }
  }

  /** The remote's refs (name → commit), one request at a time per repository however many callers ask. */
  #lsRemote(repo: Repo, maxAgeMs: number): Promise<Map<string, string>> {
    const known = this.#refs.get(repo.key);
    if (known && maxAgeMs > 0 && Date.now() - known.at < maxAgeMs) return Promise.resolve(known.refs);
    const inFlight = this.#lsRemoteInFlight.get(repo.key);
    if (inFlight) return inFlight;
    const p = (async () => {
      await mkdir(this.#cacheDir, { recursive: true });
      this.lsRemoteCount++;
      const done = this.#onRequest?.(repo.shown, 'ls-remote');
      const r = await this.#remoteGit(repo, (remote) => ['ls-remote', '--', remote], {
        cwd: this.#cacheDir,
        label: `git ls-remote of '${repo.shown}'`,
      }).finally(() => done?.());
      if (r.code !== 0) {
        throw new SourceError(
          'RepositoryUnreachable',
          `repository '${repo.shown}' not reachable: ${tail(r.stderr) || `git ls-remote exited with ${r.code}`}`,
        );
      }
      const refs = new Map<string, string>();
      for (const line of r.stdout.toString('utf8').split('\n')) {
        const [sha, name] = line.split('\t');
        if (sha && name && FULL_SHA.test(sha)) refs.set(name, sha);
      }
      // Counted as the listing's text twice over (its strings) and a Map entry per ref.
      this.#refs.set(repo.key, { at: Date.now(), refs }, r.stdout.length * 2 + refs.size * 64);
      return refs;
    })().finally(() => this.#lsRemoteInFlight.delete(repo.key));
    this.#lsRemoteInFlight.set(repo.key, p);
    return p;
  }

  /** Writes the files of `sha` into a directory of their own (materialise.ts). Holds the mutex. */
  #materialise(repo: Repo, sha: string, deadline: number | undefined): Promise<{ dir: string; bytes: number }> {
    const git = this.#cloneRunner(repo);
    const target = { gitDir: repo.dir, shown: repo.shown, sha, parent: path.join(this.#treesDir, repo.key) };
    return materialise(git, { ...target, cacheDir: this.#cacheDir }, this.#checkoutLimits, {
      reserve: (bytes) => this.#reserveTreeRoom(bytes, repo, deadline),
      unreserve: (bytes) => {
        this.#treeBytes -= bytes;
        this.#wakeRoomWaiters();
      },
    });
  }

  /** Local git commands in the clone. */
  #cloneRunner(repo: Repo): GitRunner {
    return (args, o) =>
      this.#run(args, {
        ...o,
        cwd: o.cwd ?? repo.dir,
        env: { GIT_DIR: repo.dir, ...o.env },
        timeoutMs: this.#localTimeoutMs,
      });
  }

  /**
   * Room for a tree of `bytes` in the tree cache: unused trees are removed, oldest first, until it
   * fits; while the trees in use fill it, this waits for one to be released, until `deadline`.
   */
  async #reserveTreeRoom(bytes: number, repo: Repo, deadline: number | undefined): Promise<void> {
    for (;;) {
      this.#evict(bytes);
      if (this.#treeBytes + bytes <= this.#treeCacheMaxBytes) break;
      const left = deadline === undefined ? Infinity : deadline - Date.now();
      if (left <= 0)
        throw new SourceError(
          'Timeout',
          `no room in the checkout cache for the ${formatBytes(bytes)} of '${repo.shown}' within the render's time limit: the checkouts in use fill its ${formatBytes(this.#treeCacheMaxBytes)}`,
        );
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.#roomWaiters.push(resolve);
        if (left !== Infinity) timer = setTimeout(resolve, left);
      });
      clearTimeout(timer);
    }
    this.#treeBytes += bytes;
  }

  #wakeRoomWaiters(): void {
    for (const wake of this.#roomWaiters.splice(0)) wake();
  }

  /** Removes unused trees, oldest first, past maxTrees, or until `room` more bytes fit. */
  #evict(room = 0): void {
    const idle = [...this.#trees.entries()]
      .filter(([, t]) => t.leases === 0)
      .sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    let excess = this.#trees.size - this.#maxTrees;
    for (const [key, tree] of idle) {
      if (excess <= 0 && this.#treeBytes + room <= this.#treeCacheMaxBytes) break;
      this.#trees.delete(key);
      this.#treeBytes -= tree.bytes;
      excess--;
      void rm(tree.dir, { recursive: true, force: true }).catch(() => {});
    }
  }

  #touchClone(repo: Repo): void {
    const c = this.#clones.get(repo.key);
    if (c) c.lastUsed = Date.now();
  }

  /** The clone's size after a fetch; past the clone budget, unused clones go, least recently used first. */
  async #measureClone(repo: Repo): Promise<void> {
    this.#clonesScanned ??= this.#scanClones();
    await this.#clonesScanned;
    this.#clones.set(repo.key, { dir: repo.dir, bytes: await diskUsage(repo.dir), lastUsed: Date.now() });
    let total = 0;
    for (const c of this.#clones.values()) total += c.bytes;
    const idle = [...this.#clones.entries()]
      .filter(([key]) => key !== repo.key && !this.#mutex.busy(key))
      .sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [key, clone] of idle) {
      if (total <= this.#cloneCacheMaxBytes) break;
      total -= clone.bytes;
      this.#clones.delete(key);
      // Under the clone's own mutex: whoever comes next for it waits, then clones it again.
      void this.#mutex.with(key, () => rm(clone.dir, { recursive: true, force: true })).catch(() => {});
    }
  }

  /** Clones left on disk by an earlier renderer on this cacheDir count too (their last use: their mtime). */
  async #scanClones(): Promise<void> {
    const reposDir = path.join(this.#cacheDir, 'repos');
    const names = await readdir(reposDir).catch(() => [] as string[]);
    for (const name of names) {
      if (!name.endsWith('.git')) continue;
      const dir = path.join(reposDir, name);
      const info = await stat(dir).catch(() => undefined);
      if (!info?.isDirectory()) continue;
      const key = name.slice(0, -'.git'.length);
      if (!this.#clones.has(key)) this.#clones.set(key, { dir, bytes: await diskUsage(dir), lastUsed: info.mtimeMs });
    }
  }

  async #gitIn(
    repo: Repo,
    args: string[],
    label: string,
    timeoutMs: number,
    maxStdoutBytes?: number,
  ): Promise<RunResult> {
    return this.#run(args, {
      cwd: repo.dir,
      env: { GIT_DIR: repo.dir },
      timeoutMs,
      label,
      ...(maxStdoutBytes !== undefined ? { maxStdoutBytes } : {}),
    });
  }

  async #mustGit(args: string[], o: { label: string; timeoutMs: number }): Promise<void> {
    await mkdir(this.#cacheDir, { recursive: true });
    const r = await this.#run(args, { cwd: this.#cacheDir, ...o });
    if (r.code !== 0) throw new SourceError('ToolFailed', `${o.label} failed: ${tail(r.stderr)}`);
  }

  /**
   * A git that talks to the repository, with its credentials. Carrying them, git follows no
   * redirect; one within the origin is followed here by running git again at the new URL, one to
   * another origin is refused (git-redirect.ts).
   */
  async #remoteGit(
    repo: Repo,
    argsFor: (remote: string) => string[],
    o: { cwd: string; label: string; env?: NodeJS.ProcessEnv },
  ): Promise<RunResult> {
    let remote = repo.remote;
    for (let hops = 0; ; hops++) {
      const r = await this.#run(argsFor(remote), { ...o, timeoutMs: this.#networkTimeoutMs, access: repo.access });
      const status = r.code !== 0 && carriesCredential(repo.access) ? redirectStatus(r.stderr) : undefined;
      if (status === undefined) return r;
      const timeoutMs = this.#networkTimeoutMs;
      remote = await redirectedRemote(repo.shown, remote, status, repo.access, { hops, timeoutMs });
    }
  }

  /** Every git of the cache: the renderer's environment (plus `env`), its limits, its scrubber unless given one. */
  async #run(
    args: string[],
    o: {
      cwd: string;
      label: string;
      timeoutMs: number;
      env?: NodeJS.ProcessEnv;
      scrub?: Scrub;
      maxStdoutBytes?: number;
      /** The repository's credentials: files for this one process (credentials.ts), removed after it. */
      access?: RepositoryAccess | undefined;
    },
  ): Promise<RunResult> {
    const { access, ...rest } = o;
    const go = (extra: NodeJS.ProcessEnv, config: [string, string][] = []) =>
      run(this.#git, args, {
        ...rest,
        env: withGitConfig({ ...this.#env, ...rest.env, ...extra }, config),
        howToGet: GIT_HOW_TO,
        scrub: rest.scrub ?? this.#scrub,
        limits: this.#toolLimits,
      });
    if (!access) return go({});
    const creds = await gitCredentials(path.join(this.#cacheDir, 'creds'), access);
    try {
      return await go(creds.env, creds.config);
    } finally {
      await creds.dispose();
    }
  }
}

/** Bytes of the files under `dir` (symlinks not followed). */
async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  for (const e of entries) {
    if (!e.isFile()) continue;
    const info = await lstat(path.join(e.parentPath, e.name)).catch(() => undefined);
    total += info?.size ?? 0;
  }
  return total;
}

interface Repo {
  key: string;
  access: RepositoryAccess | undefined;
  remote: string;
  shown: string;
  dir: string;
}

interface TreeListing {
  /** Each folder ('.' the root): `tree <id>`, and whether a plain directory's render of it may read past it. */
  folders: Map<string, { tree: string; impure: boolean }>;
  /** Each `.gitattributes` file's `blob <id>`. */
  attributes: Map<string, string>;
  /** The commit has a `.gitmodules`. */
  submodules: boolean;
  /** What it holds, counted as UTF-16 strings and an entry's overhead each. */
  bytes: number;
}

/** Bytes counted per folder or `.gitattributes` kept, beside its strings: a Map entry and an object. */
const LISTED_ENTRY_BYTES = 96;

/**
 * A commit's `git ls-tree -r -t -z` listing, read down to its folders: what a symlink, submodule or
 * Jsonnet file at any depth makes impure is each folder above it, up to the root. Null (no folder
 * of the commit has a key) when two entries would have one name here though not on disk: a name
 * that is not UTF-8 (read, it could equal another's), or a tree that lists one name twice (git
 * writes both to disk, so the folder holds more than its tree id says).
 */
function listFolders(root: string, output: Buffer): TreeListing | null {
  let listing: string;
  try {
    listing = new TextDecoder('utf-8', { fatal: true }).decode(output);
  } catch {
    return null;
  }
  const folders = new Map<string, { tree: string; impure: boolean }>([['.', { tree: root, impure: false }]]);
  const attributes = new Map<string, string>();
  const impure: string[] = [];
  let submodules = false;
  let bytes = 0;
  // Every name listed, while the listing is read (its output is bounded: 32 MiB).
  const seen = new Set<string>();
  for (let at = 0; at < listing.length;) {
    const end = listing.indexOf('\0', at);
    const line = listing.slice(at, end === -1 ? listing.length : end);
    at = end === -1 ? listing.length : end + 1;
    const m = /^(\d+) (\w+) ([0-9a-f]+)\t(.*)$/s.exec(line);
    if (!m) continue;
    const [, mode, type, id, name] = m as unknown as [string, string, string, string, string];
    if (seen.has(name)) return null;
    seen.add(name);
    if (type === 'tree') folders.set(name, { tree: `tree ${id}`, impure: false });
    else if (name === '.gitattributes' || name.endsWith('/.gitattributes')) attributes.set(name, `blob ${id}`);
    else if (name === '.gitmodules') submodules = true;
    if (type === 'tree' || attributes.has(name)) bytes += 2 * (name.length + id.length + 5) + LISTED_ENTRY_BYTES;
    if (mode === '120000' || mode === '160000' || (type === 'blob' && /\.(jsonnet|libsonnet)$/i.test(name)))
      impure.push(name);
  }
  for (const p of impure) {
    for (let dir = path.posix.dirname(p); ; dir = path.posix.dirname(dir)) {
      const f = folders.get(dir);
      if (f?.impure) break;
      if (f) f.impure = true;
      if (dir === '.') break;
    }
  }
  return { folders, attributes, submodules, bytes };
}
