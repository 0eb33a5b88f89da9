// Which repository URLs the renderer fetches from. A repoURL is tenant input: git reads it as a
// transport too, and `file://`, a bare path, `ext::sh -c ...` (a remote helper that runs a
// command) or `fd::` would make the renderer read its own disk or run programs. Only network
// transports are allowed (https, http, ssh, git://, scp-like user@host:path); local ones only
// when the operator allows them (demos and tests), remote helpers never.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { SourceError, redactURL } from './errors.ts';

export type RepoURLKind =
  { kind: 'network'; scheme: 'https' | 'http' | 'ssh' | 'git' } | { kind: 'local' } | { kind: 'refused'; why: string };

const NETWORK_SCHEMES = new Set(['https', 'http', 'ssh', 'git']);

/** What git would make of `url`, as far as where it reads from is concerned. */
export function classifyRepoURL(url: string): RepoURLKind {
  // Control characters and leading dashes are never part of a usable URL, and a leading dash is
  // how an option sneaks into a command (git refuses such hosts for the same reason).
  if ([...url].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f))
    return { kind: 'refused', why: 'it holds control characters' };
  if (url.startsWith('-')) return { kind: 'refused', why: 'it starts with a dash' };
  // git's own order (transport.c): `<helper>::<address>` before anything else.
  const helper = /^([A-Za-z0-9][A-Za-z0-9+.-]*)::/.exec(url);
  if (helper) return { kind: 'refused', why: `'${helper[1]}::' runs a git remote helper` };
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url);
  if (scheme) {
    const name = (scheme[1] as string).toLowerCase();
    if (name === 'file') return { kind: 'local' };
    if (!NETWORK_SCHEMES.has(name)) return { kind: 'refused', why: `'${name}://' is not a network transport` };
    const authority = url.slice(scheme[0].length).split('/')[0] ?? '';
    const host = authority.slice(authority.lastIndexOf('@') + 1);
    if (host === '' || host.startsWith('-') || authority.startsWith('-')) {
      return { kind: 'refused', why: 'its host is empty or starts with a dash' };
    }
    return { kind: 'network', scheme: name as 'https' | 'http' | 'ssh' | 'git' };
  }
  // scp-like ssh, as git reads it: a colon before any slash, here with the user Argo CD asks for.
  const scp = /^([^@/:]+)@(\[[^\]/]+\]|[^/:]+):/.exec(url);
  if (scp) {
    if (scp[2]?.startsWith('-')) return { kind: 'refused', why: 'its host starts with a dash' };
    return { kind: 'network', scheme: 'ssh' };
  }
  // Anything else git takes for a path on the renderer's own disk (`/srv/repo`, `repo`, `host:x`
  // without a user is refused as unclear rather than guessed at).
  if (/^[^/]*:/.test(url)) return { kind: 'refused', why: 'it is neither a URL nor user@host:path' };
  return { kind: 'local' };
}

/** Throws the tenant-facing refusal unless git may fetch `url` here. */
export function checkRepoURL(url: string, allowLocal: boolean): void {
  const c = classifyRepoURL(url);
  if (c.kind === 'network' || (c.kind === 'local' && allowLocal)) return;
  const why = c.kind === 'refused' ? ` (${c.why})` : '';
  throw new SourceError(
    'InvalidSource',
    `repository '${redactURL(url)}' is refused${why}: only network repositories (https, http, ssh, git) are allowed`,
  );
}

export interface RepoLocation {
  /** The clone's folder name: a digest of the remote and its last path segment. */
  key: string;
  /** What git is given: the URL, or a local path made absolute. */
  remote: string;
  /** The URL as shown in messages, its password hidden. */
  shown: string;
}

/** Where a repository URL is fetched from and kept; refuses the URL first (checkRepoURL). */
export function repoLocation(repoURL: string, allowLocal: boolean): RepoLocation {
  const trimmed = repoURL.trim();
  if (trimmed === '') throw new SourceError('InvalidSource', 'spec.source.repoURL is empty');
  checkRepoURL(trimmed, allowLocal);
  // Local paths are made absolute: git runs with the clone as its working directory.
  const remote =
    classifyRepoURL(trimmed).kind === 'network' || /^file:\/\//i.test(trimmed) ? trimmed : path.resolve(trimmed);
  const digest = createHash('sha256').update(remote).digest('hex').slice(0, 16);
  const base = (remote.replace(/\/+$/, '').split(/[/:]/).pop() ?? 'repo').replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40);
  return { key: `${digest}-${base}`, remote, shown: redactURL(trimmed) };
}
