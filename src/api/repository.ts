// Argo CD's repository configuration, as its users write it (util/db/repository_secrets.go): Secrets
// in the control namespace labelled `argocd.argoproj.io/secret-type: repository` (one repository)
// or `repo-creds` (a credential template for every URL it prefixes), and the ConfigMaps
// `argocd-ssh-known-hosts-cm` (key `ssh_known_hosts`) and `argocd-tls-certs-cm` (a PEM bundle per
// server name). Read field by field as Argo CD reads them; fields impersync cannot honour are kept
// by name, so that the render that would need them is refused with a condition naming the field.
import { z } from 'zod';
import { DocumentError, parseObject } from './meta.ts';
import { SECRET_TYPE_LABEL, SecretSchema } from './cluster.ts';

export const REPOSITORY_SECRET_TYPES = ['repository', 'repo-creds'] as const;
export type RepositorySecretType = (typeof REPOSITORY_SECRET_TYPES)[number];
export const SSH_KNOWN_HOSTS_CM = 'argocd-ssh-known-hosts-cm';
export const TLS_CERTS_CM = 'argocd-tls-certs-cm';
export const SSH_KNOWN_HOSTS_KEY = 'ssh_known_hosts';

/** One repository Secret or credential template, its values decoded. */
export interface RepositoryConfig {
  secretType: RepositorySecretType;
  /** "namespace/name" of the Secret, for messages (never its values). */
  secret: string;
  url: string;
  /** git (default), helm or oci. */
  type: string;
  name: string;
  /** Project-scoped repository: only that project's Applications use it (repository Secrets only). */
  project: string;
  username: string;
  password: string;
  bearerToken: string;
  sshPrivateKey: string;
  tlsClientCertData: string;
  tlsClientCertKey: string;
  insecure: boolean;
  insecureIgnoreHostKey: boolean;
  enableOCI: boolean;
  insecureOCIForceHttp: boolean;
  forceHttpBasicAuth: boolean;
  proxy: string;
  noProxy: string;
  /** The keys the Secret sets to something (for UnsupportedFieldWarning); a `depth` of 0, a full clone, is not. */
  keys: string[];
  /** Fields set that impersync cannot honour, each with what it is (refused when the repository is used). */
  unsupported: Array<{ field: string; what: string }>;
}

/** Fields Argo CD reads that impersync does not implement: using such a repository is refused, naming the field. */
const UNSUPPORTED: Record<string, string> = {
  githubAppPrivateKey: 'GitHub App credentials',
  githubAppID: 'GitHub App credentials',
  githubAppInstallationID: 'GitHub App credentials',
  githubAppEnterpriseBaseUrl: 'GitHub App credentials',
  gcpServiceAccountKey: 'Google Cloud workload identity credentials',
  useAzureWorkloadIdentity: 'Azure workload identity',
  azureServicePrincipalClientId: 'Azure service principal credentials',
  azureServicePrincipalClientID: 'Azure service principal credentials',
  azureServicePrincipalClientSecret: 'Azure service principal credentials',
  azureServicePrincipalTenantId: 'Azure service principal credentials',
  azureServicePrincipalTenantID: 'Azure service principal credentials',
  azureActiveDirectoryEndpoint: 'Azure service principal credentials',
  enableLfs: 'Git LFS',
  // Argo CD fetches `--depth N` when N > 0; impersync keeps one full clone per repository for
  // every Application and revision, so a shallow one is refused rather than fetched differently.
  depth: 'shallow clones',
};

export function repositorySecretType(raw: unknown): RepositorySecretType | undefined {
  const labels = (raw as { metadata?: { labels?: Record<string, unknown> } } | null)?.metadata?.labels;
  const t = labels?.[SECRET_TYPE_LABEL];
  return REPOSITORY_SECRET_TYPES.find((x) => x === t);
}

/** Go's strconv.ParseBool, which Argo CD's boolOrFalse uses: anything else is an error naming the field. */
function parseBool(ref: string, field: string, value: string | undefined): boolean {
  if (value === undefined || value === '') return false;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw new DocumentError(
    'Secret',
    ref,
    `data.${field}`,
    `strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`,
  );
}

/** The string fields a credential template gives a repository that has none, and a request carries when set. */
export const CREDENTIAL_FIELDS = [
  'username',
  'password',
  'bearerToken',
  'sshPrivateKey',
  'tlsClientCertData',
  'tlsClientCertKey',
  'proxy',
  'noProxy',
] as const;

/** The Secret's values a render request carries (RepositoryAccessSchema), each within that schema's length. */
const CARRIED = ['url', ...CREDENTIAL_FIELDS] as const;

function maxLength(field: (typeof CARRIED)[number]): number {
  const schema = RepositoryAccessSchema.shape[field];
  return (schema instanceof z.ZodOptional ? schema.unwrap() : schema).maxLength ?? Infinity;
}

/**
 * A repository Secret or credential template that does not parse, with what can still be read of
 * it: which URL (and project) it is for, so that a repository it would have served is refused
 * naming it (repository/unreadable.ts) rather than fetched without what it meant to give.
 */
