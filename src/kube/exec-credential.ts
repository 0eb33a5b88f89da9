// client-go credential plugins (a cluster Secret's execProviderConfig, and awsAuthConfig as Argo CD
// maps it: kube/credentials.ts), run by the controller as client-go runs them
// (k8s.io/client-go/plugin/pkg/client/auth/exec): the command with its args, no shell, the
// controller's environment plus the config's `env` and KUBERNETES_EXEC_INFO, no stdin
// (interactiveMode Never, as Argo CD sets it); stdout read as an ExecCredential of the configured
// apiVersion, whose token or client certificate is kept until its expirationTimestamp, and asked
// for again after a 401. Errors are client-go's words.
//
// Beyond client-go, which waits for a plugin forever and reads all it writes: a run is killed after
// EXEC_TIMEOUT_MS, stdout is read up to EXEC_STDOUT_MAX, and only a short excerpt of stderr is kept
// (conditions are tenant-visible; client-go copies stderr to the process's own).
import { spawn } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';

/**
 * 30 s: a cloud plugin (argocd-k8s-auth, gke-gcloud-auth-plugin, kubelogin) makes one or two HTTPS
 * calls to a token endpoint, seconds at worst; half the transport's 60 s answer timeout, so a
 * request that waits on a stuck plugin fails within what a slow API server would be given.
 */
export const EXEC_TIMEOUT_MS = 30_000;
/** An ExecCredential with a certificate chain is a few KiB. */
export const EXEC_STDOUT_MAX = 1024 * 1024;
/** The characters of stderr an error may quote. */
export const EXEC_STDERR_EXCERPT = 300;
/** A failed run is remembered this long, so that one refresh's requests do not run it again each. */
export const EXEC_FAILURE_HOLD_MS = 5_000;

const API_VERSIONS = new Set(['client.authentication.k8s.io/v1beta1', 'client.authentication.k8s.io/v1']);

// client-go's installHintVerboseHelp, printed after "not found".
const INSTALL_HINT_VERBOSE_HELP =
  '\n\nIt looks like you are trying to use a client-go credential plugin that is not installed.\n\n' +
  'To learn more about this feature, consult the documentation available at:\n' +
  '      https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins';

export interface ExecConfig {
  command: string;
  args: readonly string[];
  env: Readonly<Record<string, string>>;
  apiVersion: string;
  installHint?: string | undefined;
  /** Pass the cluster (server, CA, config) in KUBERNETES_EXEC_INFO. */
  cluster?: ExecClusterInfo | undefined;
}

/** client-go's clientauthentication Cluster, as KUBERNETES_EXEC_INFO carries it. */
export interface ExecClusterInfo {
  server: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'certificate-authority-data'?: string;
  config?: unknown;
}

/** What a plugin gave: a token, or a client certificate and key (PEM); expiry in ms, or none. */
export interface ExecCredentials {
  token?: string;
  cert?: string;
  key?: string;
  expiresAt?: number;
}

export class ExecCredentialError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExecCredentialError';
  }
}

function excerpt(text: string): string {
  // Control characters (a terminal escape, a newline that would start a fake log line) become spaces.
  const flat = [...text]
    .map((ch) => (ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f ? ' ' : ch))
    .join('')
    .replace(/ +/g, ' ')
    .trim();
  return flat.length > EXEC_STDERR_EXCERPT ? `${flat.slice(0, EXEC_STDERR_EXCERPT)}...` : flat;
}

/** KUBERNETES_EXEC_INFO: an ExecCredential with only its spec, in the configured version. */
export function execInfo(config: ExecConfig): string {
  return JSON.stringify({
    kind: 'ExecCredential',
    apiVersion: config.apiVersion,
    spec: { ...(config.cluster ? { cluster: config.cluster } : {}), interactive: false },
  });
}

/** client-go's checks of what a plugin printed (refreshCredsLocked). */
export function parseExecOutput(stdout: string, apiVersion: string): ExecCredentials {
  let cred: {
    apiVersion?: unknown;
    kind?: unknown;
    status?: {
      token?: unknown;
      clientCertificateData?: unknown;
      clientKeyData?: unknown;
      expirationTimestamp?: unknown;
    } | null;
  };
  try {
    cred = JSON.parse(stdout) as typeof cred;
    if (cred === null || typeof cred !== 'object' || Array.isArray(cred)) throw new Error('not an object');
  } catch (err) {
    throw new ExecCredentialError(`decoding stdout: ${(err as Error).message}`);
  }
  if (typeof cred.apiVersion !== 'string' || cred.apiVersion === '')
    throw new ExecCredentialError("decoding stdout: Object 'apiVersion' is missing");
  if (cred.kind !== 'ExecCredential')
    throw new ExecCredentialError(
      `decoding stdout: no kind "${String(cred.kind)}" is registered for version "${cred.apiVersion}"`,
    );
  if (cred.apiVersion !== apiVersion)
    throw new ExecCredentialError(
      `exec plugin is configured to use API version ${apiVersion}, plugin returned version ${cred.apiVersion}`,
    );
  const status = cred.status;
  if (!status) throw new ExecCredentialError("exec plugin didn't return a status field");
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const token = str(status.token);
  const cert = str(status.clientCertificateData);
  const key = str(status.clientKeyData);
  if (token === '' && cert === '' && key === '')
    throw new ExecCredentialError("exec plugin didn't return a token or cert/key pair");
  if ((cert === '') !== (key === ''))
    throw new ExecCredentialError('exec plugin returned only certificate or key, not both');
  const out: ExecCredentials = {};
  if (token !== '') out.token = token;
  if (cert !== '') {
    try {
      new X509Certificate(cert);
      createPrivateKey(key);
    } catch (err) {
      throw new ExecCredentialError(`failed parsing client key/certificate: ${(err as Error).message}`);
    }
    out.cert = cert;
    out.key = key;
  }
  const exp = str(status.expirationTimestamp);
  if (exp !== '') {
    const at = Date.parse(exp);
    if (Number.isNaN(at))
      throw new ExecCredentialError(`decoding stdout: expirationTimestamp ${JSON.stringify(exp)} is not a time`);
    out.expiresAt = at;
  }
  return out;
}

