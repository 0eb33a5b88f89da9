// The controller's own kubeconfig, read without @kubernetes/client-node: importing that package
// loads every generated API model (about 85 MiB of RSS), and the controller only needs the
// credential of one context. What is read, and how, follows client-node 2.0.1's KubeConfig
// (loadFromFile, loadFromDefault, loadFromCluster, mergeConfig), so that the same files give the
// same clusters, users and contexts, with the same errors; kube/credentials.ts turns the current
// context into a Credential, and hands users with an exec plugin or an auth provider to client-node.
//
// The objects have client-node's shapes (Cluster, User, Context): a client-node KubeConfig is a
// KubeConfigLike too, and one of ours can be given to client-node's loadFromOptions unchanged.
// Beyond client-node: a user's token file (client-node's `token-file`, client-go's `tokenFile`)
// is kept as a path, so that the credential reads it again as it rotates.
import { accessSync, readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';

export interface KubeconfigCluster {
  readonly name: string;
  readonly server: string;
  readonly caData?: string | null | undefined;
  caFile?: string | null | undefined;
  readonly skipTLSVerify: boolean;
  readonly tlsServerName?: string | null | undefined;
  readonly proxyUrl?: string | null | undefined;
}

/** client-node's in-cluster user: its token through the `tokenFile` auth provider. */
export interface TokenFileAuthProvider {
  name: string;
  config: { tokenFile: string };
}

export interface KubeconfigUser {
  readonly name: string;
  readonly token?: string | null | undefined;
  /** A file holding the bearer token, read again while the credential lives (not a client-node field). */
  readonly tokenFile?: string | null | undefined;
  readonly certData?: string | null | undefined;
  certFile?: string | null | undefined;
  readonly keyData?: string | null | undefined;
  keyFile?: string | null | undefined;
  readonly username?: string | null | undefined;
  readonly password?: string | null | undefined;
  readonly exec?: unknown;
  readonly authProvider?: unknown;
  readonly impersonateUser?: string | null | undefined;
}

export interface KubeconfigContext {
  readonly name: string;
  readonly cluster: string;
  readonly user?: string | undefined;
  readonly namespace?: string | undefined;
}

/** What kube/credentials.ts reads of a kubeconfig: ours, or a client-node KubeConfig. */
export interface KubeConfigLike {
  getClusters(): readonly KubeconfigCluster[];
  getUsers(): readonly KubeconfigUser[];
  getContexts(): readonly KubeconfigContext[];
  getCurrentContext(): string;
  getContextObject(name: string): KubeconfigContext | null;
  getCurrentCluster(): KubeconfigCluster | null;
  getCurrentUser(): KubeconfigUser | null;
}

/** Where the default rules look; the process's own when not given (tests give temporary ones). */
export interface KubeconfigEnvironment {
  env?: NodeJS.ProcessEnv | undefined;
  /** The ServiceAccount's directory (token, ca.crt, namespace). */
  serviceAccountDir?: string | undefined;
}

export const SERVICEACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

function findNamed<T extends { name: string }>(list: readonly T[], name: string | undefined): T | null {
  return list.find((o) => o.name === name) ?? null;
}

export class Kubeconfig implements KubeConfigLike {
  clusters: KubeconfigCluster[] = [];
  users: KubeconfigUser[] = [];
  contexts: KubeconfigContext[] = [];
  // client-node keeps whatever `current-context` held (undefined when absent).
  currentContext: string = undefined as unknown as string;

  getClusters(): KubeconfigCluster[] {
    return this.clusters;
  }
  getUsers(): KubeconfigUser[] {
    return this.users;
  }
  getContexts(): KubeconfigContext[] {
    return this.contexts;
  }
  getCurrentContext(): string {
    return this.currentContext;
  }
  setCurrentContext(name: string): void {
    this.currentContext = name;
  }
  getContextObject(name: string): KubeconfigContext | null {
    return findNamed(this.contexts, name);
  }
  getCluster(name: string): KubeconfigCluster | null {
    return findNamed(this.clusters, name);
  }
  getUser(name: string): KubeconfigUser | null {
    return findNamed(this.users, name);
  }
  getCurrentCluster(): KubeconfigCluster | null {
    const ctx = this.getContextObject(this.currentContext);
    return ctx ? findNamed(this.clusters, ctx.cluster) : null;
  }
  getCurrentUser(): KubeconfigUser | null {
    const ctx = this.getContextObject(this.currentContext);
    return ctx ? findNamed(this.users, ctx.user) : null;
  }

  /** One file; its relative certificate, key and token file paths taken from its directory. */
  loadFromFile(file: string): void {
    this.loadFromString(readFileSync(file).toString('utf-8'));
    this.makePathsAbsolute(dirname(file));
  }

  /** A kubeconfig's text (paths left as written). */
  loadFromString(text: string): void {
    const obj = parseKubeconfigYaml(text);
    if (obj === null || obj === undefined)
      throw new TypeError(`Cannot read properties of ${String(obj)} (reading 'clusters')`);
    const doc = obj as Record<string, unknown>;
    this.clusters = readClusters(doc['clusters']);
    this.contexts = readContexts(doc['contexts']);
    this.users = readUsers(doc['users']);
    this.currentContext = doc['current-context'] as string;
  }

  /** client-node's makePathsAbsolute: the CA, client certificate and key files (and, here, the token file). */
  makePathsAbsolute(root: string): void {
    for (const c of this.clusters) if (c.caFile) c.caFile = absolute(root, c.caFile);
    this.users = this.users.map((u) => {
      if (u.certFile) u.certFile = absolute(root, u.certFile);
      if (u.keyFile) u.keyFile = absolute(root, u.keyFile);
      return u.tokenFile ? { ...u, tokenFile: absolute(root, u.tokenFile) } : u;
    });
  }

  /** client-node's mergeConfig: names must not repeat; a later file's current-context wins. */
  mergeConfig(other: Kubeconfig, preserveContext = false): void {
    if (!preserveContext && other.currentContext) this.currentContext = other.currentContext;
    for (const c of other.clusters) {
      if (this.clusters.some((x) => x.name === c.name)) throw new Error(`Duplicate cluster: ${c.name}`);
      this.clusters.push(c);
    }
    for (const u of other.users) {
      if (this.users.some((x) => x.name === u.name)) throw new Error(`Duplicate user: ${u.name}`);
      this.users.push(u);
    }
    for (const c of other.contexts) {
      if (this.contexts.some((x) => x.name === c.name)) throw new Error(`Duplicate context: ${c.name}`);
      this.contexts.push(c);
    }
  }

  /** In a Pod: the ServiceAccount's token (read again as it rotates) and CA, the Service's address. */
  loadFromCluster(where: KubeconfigEnvironment = {}): void {
    const env = where.env ?? process.env;
    const dir = where.serviceAccountDir ?? SERVICEACCOUNT_DIR;
    const host = env['KUBERNETES_SERVICE_HOST'];
    const port = env['KUBERNETES_SERVICE_PORT'];
    const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
    const serverHost = host && isIPv6(host) ? `[${host}]` : host;
    this.clusters = [
      { name: 'inCluster', caFile: `${dir}/ca.crt`, server: `${scheme}://${serverHost}:${port}`, skipTLSVerify: false },
    ];
    const provider: TokenFileAuthProvider = { name: 'tokenFile', config: { tokenFile: `${dir}/token` } };
    this.users = [{ name: 'inClusterUser', authProvider: provider }];
    const nsFile = `${dir}/namespace`;
    const namespace = exists(nsFile) ? readFileSync(nsFile).toString('utf-8') : undefined;
    this.contexts = [{ cluster: 'inCluster', name: 'inClusterContext', user: 'inClusterUser', namespace }];
    this.currentContext = 'inClusterContext';
  }

  /**
   * client-node's loadFromDefault: every file of KUBECONFIG merged in order, else ~/.kube/config,
   * else in-cluster when the ServiceAccount's token is there, else http://localhost:8080 with no
   * user. (client-node's Windows lookups through WSL are not made.)
   */
  loadFromDefault(where: KubeconfigEnvironment = {}): void {
    const env = where.env ?? process.env;
    const list = env['KUBECONFIG'];
    if (list && list.length > 0) {
      const files = list.split(delimiter).filter((f) => f);
      this.loadFromFile(files[0] as string);
      for (const file of files.slice(1)) {
        const next = new Kubeconfig();
        next.loadFromFile(file);
        this.mergeConfig(next);
      }
      return;
    }
    const home = homeDir(env);
    if (home) {
      const file = join(home, '.kube', 'config');
      if (exists(file)) {
        this.loadFromFile(file);
        return;
      }
    }
    if (exists(`${where.serviceAccountDir ?? SERVICEACCOUNT_DIR}/token`)) {
      this.loadFromCluster(where);
      return;
    }
    this.clusters = [{ name: 'cluster', server: 'http://localhost:8080', skipTLSVerify: false }];
    this.users = [{ name: 'user' }];
    this.contexts = [{ name: 'loaded-context', cluster: 'cluster', user: 'user' }];
    this.currentContext = 'loaded-context';
  }
}

/**
 * A kubeconfig's YAML as client-node reads it (js-yaml 4's default schema: YAML 1.2's core types,
 * `true`/`false` only, merge keys): what kubectl reads as YAML 1.1 (`yes`, `on`) stays a string.
 */
export function parseKubeconfigYaml(text: string): unknown {
  return parse(text, { version: '1.2', merge: true, logLevel: 'error' }) as unknown;
}

function absolute(root: string, file: string): string {
  return !root || isAbsolute(file) ? file : join(root, file);
}

function exists(file: string): boolean {
  try {
    accessSync(file);
    return true;
  } catch {
    return false;
  }
}

/** client-node's findHomeDir off Windows: HOME when it exists; on Windows, HOME or USERPROFILE. */
function homeDir(env: NodeJS.ProcessEnv): string | null {
  const home = env['HOME'] || (process.platform === 'win32' ? env['USERPROFILE'] : undefined);
  return home && exists(home) ? home : null;
}

type Raw = Record<string, unknown> | null | undefined;

function readClusters(list: unknown): KubeconfigCluster[] {
  if (!Array.isArray(list)) return [];
  return list.map((elt: Raw, i) => {
    if (!elt?.['name']) throw new Error(`clusters[${i}].name is missing`);
    const c = elt['cluster'] as Raw;
    if (!c) throw new Error(`clusters[${i}].cluster is missing`);
    if (!c['server']) throw new Error(`clusters[${i}].cluster.server is missing`);
    return {
      caData: c['certificate-authority-data'] as string | undefined,
      caFile: c['certificate-authority'] as string | undefined,
      name: elt['name'] as string,
      server: String(c['server']).replace(/\/$/, ''),
      skipTLSVerify: c['insecure-skip-tls-verify'] === true,
      tlsServerName: c['tls-server-name'] as string | undefined,
      proxyUrl: c['proxy-url'] as string | undefined,
    };
  });
}

function readUsers(list: unknown): KubeconfigUser[] {
  if (!Array.isArray(list)) return [];
  return list.map((elt: Raw, i) => {
    if (!elt?.['name']) throw new Error(`users[${i}].name is missing`);
    const u = elt['user'] as Raw;
    const field = (key: string) => (u ? u[key] : null) as string | null | undefined;
    // client-node reads `token-file` once, here, from the working directory; the credential reads it again.
    let token = u?.['token'] ? (u['token'] as string) : undefined;
    let tokenFile: string | undefined;
    if (!token && u?.['token-file']) {
      token = readFileSync(u['token-file'] as string).toString();
      tokenFile = absolute(process.cwd(), u['token-file'] as string);
    } else if (!token && u?.['tokenFile']) {
      // client-go's spelling, which client-node does not read: read when the credential is made,
      // relative to the kubeconfig's directory as client-go resolves it (makePathsAbsolute).
      tokenFile = u['tokenFile'] as string;
    }
    return {
      authProvider: field('auth-provider'),
      certData: field('client-certificate-data'),
      certFile: field('client-certificate'),
      exec: u ? u['exec'] : null,
      keyData: field('client-key-data'),
      keyFile: field('client-key'),
      name: elt['name'] as string,
      token,
      ...(tokenFile ? { tokenFile } : {}),
      password: field('password'),
      username: field('username'),
      impersonateUser: field('as'),
    };
  });
}

function readContexts(list: unknown): KubeconfigContext[] {
  if (!Array.isArray(list)) return [];
  return list.map((elt: Raw, i) => {
    if (!elt?.['name']) throw new Error(`contexts[${i}].name is missing`);
    const c = elt['context'] as Raw;
    if (!c) throw new Error(`contexts[${i}].context is missing`);
    if (!c['cluster']) throw new Error(`contexts[${i}].context.cluster is missing`);
    return {
      cluster: c['cluster'] as string,
      name: elt['name'] as string,
      user: (c['user'] as string) || undefined,
      namespace: (c['namespace'] as string) || undefined,
    };
  });
}
