// The one rule for which repository URL a credential may go to (pure). A repoURL is tenant input,
// so a credential's URL and the URL a fetch would use are both read as a transport reads them:
// scheme, user, host, port and path segments. A credential goes only to its own scheme, host and
// port, under its path at a `/` boundary, and a URL naming a user gets only a credential whose URL
// names the same user. Argo CD compares plain string prefixes instead, which lets
// `https://git.corp.example@evil.test/`, `https://git.corp.example.evil.test/` or
// `https://git.corp.example:8443/` collect the template of `https://git.corp.example`.
//
// Normalising never changes where a URL leads: host case, default ports, a trailing `.git` or `/`,
// empty segments and percent-encoded unreserved characters are only spellings. A URL whose meaning
// normalising would change (a `.` or `..` segment, an encoded `/`, a backslash, an encoded host)
// is refused whole, so that what the project judges is what the transport fetches.

/** A repository URL as a transport reads it, normalised for comparison. */
export interface RepositoryLocator {
  /** `https`, `http`, `ssh` (scp-like `user@host:path` too), `git`, `oci` (also a reference with no scheme), ... */
  scheme: string;
  /** The user of the URL's user information (percent-decoded), when it names one. */
  user: string | undefined;
  /** Lower case, IPv6 without brackets. */
  host: string;
  /** The port, the scheme's default when none is written. */
  port: number;
  /** Path segments, lower case, without empty ones and without the last one's `.git`. */
  segments: string[];
}

export type ParsedRepositoryURL =
  | { ok: true; url: RepositoryLocator }
  /** `ambiguous`: normalising would change where it leads, so it is refused as a repository URL too. */
  | { ok: false; why: string; ambiguous?: true };