export interface RunOptions {
  timeoutMs?: number | undefined;
  /** The environment it starts from (default: the controller's, as client-go's os.Environ()). */
  environ?: NodeJS.ProcessEnv | undefined;
}

/** Runs the plugin once and reads its ExecCredential; every failure is an ExecCredentialError. */
export function runExecPlugin(config: ExecConfig, opts: RunOptions = {}): Promise<ExecCredentials> {
  if (!API_VERSIONS.has(config.apiVersion))
    return Promise.reject(new ExecCredentialError(`exec plugin: invalid apiVersion "${config.apiVersion}"`));
  const timeoutMs = opts.timeoutMs ?? EXEC_TIMEOUT_MS;
  const cmd = config.command;
  return new Promise<ExecCredentials>((resolve, reject) => {
    const child = spawn(cmd, [...config.args], {
      env: { ...(opts.environ ?? process.env), ...config.env, KUBERNETES_EXEC_INFO: execInfo(config) },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so that a timeout kills what it started too (a shell's sleep).
      detached: true,
      shell: false,
    });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    let failure: string | undefined;
    const kill = (why: string) => {
      failure ??= why;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(
      () => kill(`exec: executable ${cmd} did not finish within ${timeoutMs / 1000}s and was killed`),
      timeoutMs,
    );
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > EXEC_STDOUT_MAX)
        kill(`exec: executable ${cmd} wrote more than ${EXEC_STDOUT_MAX} bytes to stdout`);
      else stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < EXEC_STDERR_EXCERPT * 2) stderr += chunk.toString('utf8');
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (err.code === 'ENOENT' || err.code === 'EACCES') {
        const hint = config.installHint ? `\n\n${config.installHint}` : '';
        reject(new ExecCredentialError(`exec: executable ${cmd} not found${INSTALL_HINT_VERBOSE_HELP}${hint}`));
      } else reject(new ExecCredentialError(`exec: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const said = excerpt(stderr);
      const withStderr = (m: string) => (said ? `${m}; stderr: ${said}` : m);
      if (failure) return reject(new ExecCredentialError(withStderr(failure)));
      if (code !== 0)
        return reject(
          new ExecCredentialError(
            withStderr(`exec: executable ${cmd} failed with exit code ${code ?? `-1 (${signal})`}`),
          ),
        );
      try {
        resolve(parseExecOutput(Buffer.concat(stdout).toString('utf8'), config.apiVersion));
      } catch (err) {
        reject(err as Error);
      }
    });
  });
}

/**
 * One plugin's credentials for one cluster credential (client-go's Authenticator): one run at a
 * time, its result kept until it expires, or until a 401 answers a request made with it.
 */
export class ExecCredentialSource {
  readonly config: ExecConfig;
  readonly #opts: RunOptions;
  readonly #now: () => number;
  #cached: ExecCredentials | undefined;
  #failed: { error: Error; at: number } | undefined;
  #running: Promise<ExecCredentials> | undefined;
  /** Runs so far (for tests and metrics). */
  runs = 0;

  constructor(config: ExecConfig, opts: RunOptions & { now?: () => number } = {}) {
    this.config = config;
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** The credentials to send; throws the plugin's ExecCredentialError when it cannot give them. */
  async get(): Promise<ExecCredentials> {
    const now = this.#now();
    const c = this.#cached;
    if (c && (c.expiresAt === undefined || now <= c.expiresAt)) return c;
    if (this.#failed && now - this.#failed.at < EXEC_FAILURE_HOLD_MS) throw this.#failed.error;
    this.#running ??= this.#run();
    return this.#running;
  }

  async #run(): Promise<ExecCredentials> {
    this.runs++;
    try {
      const fresh = await runExecPlugin(this.config, this.#opts);
      this.#cached = fresh;
      this.#failed = undefined;
      return fresh;
    } catch (err) {
      this.#cached = undefined;
      this.#failed = { error: err as Error, at: this.#now() };
      throw err;
    } finally {
      this.#running = undefined;
    }
  }

  /** A 401 answered a request made with `used`: the next request runs the plugin again (client-go's maybeRefreshCreds). */
  unauthorized(used: ExecCredentials): void {
    if (this.#cached === used) this.#cached = undefined;
  }
}
