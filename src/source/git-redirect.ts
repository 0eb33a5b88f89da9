// Where a repository sends git when git carries its credentials. Such a git follows no redirect
// (credentials.ts): git 2.39, following one, sends its later requests, a bearer token's or
// forceHttpBasicAuth's Authorization header included, to wherever the first answer pointed. A
// redirect then ends git with "The requested URL returned error: 30x", and this module asks the
// server, redirects not followed, with the repository's TLS settings, where it sends
// `<remote>/info/refs?service=git-upload-pack`: anonymously first, and, when that is refused (a
// private repository), with the credential git sent, to that same origin only. Within the origin, git is asked again at the
// new URL (again following nothing, so a second redirect elsewhere is caught the same way); to
// another origin, the render is refused naming both, since the credentials are the origin's only.
import type { RepositoryAccess } from '../api/repository.ts';
import { SourceError, redactURL } from './errors.ts';
import { redirectOf } from './http.ts';
import { gitAuthorization, originOf } from './credentials.ts';

const INFO_REFS = '/info/refs?service=git-upload-pack';
/** Redirects within the origin followed for one git command, as curl's own limit would bound them. */
export const MAX_GIT_REDIRECTS = 5;
const PROBE_TIMEOUT_MS = 30_000;

/** The 3xx status git failed on (git 2.39: "The requested URL returned error: 302"), if it did. */
export function redirectStatus(stderr: string): number | undefined {
  const m = /The requested URL returned error: (3\d\d)\b/.exec(stderr);
  return m ? Number(m[1]) : undefined;
}

/**
 * The base URL to ask git again at, after `remote` (reached from the repository's `shown` URL)
 * answered git with redirect `status`; throws a SourceError naming what the user should do when it
 * points at another origin, is not a repository, or cannot be known.
 */
export async function redirectedRemote(
  shown: string,
  remote: string,
  status: number,
  access: RepositoryAccess | undefined,
  opts: { hops: number; timeoutMs: number },
): Promise<string> {
  const here = `repository '${shown}'${redactURL(remote) === shown ? '' : ` (redirected to '${redactURL(remote)}')`}`;
  const fix = "set the repository's URL to where it now lives";
  const timeoutMs = Math.min(opts.timeoutMs, PROBE_TIMEOUT_MS);
  let location = await askWhere(remote, access, undefined, timeoutMs);
  const authorization = gitAuthorization(access);
  // The credential goes only to the origin it is for, as git itself sent it there.
  if (location.refused && authorization && new URL(remote).origin === originOf(access?.url ?? '')) {
    location = await askWhere(remote, access, authorization, timeoutMs);
  }
  if (!location.url) {
    throw new SourceError(
      'RepositoryUnreachable',
      `${here} answered git with a redirect (HTTP ${status}), which impersync does not follow while it sends the repository's credentials, and ${location.why}: ${fix}`,
    );
  }
  const [from, to] = [new URL(remote).origin, location.url.origin];
  if (from !== to) {
    throw new SourceError(
      'RepositoryUnreachable',
      `${here} redirects to another origin (${from} -> ${to}): impersync does not send repository credentials across origins; ${fix}`,
    );
  }
  const target = `${location.url.origin}${location.url.pathname}${location.url.search}`;
  if (!target.endsWith(INFO_REFS)) {
    throw new SourceError(
      'RepositoryUnreachable',
      `${here} redirects to '${redactURL(`${location.url.origin}${location.url.pathname}`)}', which is not a Git repository's URL: ${fix}`,
    );
  }
  if (opts.hops >= MAX_GIT_REDIRECTS) {
    throw new SourceError('RepositoryUnreachable', `${here} redirects more than ${MAX_GIT_REDIRECTS} times: ${fix}`);
  }
  return target.slice(0, -INFO_REFS.length);
}

type Answer = { url: URL; why?: never; refused?: never } | { url?: never; why: string; refused: boolean };

/** Where the server sends a request for `remote`'s refs (no redirect followed), answered only from its headers. */
async function askWhere(
  remote: string,
  access: RepositoryAccess | undefined,
  authorization: string | undefined,
  timeoutMs: number,
): Promise<Answer> {
  const probe = new URL(`${remote.replace(/\/+$/, '')}${INFO_REFS}`);
  probe.username = '';
  probe.password = '';
  try {
    const { status, location } = await redirectOf(
      probe.href,
      access,
      { 'git-protocol': 'version=2', ...(authorization ? { authorization } : {}) },
      timeoutMs,
    );
    if (status < 300 || status >= 400 || location === undefined) {
      const asked = authorization ? 'a request there with its credentials' : 'an anonymous request there';
      return {
        why: `${asked} is not redirected (HTTP ${status})`,
        refused: status === 401 || status === 403 || status === 404,
      };
    }
    return { url: new URL(location, probe) };
  } catch {
    return { why: 'asking it where it redirects failed', refused: false };
  }
}
