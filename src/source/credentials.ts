// A repository's credentials, as the one git process that uses them gets them: never in argv
// (visible in /proc to anyone), never in an environment variable (inherited by every helper git
// starts), but in files of a folder only the renderer's user may open, made for that process and
// removed when it ends. git finds them through its configuration (GIT_CONFIG_GLOBAL, a file in that
// folder): an askpass program that answers only for the repository's own host, an Authorization
// header scoped to that host (bearer tokens, forceHttpBasicAuth), the client certificate, the CA
// bundle of argocd-tls-certs-cm. With any of these git follows no redirect (`config`): followed,
// git sends its later requests, the Authorization header included, to wherever the first answer
// pointed (git-redirect.ts finds out where instead). For SSH, GIT_SSH_COMMAND names the key and
// the known_hosts lines of argocd-ssh-known-hosts-cm, with strict host key checking unless the
// repository says otherwise.
//
// The cache of clones is keyed by credentialId(): an HMAC of everything here under a key kept in
// the cache folder, so that a clone made with one credential is never used for a request with
// another (or with none), and no folder name tells anything about the secret.
import { createHmac, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { RepositoryAccess } from '../api/repository.ts';
import { hostOf, isSSHURL } from '../repository/access.ts';

/** The identity of "no credential" in cache keys. */
export const ANONYMOUS = 'anonymous';

const keys = new Map<string, Promise<Buffer>>();

/** The key of the HMACs, made once per cache folder (0600), so that clone folders survive restarts. */
function cacheKey(cacheDir: string): Promise<Buffer> {
  let k = keys.get(cacheDir);
  if (!k) {
    k = (async () => {
      const file = path.join(cacheDir, '.credential-key');
      try {
        const existing = await readFile(file);
        if (existing.length === 32) return existing;
      } catch {
        // made below
      }
      await mkdir(cacheDir, { recursive: true, mode: 0o700 });
      const fresh = randomBytes(32);
      await writeFile(file, fresh, { mode: 0o600 });
      return fresh;
    })();
    keys.set(cacheDir, k);
  }
  return k;
}

/** A short digest naming the credential of `access` in cache keys; ANONYMOUS when it carries none. */
export async function credentialId(cacheDir: string, access: RepositoryAccess | undefined): Promise<string> {
  if (!access) return ANONYMOUS;
  const { url: _url, ...rest } = access;
  void _url;
  const entries = Object.entries(rest)
    .filter(([, v]) => v !== undefined && v !== '' && v !== false)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  if (entries.length === 0) return ANONYMOUS;
  return createHmac('sha256', await cacheKey(cacheDir))
    .update(JSON.stringify(entries))
    .digest('hex')
    .slice(0, 20);
}

export interface GitCredentials {
  /** Variables for the one git process (paths only, no secret). */
  env: NodeJS.ProcessEnv;
  /** Configuration that must win over every other (git-env.ts withGitConfig): no redirect followed. */
  config: [string, string][];
  /** Removes the folder and every file in it. */
  dispose(): Promise<void>;
}

const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

/** git configuration values (and subsection names) are quoted in the file as git reads them. */
function configValue(v: string): string {
  if (/[\n\r\0]/.test(v)) throw new Error('a credential value holds a line break');
  return `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** Whether git sends something of `access` that must stay on its origin (SSH aside). */
export function carriesCredential(access: RepositoryAccess | undefined): boolean {
  return Boolean(access?.password || access?.bearerToken || (access?.tlsClientCertData && access.tlsClientCertKey));
}

/**
 * The Authorization git sends the repository's origin: Basic with its username and password (as
 * answered to a challenge, or up front with forceHttpBasicAuth), else its bearer token.
 */
export function gitAuthorization(access: RepositoryAccess | undefined): string | undefined {
  if (access?.password && (access.forceHttpBasicAuth || !access.bearerToken)) {
    const username = access.username || 'x-access-token';
    return `Basic ${Buffer.from(`${username}:${access.password}`).toString('base64')}`;
  }
  return access?.bearerToken ? `Bearer ${access.bearerToken}` : undefined;
}

/**
 * The files and variables that let git reach `access.url` with its credentials. `root` is a folder
 * of the renderer's (its cache); a fresh 0700 folder is made inside it for this one process.
 */
export async function gitCredentials(root: string, access: RepositoryAccess | undefined): Promise<GitCredentials> {
  const dir = path.join(root, `cred-${randomBytes(8).toString('hex')}`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    const env: NodeJS.ProcessEnv = {};
    const write = async (name: string, content: string, mode = 0o600): Promise<string> => {
      const file = path.join(dir, name);
      await writeFile(file, content, { mode });
      return file;
    };
    const url = access?.url ?? '';
    const ssh = isSSHURL(url) || /^ssh:\/\//i.test(url);
    const config: string[] = [];
    const command: [string, string][] = [];
    if (ssh) {
      const args = ['ssh', '-F', '/dev/null', '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes'];
      if (access?.sshPrivateKey) {
        const key = await write(
          'ssh-key',
          access.sshPrivateKey.endsWith('\n') ? access.sshPrivateKey : `${access.sshPrivateKey}\n`,
        );
        args.push('-i', quote(key));
      } else {
        args.push('-o', 'IdentityFile=none');
      }
      if (access?.insecureIgnoreHostKey) {
        args.push('-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null');
      } else {
        const known = await write('known_hosts', access?.knownHosts ?? '', 0o644);
        args.push(
          '-o',
          'StrictHostKeyChecking=yes',
          '-o',
          `UserKnownHostsFile=${quote(known)}`,
          '-o',
          'GlobalKnownHostsFile=/dev/null',
        );
      }
      env.GIT_SSH_COMMAND = args.join(' ');
      env.GIT_SSH_VARIANT = 'ssh';
    } else if (access) {
      const origin = originOf(url);
      // A URL's host may hold `"` and `\\` (WHATWG URL allows them): quoted as git reads them.
      const scope = origin ? `http ${configValue(`${origin}/`)}` : 'http';
      if (carriesCredential(access)) command.push(['http.followRedirects', 'false']);
      const section: string[] = [];
      // As Argo CD: variables (paths only) that win over any GIT_SSL_* the operator set for the machine.
      if (access.insecure) env.GIT_SSL_NO_VERIFY = 'true';
      if (access.caCerts) env.GIT_SSL_CAINFO = await write('ca.pem', access.caCerts, 0o644);
      if (access.tlsClientCertData && access.tlsClientCertKey) {
        env.GIT_SSL_CERT = await write('client.crt', access.tlsClientCertData);
        env.GIT_SSL_KEY = await write('client.key', access.tlsClientCertKey);
      }
      if (access.proxy) section.push(`proxy = ${configValue(access.proxy)}`);
      const username = access.username || 'x-access-token';
      if (access.bearerToken || (access.password && access.forceHttpBasicAuth)) {
        section.push(`extraHeader = ${configValue(`Authorization: ${gitAuthorization(access)}`)}`);
      }
      if (section.length > 0) config.push(`[${scope}]`, ...section.map((l) => `\t${l}`));
      if (access.password) {
        await write('username', username);
        await write('password', access.password);
        // git asks "Username for 'https://host': " and "Password for 'https://user@host': ": answer
        // only for the repository's own origin, so a redirect elsewhere gets nothing. The host is
        // single-quoted: a URL's host may hold `$(...)`, backticks, `"` and `*`, which the shell
        // would otherwise run or read as a pattern.
        const host = origin ? origin.replace(/^https?:\/\//, '') : '';
        const askpass = [
          '#!/bin/sh',
          `case "$1" in`,
          `  *${quote(`://${host}'`)}*|*${quote(`@${host}'`)}*) ;;`,
          '  *) exit 0 ;;',
          'esac',
          `case "$1" in`,
          `  Username*) cat ${quote(path.join(dir, 'username'))} ;;`,
          `  *) cat ${quote(path.join(dir, 'password'))} ;;`,
          'esac',
          '',
        ].join('\n');
        env.GIT_ASKPASS = await write('askpass', askpass, 0o700);
      }
      if (access.noProxy) env.NO_PROXY = env.no_proxy = access.noProxy;
    }
    if (config.length > 0) env.GIT_CONFIG_GLOBAL = await write('gitconfig', `${config.join('\n')}\n`);
    return { env, config: command, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

/** `https://host[:port]` of an http(s) URL, without user information; undefined otherwise. */
export function originOf(url: string): string | undefined {
  if (!/^https?:\/\//i.test(url)) return undefined;
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return undefined;
  }
}

export { hostOf };