const DEFAULT_PORTS: Readonly<Record<string, number>> = { https: 443, http: 80, ssh: 22, git: 9418, oci: 443 };
const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** Reads `raw` as git, helm or an OCI client would; refuses what normalising would change the meaning of. */
export function parseRepositoryURL(raw: string): ParsedRepositoryURL {
  const url = raw.trim();
  if (url === '') return { ok: false, why: 'it is empty' };
  if ([...url].some((c) => c.charCodeAt(0) <= 0x20 || c.charCodeAt(0) === 0x7f))
    return { ok: false, why: 'it holds spaces or control characters' };
  if (url.includes('\\'))
    return { ok: false, why: 'it holds a backslash, which some clients read as a /', ambiguous: true };
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url);
  let name: string;
  let authority: string;
  let rest: string;
  if (scheme) {
    name = (scheme[1] as string).toLowerCase();
    const after = url.slice(scheme[0].length);
    const end = after.search(/[/?#]/);
    authority = end < 0 ? after : after.slice(0, end);
    rest = end < 0 ? '' : after.slice(end);
  } else {
    // scp-like ssh (`git@host:org/repo`), as git reads it: a colon before any slash, after a user.
    const scp = /^([^@/:]+@(?:\[[^\]/]+\]|[^/:[\]]+)):(.*)$/.exec(url);
    if (scp) {
      name = 'ssh';
      authority = scp[1] as string;
      rest = `/${scp[2] as string}`;
    } else {
      // An OCI reference without a scheme (`registry.example.com/charts`).
      name = 'oci';
      const end = url.search(/[/?#]/);
      authority = end < 0 ? url : url.slice(0, end);
      rest = end < 0 ? '' : url.slice(end);
    }
  }
  const at = authority.lastIndexOf('@');
  const userinfo = at < 0 ? undefined : authority.slice(0, at);
  const hostPort = authority.slice(at + 1);
  const hp = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::(\d*))?$/.exec(hostPort);
  if (!hp) return { ok: false, why: 'its host is not a host name or address' };
  const host = (hp[1] as string).replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === '' || host.startsWith('-')) return { ok: false, why: 'its host is empty or starts with a dash' };
  if (/[%@]/.test(host)) return { ok: false, why: 'its host is percent-encoded', ambiguous: true };
  const portText = hp[2];
  const port = portText === undefined || portText === '' ? DEFAULT_PORTS[name] : Number(portText);
  if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535)
    return { ok: false, why: portText ? `its port ${portText} is not a port` : `'${name}://' has no default port` };
  let user: string | undefined;
  if (userinfo !== undefined) {
    const decoded = decodeComponent(userinfo.split(':')[0] as string);
    if (decoded === undefined) return { ok: false, why: 'its user information is not valid percent-encoding' };
    user = decoded;
  }
  const path = rest.split(/[?#]/)[0] as string;
  const segments: string[] = [];
  for (const part of path.split('/')) {
    if (part === '') continue;
    const segment = decodeUnreserved(part);
    if (segment === undefined)
      return { ok: false, why: 'its path holds an encoded / or invalid percent-encoding', ambiguous: true };
    if (segment === '.' || segment === '..') {
      return {
        ok: false,
        why: `its path has a '${segment}' segment, so it does not say which repository it is`,
        ambiguous: true,
      };
    }
    segments.push(segment.toLowerCase());
  }
  const last = segments.length - 1;
  if (last >= 0 && segments[last]?.endsWith('.git')) {
    const trimmed = (segments[last] as string).slice(0, -'.git'.length);
    if (trimmed === '') segments.pop();
    else segments[last] = trimmed;
  }
  return { ok: true, url: { scheme: name, user, host, port, segments } };
}

/** `%XX` of unreserved characters decoded, others kept with upper-case hex; undefined for `%2F` or bad escapes. */
function decodeUnreserved(part: string): string | undefined {
  let out = '';
  for (let i = 0; i < part.length; i++) {
    const c = part[i] as string;
    if (c !== '%') {
      out += c;
      continue;
    }
    const hex = part.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return undefined;
    const ch = String.fromCharCode(parseInt(hex, 16));
    if (ch === '/' || ch === '\\') return undefined;
    out += UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
    i += 2;
  }
  return out;
}

function decodeComponent(s: string): string | undefined {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}

/** Same scheme, host and port. */
export function sameOrigin(a: RepositoryLocator, b: RepositoryLocator): boolean {
  return a.scheme === b.scheme && a.host === b.host && a.port === b.port;
}

/** Whether a repository Secret for `secretURL` is the repository `url` names (same origin, user and path). */
export function sameRepository(secretURL: string, url: string): boolean {
  const s = parseRepositoryURL(secretURL);
  const u = parseRepositoryURL(url);
  if (!s.ok || !u.ok) return false;
  return (
    sameOrigin(s.url, u.url) &&
    s.url.user === u.url.user &&
    s.url.segments.length === u.url.segments.length &&
    s.url.segments.every((seg, i) => seg === u.url.segments[i])
  );
}

/**
 * How many path segments of `url` a credential template for `templateURL` covers, or undefined
 * when it may not go there: another origin, another user, or a path that is not under the
 * template's at a `/` boundary. The deepest covering template wins (Argo CD's longest prefix).
 */
export function templateCoverage(templateURL: string, url: string): number | undefined {
  const t = parseRepositoryURL(templateURL);
  const u = parseRepositoryURL(url);
  if (!t.ok || !u.ok || !sameOrigin(t.url, u.url)) return undefined;
  if (u.url.user !== undefined && t.url.user !== u.url.user) return undefined;
  if (t.url.segments.length > u.url.segments.length) return undefined;
  if (!t.url.segments.every((seg, i) => seg === u.url.segments[i])) return undefined;
  return t.url.segments.length;
}

/**
 * Why `url` is refused as a repository URL because normalising it would change where it leads, or
 * undefined. URLs of other shapes (local paths, unknown schemes) are the renderer's to judge.
 */
export function repositoryURLRefusal(url: string): string | undefined {
  const p = parseRepositoryURL(url);
  if (p.ok || !p.ambiguous) return undefined;
  const resolved = resolveDotSegments(url);
  return resolved === url.trim() ? p.why : `${p.why} (it would be read as '${resolved}')`;
}

/**
 * `url` with `.` and `..` path segments resolved as an HTTP client resolves them, for judging it
 * against sourceRepos as what it would fetch (`https://host/team-a/../evil` is `https://host/evil`).
 * Other URLs are returned as they are.
 */
export function resolveDotSegments(url: string): string {
  const m = /^((?:[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*)|(?:[^@/:]+@[^/:]+:)|(?:[^/:?#]+))([^?#]*)(.*)$/.exec(url.trim());
  if (!m) return url;
  const [, head, path, tail] = m as unknown as [string, string, string, string];
  const decoded = path.replace(/%2e/gi, '.');
  if (!/(^|\/)\.\.?(\/|$)/.test(decoded)) return url;
  const out: string[] = [];
  for (const seg of decoded.split('/')) {
    if (seg === '.') continue;
    if (seg === '..') {
      if (out.length > 1 || (out.length === 1 && out[0] !== '')) out.pop();
      continue;
    }
    out.push(seg);
  }
  let resolved = out.join('/');
  if (head.endsWith(':') && resolved.startsWith('/')) resolved = resolved.slice(1);
  else if (!head.endsWith(':') && !resolved.startsWith('/') && resolved !== '') resolved = `/${resolved}`;
  return `${head}${resolved}${tail}`;
}
