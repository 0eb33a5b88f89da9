// Which repository URLs the renderer fetches from. A repoURL is tenant input: git reads it as a
// transport too, and `file://`, a bare path, `ext::sh -c ...` (a remote helper that runs a
// command) or `fd::` would make the renderer read its own disk or run programs. Only network
// transports are allowed (https, http, ssh, git://, scp-like user@host:path); local ones only
// when the operator allows them (demos and tests), remote helpers never.
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
