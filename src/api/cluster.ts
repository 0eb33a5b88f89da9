// Cluster Secrets (spec §6): Secrets labelled argocd.argoproj.io/secret-type=cluster whose data
// holds `name`, `server` and `config` (JSON). Parsed into a Cluster; a bad Secret is a DocumentError.
import { z } from 'zod';
import { DocumentError, ObjectMetaSchema, parseObject, formatPath } from './meta.ts';

export const SECRET_TYPE_LABEL = 'argocd.argoproj.io/secret-type';
export const IN_CLUSTER_SERVER = 'https://kubernetes.default.svc';
export const IN_CLUSTER_NAME = 'in-cluster';
/** argocd-cm: "false" turns the in-cluster destination off (impersonation/destination.ts). */
export const IN_CLUSTER_ENABLED_KEY = 'cluster.inClusterEnabled';

/** Argo CD's IsInClusterEnabled: on unless argocd-cm says exactly "false" (an unreadable argocd-cm: on). */
export function isInClusterEnabled(
  argocdCm: { data?: Record<string, string> | undefined } | undefined | Error,
): boolean {
  return argocdCm instanceof Error || argocdCm?.data?.[IN_CLUSTER_ENABLED_KEY] !== 'false';
}

export const SecretSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.literal('Secret').optional(),
  metadata: ObjectMetaSchema,
  data: z.record(z.string(), z.string()).optional(),
  stringData: z.record(z.string(), z.string()).optional(),
  type: z.string().optional(),
});
export type Secret = z.infer<typeof SecretSchema>;

export const ClusterConfigSchema = z.looseObject({
  bearerToken: z.string().optional(),
  username: z.string().optional(),
  password: z.string().optional(),
  tlsClientConfig: z
    .looseObject({
      insecure: z.boolean().optional(),
      caData: z.string().optional(),
      certData: z.string().optional(),
      keyData: z.string().optional(),
      serverName: z.string().optional(),
    })
    .optional(),
  // A client-go exec credential plugin (Argo CD's ExecProviderConfig; kube/exec-credential.ts).
  execProviderConfig: z
    .looseObject({
      command: z.string().optional(),
      args: z.array(z.string()).optional(),
      env: z.record(z.string(), z.string()).optional(),
      apiVersion: z.string().optional(),
      installHint: z.string().optional(),
      provideClusterInfo: z.boolean().optional(),
      config: z.unknown().optional(),
    })
    .optional(),
  // EKS: Argo CD runs `argocd-k8s-auth aws --cluster-name ...` as an exec plugin (kube/credentials.ts).
  awsAuthConfig: z
    .looseObject({
      clusterName: z.string().optional(),
      roleARN: z.string().optional(),
      profile: z.string().optional(),
    })
    .optional(),
});
export type ClusterConfig = z.infer<typeof ClusterConfigSchema>;

export interface Cluster {
  name: string;
  server: string;
  config: ClusterConfig;
  /** The Secret it came from ("ns/name"); empty for the built-in in-cluster destination. */
  secret: string;
  /** The keys its Secret sets (data and stringData), for what impersync does not act on. */
  keys?: string[];
  /**
   * `namespaces` (comma-separated, blanks dropped): a namespace-scoped cluster, where only these
   * namespaces are managed (project/clusters.ts). Absent or empty: the whole cluster.
   */
  namespaces?: string[];
  /** `clusterResources: "true"`: a namespace-scoped cluster's cluster-scoped objects are managed too. */
  clusterResources?: boolean;
  /** `project`: a project-scoped cluster, an implicit destination of that AppProject (project/clusters.ts). */
  project?: string;
}

/** The destination the controller runs in: it needs no Secret (spec §6). */
export const IN_CLUSTER: Cluster = { name: IN_CLUSTER_NAME, server: IN_CLUSTER_SERVER, config: {}, secret: '' };

export function isClusterSecret(raw: unknown): boolean {
  const labels = (raw as { metadata?: { labels?: Record<string, unknown> } } | null)?.metadata?.labels;
  return (raw as { kind?: unknown } | null)?.kind === 'Secret' && labels?.[SECRET_TYPE_LABEL] === 'cluster';
}

/** Reads a cluster Secret: `data` is base64 (as the API server returns it), `stringData` wins. */
export function parseClusterSecret(raw: unknown): Cluster {
  const secret = parseObject('Secret', SecretSchema, raw);
  const ref = secret.metadata.namespace ? `${secret.metadata.namespace}/${secret.metadata.name}` : secret.metadata.name;
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) fields[k] = Buffer.from(v, 'base64').toString('utf8');
  Object.assign(fields, secret.stringData ?? {});
  const where = (k: string) => (secret.stringData?.[k] !== undefined ? `stringData.${k}` : `data.${k}`);
  const server = fields['server'];
  if (!server) throw new DocumentError('Secret', ref, where('server'), 'a cluster Secret needs the server URL');
  let config: ClusterConfig = {};
  if (fields['config'] !== undefined && fields['config'].trim() !== '') {
    let json: unknown;
    try {
      json = JSON.parse(fields['config']);
    } catch (err) {
      // Only where: V8's message quotes the text around the error, and this text holds the credentials.
      const at = /at position \d+(?: \(line \d+ column \d+\))?/.exec((err as Error).message)?.[0];
      throw new DocumentError('Secret', ref, where('config'), `not valid JSON${at ? ` (${at})` : ''}`);
    }
    const parsed = ClusterConfigSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new DocumentError(
        'Secret',
        ref,
        `${where('config')}${issue ? '.' + formatPath(issue.path) : ''}`,
        issue?.message ?? 'invalid',
      );
    }
    config = parsed.data;
  }
  // Argo CD's SecretToCluster: `namespaces` split at commas and trimmed, `clusterResources` exactly "true".
  const namespaces = (fields['namespaces'] ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  return {
    name: fields['name'] ?? server,
    server,
    config,
    secret: ref,
    keys: Object.keys(fields),
    ...(namespaces.length > 0 ? { namespaces } : {}),
    ...(fields['clusterResources'] === 'true' ? { clusterResources: true } : {}),
    ...(fields['project'] ? { project: fields['project'] } : {}),
  };
}

/**
 * The cluster Secret's config fields that change how the cluster is reached and impersync does not
 * implement, each as `<Secret>: config.<field> ...`. Argo CD sends every request through
 * `proxyUrl` (http, https or socks5; pkg/apis/application/v1alpha1 types.go RESTConfig); reaching
 * the API server directly instead could cross a network the admin meant to avoid, so such a
 * cluster is not reached at all. Admission refuses the Application with it (controller/admission.ts),
 * and kube/credentials.ts credentialForCluster refuses to build a credential, so no path connects without it.
 */
export function refusedClusterConfig(cluster: Cluster): string[] {
  const proxy = (cluster.config as { proxyUrl?: unknown }).proxyUrl;
  if (proxy === undefined || proxy === null || proxy === '') return [];
  return [
    `cluster Secret ${cluster.secret || cluster.name}: config.proxyUrl is not supported by impersync (Argo CD reaches the cluster through that proxy; impersync would connect directly), so the cluster is not reached; nothing is read or applied`,
  ];
}
