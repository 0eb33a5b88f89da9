// Credentials the controller holds: its own (kubeconfig file, current context, or in-cluster) and
// those of remote clusters (cluster Secrets, spec §6). Only kube/factory.ts and kube/transport.ts
// use them; sync/ and source/ never see one (ARCHITECTURE.md, the identity rule).
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Cluster } from '../api/index.ts';
import { IN_CLUSTER_SERVER, refusedClusterConfig } from '../api/index.ts';
import { ExecCredentialSource } from './exec-credential.ts';
import type { ExecConfig } from './exec-credential.ts';
import { Kubeconfig } from './kubeconfig.ts';
import type { KubeConfigLike, KubeconfigCluster, KubeconfigUser, TokenFileAuthProvider } from './kubeconfig.ts';

/** How to reach and authenticate to one API server. PEM strings, not base64. */
export interface Credential {
  /** The URL requests go to (for the in-cluster destination, the controller's real server URL). */
  server: string;
  bearerToken?: string;
  basic?: { username: string; password: string };
  ca?: string;
  cert?: string;
  key?: string;
  insecure?: boolean;
  serverName?: string;
  /**
   * A fresh `Authorization` header value per request, for credentials that rotate (token files,
   * exec plugins, auth providers). Wins over bearerToken/basic when it returns a value.
   */
  authorization?: () => Promise<string | undefined>;
  /** A credential plugin's token or client certificate, per request (kube/exec-credential.ts); wins over the rest. */
  exec?: ExecCredentialSource;
}

export class CredentialError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialError';
  }
}

export interface KubeConfigSource {
  /** A kubeconfig file; absent means the usual rules (KUBECONFIG, ~/.kube/config, in-cluster). */
  kubeconfig?: string | undefined;
  /** A context other than the file's current one. */
  context?: string | undefined;
}

/**
 * Loads a kubeconfig from a file or the default rules, on the chosen context, as client-node's
 * KubeConfig would (kube/kubeconfig.ts), without loading client-node.
 */
export function loadKubeConfig(source: KubeConfigSource = {}): Kubeconfig {
  const kc = new Kubeconfig();
  try {
    if (source.kubeconfig) kc.loadFromFile(source.kubeconfig);
    else kc.loadFromDefault();
  } catch (err) {
    throw new CredentialError(
      `cannot load kubeconfig${source.kubeconfig ? ` ${source.kubeconfig}` : ''}: ${(err as Error).message}`,
    );
  }
  if (source.context) {
    if (!kc.getContextObject(source.context))
      throw new CredentialError(`kubeconfig has no context '${source.context}'`);
    kc.setCurrentContext(source.context);
  }
  return kc;
}

// How long a header from an exec plugin, auth provider or token file is reused before it is asked for again.
const AUTH_REFRESH_MS = 30_000;

/**
 * client-node's in-cluster token provider (its FileAuth), the one auth provider read here; the
 * others, and exec plugins, are client-node's (the order of its authenticators: azure, gcp, exec,
 * then a provider with a tokenFile).
 */
function tokenFileProvider(user: KubeconfigUser): string | undefined {
  const p = user.authProvider as Partial<TokenFileAuthProvider> | null | undefined;
  if (!p || p.name === 'azure' || p.name === 'gcp' || p.name === 'exec') return undefined;
  const config = p.config as Record<string, unknown> | undefined;
  if (!config || config['exec'] || !config['tokenFile']) return undefined;
  return String(config['tokenFile']);
}

/** Whether the user's credential needs client-node (an exec plugin, an auth provider other than a token file). */
export function needsClientNode(user: KubeconfigUser | null): boolean {
  return Boolean(user && (user.exec || (user.authProvider && tokenFileProvider(user) === undefined)));
}

/**
 * The credential of the kubeconfig's current context. Tokens, token files, client certificates,
 * CAs and basic auth are read here; an exec plugin or auth provider goes through client-node,
 * imported only then.
 */
export async function credentialFromKubeConfig(kc: KubeConfigLike): Promise<Credential> {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster) throw new CredentialError(`kubeconfig context '${kc.getCurrentContext()}' names no cluster`);
  if (needsClientNode(user)) return credentialThroughClientNode(await asClientNode(kc));
  return ownCredential(kc, cluster, user);
}

function fileOrBase64(file: string | null | undefined, data: string | null | undefined): string | undefined {
  if (file) return readFileSync(file).toString();
  if (data) return Buffer.from(data, 'base64').toString();
  return undefined;
}

