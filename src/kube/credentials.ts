// Credentials the controller holds: its own (kubeconfig file, current context, or in-cluster) and
// those of remote clusters (cluster Secrets, spec §6). Only kube/factory.ts and kube/transport.ts
// use them; sync/ and source/ never see one (ARCHITECTURE.md, the identity rule).
import { KubeConfig } from '@kubernetes/client-node';
import type { Cluster } from '../api/index.ts';
import { IN_CLUSTER_SERVER } from '../api/index.ts';

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

/** Loads a KubeConfig from a file or the default rules, on the chosen context. */
export function loadKubeConfig(source: KubeConfigSource = {}): KubeConfig {
  const kc = new KubeConfig();
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

// How long a header from an exec plugin or token file is reused before asking client-node again.
const AUTH_REFRESH_MS = 30_000;

/** The credential of the KubeConfig's current context. */
export async function credentialFromKubeConfig(kc: KubeConfig): Promise<Credential> {
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

/**
 * The credential for a destination (spec §6): the controller's own for the in-cluster destination
 * without a Secret, else the Secret's config (bearer token, basic auth, client certificate, CA).
 */
export function credentialForCluster(cluster: Cluster, controller: Credential): Credential {
  const cfg = cluster.config;
  const hasOwn = Boolean(cfg.bearerToken || cfg.username || cfg.tlsClientConfig?.certData);
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
  return cred;
}
