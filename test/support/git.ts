// Test helpers for Git sources: local repositories built from a map of files, and a smart-HTTP
// server on 127.0.0.1 that serves a folder of repositories through `git http-backend` (CGI), so the
// http:// path of the Git cache is exercised against real git, not a fake.
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Fixed identity and no user or system config, so commits are the same on every machine. */
const GIT_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'impersync test',
  GIT_AUTHOR_EMAIL: 'test@impersync.invalid',
  GIT_COMMITTER_NAME: 'impersync test',
  GIT_COMMITTER_EMAIL: 'test@impersync.invalid',
  GIT_TERMINAL_PROMPT: '0',
  LC_ALL: 'C',
};

/** Runs git synchronously in `cwd`; throws with git's stderr when it fails. */
export function git(cwd: string, ...args: string[]): string {
  const r = spawnSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8' });
  if (r.error) throw new Error(`git ${args.join(' ')}: ${r.error.message} (is git installed? apt-get install git)`);
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed in ${cwd}: ${r.stderr}`);
  return r.stdout.trim();
}

/** One smart-HTTP server per test process, serving every TestRepo by its absolute path. */
const shared: { started?: Promise<void>; base?: string } = {};

/** Files to write (path → content) or delete (path → null), relative to the repository root. */
export type RepoFiles = Record<string, string | null>;

export class TestRepo {
  readonly dir: string;

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** A new repository (branch `main`) in a fresh temporary folder, or in `dir` when given. */
  static async create(dir?: string): Promise<TestRepo> {
    const where = dir ?? (await mkdtemp(path.join(os.tmpdir(), 'impersync-repo-')));
    await mkdir(where, { recursive: true });
    git(where, 'init', '--quiet', '--initial-branch=main');
    shared.started ??= startGitHttpServer('/', { unref: true }).then((server) => {
      shared.base = server.baseURL;
    });
    await shared.started;
    return new TestRepo(where);
  }

  /** `file://` URL of this repository (only a renderer with --allow-local-repositories fetches it). */
  get fileURL(): string {
    return pathToFileURL(this.dir).href;
  }

  /**
   * Its URL on this process's loopback smart-HTTP server (started by create()): the network path a
   * real install takes, so the tests need no --allow-local-repositories.
   */
  get url(): string {
    if (!shared.base) throw new Error('TestRepo.url: the repository was not made by TestRepo.create()');
    return `${shared.base}${this.dir.split('/').map(encodeURIComponent).join('/')}`;
  }

  /** Writes and deletes files, commits them all, and returns the new commit's SHA. */
  async commit(files: RepoFiles, message = 'update'): Promise<string> {
    for (const [rel, content] of Object.entries(files)) {
      const abs = path.join(this.dir, rel);
      if (content === null) {
        await rm(abs, { force: true });
      } else {
        await mkdir(path.dirname(abs), { recursive: true });
        await writeFile(abs, content);
      }
    }
    git(this.dir, 'add', '--all');
    git(this.dir, 'commit', '--quiet', '--allow-empty', '-m', message);
    return this.head();
  }

  head(): string {
    return git(this.dir, 'rev-parse', 'HEAD');
  }

  /** A lightweight tag, or an annotated one when `message` is given, on HEAD or `ref`. */
  tag(name: string, opts: { message?: string; ref?: string } = {}): void {
    const args = opts.message === undefined ? ['tag', name] : ['tag', '-a', name, '-m', opts.message];
    git(this.dir, ...args, ...(opts.ref ? [opts.ref] : []));
  }

  /** Creates branch `name` at HEAD (or `from`) and switches to it. */
  branch(name: string, from?: string): void {
    git(this.dir, 'switch', '--quiet', '-c', name, ...(from ? [from] : []));
  }

  switch(name: string): void {
    git(this.dir, 'switch', '--quiet', name);
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

export interface GitHttpServer {
  /** `http://127.0.0.1:<port>` (https with `tls`) */
  baseURL: string;
  /** URL of the repository in folder `name` under the served root. */
  url(name: string): string;
  /** Requests served so far (to check that the http path was really taken). */
  requests(): number;
  /** The last requests' method, path and query (`GET /x/info/refs?service=git-upload-pack`), newest last. */
  requestLog(): string[];
  /** The Authorization header of each request so far (undefined: none), oldest first. */
  authorizations(): Array<string | undefined>;
  close(): Promise<void>;
}

/**
 * Serves every repository under `root` (bare, or with a work tree) over Git's smart HTTP protocol,
 * read-only, on 127.0.0.1 at a free port.
 */
export interface GitHttpServerOptions {
  unref?: boolean;
  /** Serve HTTPS with this certificate (test/support/tls.ts). */
  tls?: { cert: string; key: string; ca?: string; requireClientCert?: boolean };
  /** Require HTTP basic auth with these, or a bearer token (401 with a Basic challenge otherwise). */
  auth?: { username: string; password: string } | { bearer: string };
  /** Answer a request without the credential 404 instead of 401, as servers that never challenge do. */
  noChallenge?: boolean;
  /**
   * Answer 302 to every request (after the auth check) whose path starts with a `prefix`, sending
   * it to `to` (a path on this server, or a URL of another) followed by the rest of the path and
   * query; the first rule that matches wins.
   */
  redirects?: Array<{ prefix: string; to: string }>;
  /** Requests whose path starts with `prefix` are logged, then wait until `open` resolves (a fetch held on cue). */
  gate?: { prefix: string; open: Promise<void> };
}

export async function startGitHttpServer(root: string, opts: GitHttpServerOptions = {}): Promise<GitHttpServer> {
  let count = 0;
  const log: string[] = [];
  const authorizations: Array<string | undefined> = [];
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    count++;
    log.push(`${req.method} ${req.url ?? '/'}`);
    if (log.length > 100_000) log.shift();
    authorizations.push(req.headers.authorization);
    if (authorizations.length > 100_000) authorizations.shift();
    if (opts.gate && (req.url ?? '/').startsWith(opts.gate.prefix)) {
      req.pause();
      void opts.gate.open.then(() => {
        req.resume();
        serve(req, res);
      });
      return;
    }
    serve(req, res);
  };
  const serve = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    if (opts.auth) {
      const given = req.headers.authorization ?? '';
      const want =
        'bearer' in opts.auth
          ? `Bearer ${opts.auth.bearer}`
          : `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64')}`;
      if (given !== want) {
        if (opts.noChallenge) res.writeHead(404).end('not found');
        else res.writeHead(401, { 'www-authenticate': 'Basic realm="impersync test"' }).end('unauthorized');
        return;
      }
    }
    const moved = opts.redirects?.find((r) => (req.url ?? '/').startsWith(r.prefix));
    if (moved) {
      res.writeHead(302, { location: `${moved.to}${(req.url ?? '/').slice(moved.prefix.length)}` }).end('moved');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const env: NodeJS.ProcessEnv = {
      ...GIT_ENV,
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      // Repositories a test hands to another uid (the Pod test) are still served.
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'safe.directory',
      GIT_CONFIG_VALUE_0: '*',
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
      REMOTE_USER: '',
      GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
      HTTP_CONTENT_ENCODING: String(req.headers['content-encoding'] ?? ''),
    };
    if (req.headers['content-length']) env.CONTENT_LENGTH = String(req.headers['content-length']);
    const cgi = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    req.pipe(cgi.stdin);
    cgi.stdin.on('error', () => {});
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const sep = findHeaderEnd(head);
      if (!sep) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, sep.at).toString('latin1').split(/\r?\n/)) {
        const colon = line.indexOf(':');
        if (colon < 0) continue;
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 500;
        else res.setHeader(name, value);
      }
      res.writeHead(status);
      res.write(head.subarray(sep.at + sep.length));
    });
    cgi.on('error', (err) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(`git http-backend failed: ${err.message}`);
    });
    cgi.on('close', () => {
      if (!headersDone && !res.headersSent) res.writeHead(502);
      res.end();
    });
  };
  const server = opts.tls
    ? https.createServer(
        {
          cert: opts.tls.cert,
          key: opts.tls.key,
          ...(opts.tls.ca ? { ca: opts.tls.ca } : {}),
          ...(opts.tls.requireClientCert ? { requestCert: true, rejectUnauthorized: true } : {}),
        },
        handler,
      )
    : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // The shared server must not keep a test process alive once its tests are done.
  if (opts.unref) server.unref();
  const { port } = server.address() as AddressInfo;
  const baseURL = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  return {
    baseURL,
    url: (name) => `${baseURL}/${name}`,
    requests: () => count,
    requestLog: () => [...log],
    authorizations: () => [...authorizations],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function findHeaderEnd(buf: Buffer): { at: number; length: number } | undefined {
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { at: crlf, length: 4 };
  if (lf >= 0) return { at: lf, length: 2 };
  return undefined;
}