function ownCredential(kc: KubeConfigLike, cluster: KubeconfigCluster, user: KubeconfigUser | null): Credential {
  const cred: Credential = { server: cluster.server.replace(/\/+$/, '') };
  // The token file to read again: the user's own (set only when no inline token is given), else
  // client-node's in-cluster provider, unless an inline token wins as it does in client-node.
  const tokenFile = user ? (user.tokenFile ?? (user.token ? undefined : tokenFileProvider(user))) : undefined;
  let first: string | undefined;
  try {
    // As client-node's applyToHTTPSOptions: no user, no TLS files read; then the token; then the
    // protocol check of its agent.
    if (user) {
      const ca = fileOrBase64(cluster.caFile, cluster.caData);
      const cert = fileOrBase64(user.certFile, user.certData);
      const key = fileOrBase64(user.keyFile, user.keyData);
      if (ca !== undefined) cred.ca = ca;
      if (cert !== undefined) cred.cert = cert;
      if (key !== undefined) cred.key = key;
      if (tokenFile) first = readFileSync(tokenFile).toString('utf-8');
    }
    if (cluster.proxyUrl) {
      if (!cluster.proxyUrl.startsWith('socks') && !cluster.server.startsWith('http'))
        throw new Error('Unsupported proxy type');
    } else if (cluster.server.startsWith('http:') && !cluster.skipTLSVerify) {
      throw new Error('HTTP protocol is not allowed when skipTLSVerify is not set or false');
    }
  } catch (err) {
    throw new CredentialError(
      `cannot read the credentials of kubeconfig context '${kc.getCurrentContext()}': ${(err as Error).message}`,
    );
  }
  if (cluster.skipTLSVerify) cred.insecure = true;
  if (cluster.tlsServerName) cred.serverName = cluster.tlsServerName;
  if (user?.username) cred.basic = { username: user.username, password: user.password ?? '' };
  if (tokenFile) {
    // Read again every AUTH_REFRESH_MS, as client-go reads a token file (a projected
    // ServiceAccount token rotates); a failed read fails the request and is tried again on the next.
    let cached = { value: bearer(first), at: Date.now() };
    cred.authorization = async () => {
      if (Date.now() - cached.at < AUTH_REFRESH_MS) return cached.value;
      cached = { value: bearer(await readFile(tokenFile, 'utf-8')), at: Date.now() };
      return cached.value;
    };
  } else if (user?.token) {
    cred.bearerToken = String(user.token);
  }
  return cred;
}

function bearer(token: string | undefined): string | undefined {
  const t = token?.trim();
  return t ? `Bearer ${t}` : undefined;
}

/** A client-node KubeConfig of the same clusters, users and contexts (client-node imported now). */
async function asClientNode(kc: KubeConfigLike): Promise<KubeConfig> {
  if ('applyToHTTPSOptions' in kc) return kc as unknown as KubeConfig;
  const { KubeConfig } = await import('@kubernetes/client-node');
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [...kc.getClusters()],
    users: [...kc.getUsers()],
    contexts: [...kc.getContexts()],
    currentContext: kc.getCurrentContext(),
  } as Parameters<KubeConfig['loadFromOptions']>[0]);
  return out;
}

/** The credential as client-node's applyToHTTPSOptions gives it, asked again for rotating ones. */
export async function credentialThroughClientNode(kc: KubeConfig): Promise<Credential> {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster) throw new CredentialError(`kubeconfig context '${kc.getCurrentContext()}' names no cluster`);
  const opts: {
    headers?: Record<string, string>;
    ca?: unknown;
    cert?: unknown;
    key?: unknown;
    rejectUnauthorized?: boolean;
    servername?: string;
    auth?: string;
  } = {};
  try {
    await kc.applyToHTTPSOptions(opts);
  } catch (err) {
    throw new CredentialError(
      `cannot read the credentials of kubeconfig context '${kc.getCurrentContext()}': ${(err as Error).message}`,
    );
  }
  const cred: Credential = { server: cluster.server.replace(/\/+$/, '') };
  if (opts.ca) cred.ca = String(opts.ca);
  if (opts.cert) cred.cert = String(opts.cert);
  if (opts.key) cred.key = String(opts.key);
  if (cluster.skipTLSVerify) cred.insecure = true;
  if (cluster.tlsServerName) cred.serverName = cluster.tlsServerName;
  if (user?.username) cred.basic = { username: user.username, password: user.password ?? '' };
  const rotating = Boolean(user && (user.exec || user.authProvider));
  if (rotating) {
    let cached: { value: string | undefined; at: number } | undefined;
    cred.authorization = async () => {
      if (cached && Date.now() - cached.at < AUTH_REFRESH_MS) return cached.value;
      const fresh: { headers?: Record<string, string> } = {};
      await kc.applyToHTTPSOptions(fresh);
      cached = { value: fresh.headers?.['Authorization'], at: Date.now() };
      return cached.value;
    };
  } else {
    const header = opts.headers?.['Authorization'];
    if (header?.startsWith('Bearer ')) cred.bearerToken = header.slice('Bearer '.length);
  }
  return cred;
}

/** The controller's own credential: a kubeconfig file or the default rules. */
export async function loadControllerCredential(source: KubeConfigSource = {}): Promise<Credential> {
  return credentialFromKubeConfig(loadKubeConfig(source));
}