export class RepositorySecretError extends DocumentError {
  readonly secretType: RepositorySecretType;
  /** Its `url` as written ('' when missing). */
  readonly url: string;
  readonly project: string;
  constructor(err: DocumentError, raw: unknown) {
    super(err.kind, err.objectName, err.path, err.reason);
    this.name = 'RepositorySecretError';
    this.secretType = repositorySecretType(raw) ?? 'repository';
    const field = (k: string): string => {
      const r = raw as { data?: unknown; stringData?: unknown } | null;
      const plain = (r?.stringData as Record<string, unknown> | undefined)?.[k];
      if (typeof plain === 'string') return plain;
      const encoded = (r?.data as Record<string, unknown> | undefined)?.[k];
      return typeof encoded === 'string' ? Buffer.from(encoded, 'base64').toString('utf8') : '';
    };
    this.url = field('url');
    this.project = this.secretType === 'repository' ? field('project') : '';
  }
}

/**
 * Reads a repository or repo-creds Secret (`data` base64 as the API server returns it, `stringData`
 * wins). Throws a RepositorySecretError naming the Secret and field.
 */
export function parseRepositorySecret(raw: unknown): RepositoryConfig {
  try {
    return readRepositorySecret(raw);
  } catch (err) {
    throw err instanceof DocumentError ? new RepositorySecretError(err, raw) : err;
  }
}

function readRepositorySecret(raw: unknown): RepositoryConfig {
  const secret = parseObject('Secret', SecretSchema, raw);
  const ref = `${secret.metadata.namespace ?? ''}/${secret.metadata.name}`;
  const secretType = repositorySecretType(raw) ?? 'repository';
  const f: Record<string, string> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) f[k] = Buffer.from(v, 'base64').toString('utf8');
  Object.assign(f, secret.stringData ?? {});
  const s = (k: string): string => f[k] ?? '';
  const b = (k: string): boolean => parseBool(ref, k, f[k]);
  const unsupported = Object.entries(UNSUPPORTED)
    .filter(([k]) => s(k) !== '' && s(k) !== 'false' && s(k) !== '0')
    .map(([field, what]) => ({ field, what }));
  if (s('url') === '')
    throw new DocumentError('Secret', ref, 'data.url', 'a repository Secret needs the repository URL');
  // Refused here, naming the field, rather than by the renderer as a request it cannot read (which
  // the controller takes for a renderer that is unavailable, and waits for).
  for (const k of CARRIED) {
    const max = maxLength(k);
    if (s(k).length > max)
      throw new DocumentError(
        'Secret',
        ref,
        `data.${k}`,
        `longer than ${max} characters, more than a render request carries`,
      );
  }
  return {
    secretType,
    secret: ref,
    url: s('url'),
    type: s('type'),
    name: s('name'),
    // Credential templates have no project in Argo CD: they apply to every project.
    project: secretType === 'repository' ? s('project') : '',
    username: s('username'),
    password: s('password'),
    bearerToken: s('bearerToken'),
    sshPrivateKey: s('sshPrivateKey'),
    tlsClientCertData: s('tlsClientCertData'),
    tlsClientCertKey: s('tlsClientCertKey'),
    insecure: b('insecure'),
    insecureIgnoreHostKey: b('insecureIgnoreHostKey'),
    enableOCI: b('enableOCI'),
    insecureOCIForceHttp: b('insecureOCIForceHttp'),
    forceHttpBasicAuth: b('forceHttpBasicAuth'),
    proxy: s('proxy'),
    noProxy: s('noProxy'),
    keys: Object.keys(f).filter((k) => f[k] !== '' && !(k === 'depth' && f[k] === '0')),
    unsupported,
  };
}

/**
 * What the renderer is given for one repository in one render request (renderer/protocol.ts): the
 * credentials of the repository Secret or template that matched, and the host's entries of the two
 * ConfigMaps. Never stored by the renderer beyond the request (its caches are keyed by a digest).
 */
export const RepositoryAccessSchema = z.strictObject({
  /** The repository URL this was resolved for (a source's repoURL, a dependency's repository). */
  url: z.string().max(4096),
  type: z.enum(['git', 'helm', 'oci']).optional(),
  username: z.string().max(4096).optional(),
  password: z.string().max(65_536).optional(),
  bearerToken: z.string().max(65_536).optional(),
  sshPrivateKey: z.string().max(65_536).optional(),
  tlsClientCertData: z.string().max(65_536).optional(),
  tlsClientCertKey: z.string().max(65_536).optional(),
  /** Skip TLS verification (git: `insecure` or `insecureIgnoreHostKey`, as Argo CD's IsInsecure). */
  insecure: z.boolean().optional(),
  /** Skip SSH host key checking (Argo CD: `insecure` or `insecureIgnoreHostKey` on an SSH repository). */
  insecureIgnoreHostKey: z.boolean().optional(),
  forceHttpBasicAuth: z.boolean().optional(),
  enableOCI: z.boolean().optional(),
  insecureOCIForceHttp: z.boolean().optional(),
  proxy: z.string().max(4096).optional(),
  noProxy: z.string().max(4096).optional(),
  /** PEM certificates argocd-tls-certs-cm holds for this server name: they replace the system's. */
  caCerts: z
    .string()
    .max(1024 * 1024)
    .optional(),
  /** The known_hosts lines of argocd-ssh-known-hosts-cm that may match this host. */
  knownHosts: z
    .string()
    .max(1024 * 1024)
    .optional(),
});
export type RepositoryAccess = z.infer<typeof RepositoryAccessSchema>;