function pemFromBase64(data: string | undefined, field: string, cluster: Cluster): string | undefined {
  if (data === undefined || data === '') return undefined;
  const text = Buffer.from(data, 'base64').toString('utf8');
  if (!text.includes('-----BEGIN')) {
    throw new CredentialError(
      `cluster Secret ${cluster.secret || cluster.name}: config.tlsClientConfig.${field} is not base64-encoded PEM`,
    );
  }
  return text;
}

/** The install hint of awsAuthConfig's plugin (Argo CD gives none: its image ships the binary). */
const AWS_INSTALL_HINT =
  "awsAuthConfig is Argo CD's `argocd-k8s-auth aws` credential plugin: put argocd-k8s-auth (from the Argo CD image) on the controller's PATH";

/**
 * The exec plugin a cluster Secret configures, as Argo CD's Cluster.RawRestConfig builds it:
 * awsAuthConfig first (`argocd-k8s-auth aws --cluster-name N [--role-arn R] [--profile P]`, v1beta1),
 * else execProviderConfig; none when the config has a client certificate and key, which client-go
 * prefers to a plugin (UpdateTransportConfig's HasCertAuth).
 */
export function execConfigForCluster(cluster: Cluster): ExecConfig | undefined {
  const cfg = cluster.config;
  const tls = cfg.tlsClientConfig ?? {};
  if (tls.certData && tls.keyData) return undefined;
  const info = cfg.execProviderConfig?.provideClusterInfo
    ? {
        cluster: {
          server: cluster.server,
          ...(tls.serverName ? { 'tls-server-name': tls.serverName } : {}),
          ...(tls.insecure ? { 'insecure-skip-tls-verify': true } : {}),
          ...(tls.caData ? { 'certificate-authority-data': tls.caData } : {}),
          ...(cfg.execProviderConfig.config !== undefined ? { config: cfg.execProviderConfig.config } : {}),
        },
      }
    : {};
  const aws = cfg.awsAuthConfig;
  if (aws) {
    const args = ['aws', '--cluster-name', aws.clusterName ?? ''];
    if (aws.roleARN) args.push('--role-arn', aws.roleARN);
    if (aws.profile) args.push('--profile', aws.profile);
    return {
      command: 'argocd-k8s-auth',
      args,
      env: {},
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      installHint: AWS_INSTALL_HINT,
    };
  }
  const exec = cfg.execProviderConfig;
  if (!exec) return undefined;
  return {
    command: exec.command ?? '',
    args: exec.args ?? [],
    env: exec.env ?? {},
    apiVersion: exec.apiVersion ?? '',
    installHint: exec.installHint,
    ...info,
  };
}

export interface ClusterCredentialOptions {
  /** How long one run of a credential plugin may take (kube/exec-credential.ts EXEC_TIMEOUT_MS). */
  execTimeoutMs?: number | undefined;
}

/**
 * The credential for a destination (spec §6): the controller's own for the in-cluster destination
 * without a Secret, else the Secret's config (an exec plugin, bearer token, basic auth, client
 * certificate, CA). The plugin authenticates the controller; impersonation still applies on top.
 */
export function credentialForCluster(
  cluster: Cluster,
  controller: Credential,
  opts: ClusterCredentialOptions = {},
): Credential {
  const cfg = cluster.config;
  const refused = refusedClusterConfig(cluster);
  if (refused.length > 0) throw new CredentialError(refused.join('; '));
  // Argo CD reaches https://kubernetes.default.svc with the in-cluster config, never a plugin.
  const exec = cluster.server === IN_CLUSTER_SERVER ? undefined : execConfigForCluster(cluster);
  const hasOwn = Boolean(cfg.bearerToken || cfg.username || cfg.tlsClientConfig?.certData || exec);
  if (cluster.server === IN_CLUSTER_SERVER && !hasOwn) return controller;
  const cred: Credential = { server: cluster.server.replace(/\/+$/, '') };
  if (cfg.bearerToken) cred.bearerToken = cfg.bearerToken;
  if (cfg.username) cred.basic = { username: cfg.username, password: cfg.password ?? '' };
  const tls = cfg.tlsClientConfig ?? {};
  const ca = pemFromBase64(tls.caData, 'caData', cluster);
  const cert = pemFromBase64(tls.certData, 'certData', cluster);
  const key = pemFromBase64(tls.keyData, 'keyData', cluster);
  if (ca) cred.ca = ca;
  if (cert) cred.cert = cert;
  if (key) cred.key = key;
  if (tls.insecure) cred.insecure = true;
  if (tls.serverName) cred.serverName = tls.serverName;
  if (exec) {
    // Argo CD's exec and AWS configs carry no bearer token or basic auth: the plugin's answer is the credential.
    delete cred.bearerToken;
    delete cred.basic;
    cred.exec = new ExecCredentialSource(exec, { timeoutMs: opts.execTimeoutMs });
  }
  return cred;
}
