// Which credentials a repository URL gets, with Argo CD's rules (util/db/repository.go,
// repository_secrets.go), pure: the repository Secret whose URL is the same repository and whose
// `project` is the Application's project, else one with no project; when it holds no credentials,
// those of the credential template (`repo-creds`) that covers the URL most deeply. Both are
// matched by url.ts's rule (same scheme, host, port and user, a path at a `/` boundary), stricter
// than Argo CD's string prefix. The result is what one render request carries for that repository
// (api/repository.ts RepositoryAccess), with the host's known_hosts lines and CA certificates.
import { CREDENTIAL_FIELDS, type RepositoryAccess, type RepositoryConfig } from '../api/repository.ts';
import { normalizeGitURL, sourceRepoDecision } from '../project/repos.ts';
import { knownHostsFor } from './known-hosts.ts';
import { sameRepository, templateCoverage } from './url.ts';

export interface RepositoryState {
  configs: readonly RepositoryConfig[];
  /** Repository Secrets that do not parse (named in a refusal when nothing else matches). */
  errors: readonly string[];
  /** argocd-ssh-known-hosts-cm's ssh_known_hosts. */
  knownHosts: string;
  /** argocd-tls-certs-cm: server name → PEM bundle. */
  tlsCerts: Readonly<Record<string, string>>;
  /** argocd-gpg-keys-cm: key ID → ASCII-armoured public key (the keyring signatures are verified with). */
  gpgKeys?: Readonly<Record<string, string>> | undefined;
  /** false when ARGOCD_GPG_ENABLED turns signature verification off (Argo CD's IsGPGEnabled). */
  gpgEnabled?: boolean | undefined;
}

export const EMPTY_REPOSITORY_STATE: RepositoryState = { configs: [], errors: [], knownHosts: '', tlsCerts: {} };

/** Using this repository needs a field impersync does not implement: the message names the Secret and field. */
export class RepositoryRefused extends Error {
  override readonly name = 'RepositoryRefused';
}

/** Argo CD's git.SameURL. */
export function sameURL(a: string, b: string): boolean {
  const na = normalizeGitURL(a);
  const nb = normalizeGitURL(b);
  return na !== '' && nb !== '' && na === nb;
}

/** Argo CD's git.IsSSHURL: `ssh://...` or `user@host:path`. */
export function isSSHURL(url: string): boolean {
  return /^(ssh:\/\/)?([^/:]*?)@[^@]+$/.test(url);
}

/** Host and port of a repository URL (scp-like ssh included; no scheme: an OCI reference). */
export function hostOf(url: string): { host: string; port: number | undefined } | undefined {
  const u = url.trim();
  const scp = /^(?:[^@/:]+@)?(\[[^\]]+\]|[^/:]+):(?!\/\/)/.exec(u);
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(u) && scp && isSSHURL(u))
    return { host: stripBrackets(scp[1] as string), port: undefined };
  try {
    const parsed = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(u) ? u : `oci://${u}`);
    if (parsed.hostname === '') return undefined;
    return { host: stripBrackets(parsed.hostname), port: parsed.port === '' ? undefined : Number(parsed.port) };
  } catch {
    return undefined;
  }
}

function stripBrackets(h: string): string {
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

function hasCredentials(c: RepositoryConfig): boolean {
  return (
    c.username !== '' ||
    c.password !== '' ||
    c.bearerToken !== '' ||
    c.sshPrivateKey !== '' ||
    c.tlsClientCertData !== '' ||
    c.unsupported.some((u) => u.field === 'githubAppPrivateKey' || u.field === 'useAzureWorkloadIdentity')
  );
}

/** Argo CD's getRepositorySecret(url, project, allowFallback=true). */
export function repositorySecretFor(
  configs: readonly RepositoryConfig[],
  url: string,
  project: string,
): RepositoryConfig | undefined {
  let fallback: RepositoryConfig | undefined;
  for (const c of configs) {
    if (c.secretType !== 'repository' || !sameRepository(c.url, url)) continue;
    if (c.project === project) return c;
    if (c.project === '') fallback ??= c;
  }
  return fallback;
}

/**
 * Argo CD's getRepositoryCredentialIndex, with url.ts's rule for "covers": of the templates that
 * may go to `url`, the one whose path reaches deepest (the first of equals).
 */
export function credentialTemplateFor(
  configs: readonly RepositoryConfig[],
  url: string,
  types?: ReadonlySet<string>,
): RepositoryConfig | undefined {
  let best: RepositoryConfig | undefined;
  let max = -1;
  for (const c of configs) {
    if (c.secretType !== 'repo-creds' || (types && !types.has(c.type))) continue;
    const depth = templateCoverage(c.url, url);
    if (depth !== undefined && depth > max) {
      max = depth;
      best = c;
    }
  }
  return best;
}

/**
 * The template Argo CD's plain string prefix would give `url` when url.ts's rule gives it another
 * or none: named in the message of a failed fetch, so that a user whose templates relied on the
 * loose rule sees which one no longer applies.
 */
export function looseTemplateFor(configs: readonly RepositoryConfig[], url: string): RepositoryConfig | undefined {
  const repo = normalizeGitURL(url);
  let loose: RepositoryConfig | undefined;
  let max = 0;
  for (const c of configs) {
    if (c.secretType !== 'repo-creds') continue;
    const prefix = normalizeGitURL(c.url);
    if (prefix !== '' && repo.startsWith(prefix) && prefix.length > max) {
      max = prefix.length;
      loose = c;
    }
  }
  return loose && loose !== credentialTemplateFor(configs, url) ? loose : undefined;
}

/** The repository Secret and the credential template (when the Secret has no credentials) that `url` reads. */
export function repositorySecretsFor(
  configs: readonly RepositoryConfig[],
  url: string,
  project: string,
): { secret?: RepositoryConfig | undefined; template?: RepositoryConfig | undefined } {
  const secret = repositorySecretFor(configs, url, project);
  if (secret && hasCredentials(secret)) return { secret };
  return { secret, template: credentialTemplateFor(configs, url) };
}

/**
 * For the message of a failed fetch of `url`: the credential template Argo CD would have used and
 * impersync did not, with why, or undefined.
 */
export function templateNotUsedNote(
  configs: readonly RepositoryConfig[],
  url: string,
  project: string,
): string | undefined {
  const secret = repositorySecretFor(configs, url, project);
  if (secret && hasCredentials(secret)) return undefined;
  const loose = looseTemplateFor(configs, url);
  if (!loose) return undefined;
  return (
    `credential template ${loose.secret} was not used: Argo CD matches templates by string prefix, ` +
    `impersync sends a template's credentials only to its own scheme, host and port, under its path at a '/' boundary, ` +
    `and not to a URL naming another user`
  );
}

/** The repository as Argo CD's db.GetRepository builds it: the Secret's fields, credentials from a template if it has none. */
export function effectiveRepository(
  configs: readonly RepositoryConfig[],
  url: string,
  project: string,
): { repo: Partial<RepositoryConfig>; from: string[] } {
  const { secret, template: creds } = repositorySecretsFor(configs, url, project);
  const repo: Partial<RepositoryConfig> = secret ? { ...secret } : { url, unsupported: [] };
  const from = secret ? [secret.secret] : [];
  if (!creds) return { repo, from };
  from.push(creds.secret);
  for (const k of [...CREDENTIAL_FIELDS, 'type'] as const) {
    if (!repo[k]) repo[k] = creds[k];
  }
  // CopyCredentialsFrom sets these from the template whatever the repository said.
  repo.enableOCI = creds.enableOCI;
  repo.insecureOCIForceHttp = creds.insecureOCIForceHttp;
  repo.forceHttpBasicAuth = creds.forceHttpBasicAuth;
  repo.unsupported = [...(repo.unsupported ?? []), ...creds.unsupported];
  return { repo, from };
}

/**
 * What a render request carries for `url`, used by an Application of `project`: credentials,
 * TLS and SSH settings, the host's CA certificates and known_hosts lines. Throws RepositoryRefused
 * when the matching Secret sets a field impersync cannot honour.
 */
export function accessFor(state: RepositoryState, url: string, project: string): RepositoryAccess {
  const { repo, from } = effectiveRepository(state.configs, url, project);
  const refused = repo.unsupported?.[0];
  if (refused) {
    throw new RepositoryRefused(
      `repository Secret ${from.join(', ')}: field '${refused.field}' (${refused.what}) is not supported by impersync`,
    );
  }
  const ssh = isSSHURL(url);
  if (ssh && repo.proxy) {
    throw new RepositoryRefused(
      `repository Secret ${from.join(', ')}: field 'proxy' is not supported by impersync for SSH repositories`,
    );
  }
  const where = hostOf(url);
  const out: RepositoryAccess = { url };
  const type = repo.type === 'helm' || repo.type === 'oci' || repo.type === 'git' ? repo.type : undefined;
  if (type) out.type = type;
  for (const k of CREDENTIAL_FIELDS) {
    if (repo[k]) out[k] = repo[k];
  }
  // Argo CD's Repository.IsInsecure (either flag) for Git, over HTTPS and SSH alike; Helm reads `insecure` only.
  const gitInsecure =
    repo.insecure === true || repo.insecureIgnoreHostKey === true || repo.insecureOCIForceHttp === true;
  if (type === 'helm' || type === 'oci' ? repo.insecure : gitInsecure) out.insecure = true;
  if (ssh && gitInsecure) out.insecureIgnoreHostKey = true;
  if (repo.forceHttpBasicAuth) out.forceHttpBasicAuth = true;
  if (repo.enableOCI) out.enableOCI = true;
  if (repo.insecureOCIForceHttp) out.insecureOCIForceHttp = true;
  if (where && !ssh) {
    // An own property only: a host named `constructor` or `__proto__` finds nothing.
    const ca = Object.hasOwn(state.tlsCerts, where.host) ? state.tlsCerts[where.host] : undefined;
    if (ca && ca.trim() !== '') out.caCerts = ca;
  }
  if (where && ssh) {
    const lines = knownHostsFor(state.knownHosts, where.host, where.port);
    if (lines !== '') out.knownHosts = lines;
  }
  return out;
}

const HELM_TYPES: ReadonlySet<string> = new Set(['helm', 'oci']);

/** A Chart.yaml dependency repository the renderer needs credentials for: a URL or `@name` / `alias:name`. */
export interface DependencyNeed {
  url?: string | undefined;
  name?: string | undefined;
}

/**
 * Credentials for a chart dependency's repository, as Argo CD gives them to `helm dependency build`:
 * a Helm (or OCI) repository Secret matched by URL (url.ts's rule) or by name, else the Helm
 * credential template that covers it, only when the project's sourceRepos permit that repository
 * (GetPermittedRepos). Stricter than Argo CD: a repository Secret scoped to another project is
 * never used. Undefined: the dependency is fetched without credentials.
 */
export function dependencyAccess(
  state: RepositoryState,
  need: DependencyNeed,
  project: string,
  sourceRepos: readonly string[],
): RepositoryAccess | undefined {
  const helmRepos = state.configs.filter(
    (c) =>
      c.secretType === 'repository' &&
      (c.type === 'helm' || c.type === 'oci') &&
      (c.project === '' || c.project === project) &&
      sourceRepoDecision(sourceRepos, c.url).permitted,
  );
  let url = need.url;
  if (url === undefined && need.name !== undefined) url = helmRepos.find((c) => c.name === need.name)?.url;
  if (url === undefined) return undefined;
  const target = url;
  const byURL = helmRepos.find((c) => sameRepository(c.url, target));
  // A template's credentials go only where url.ts's rule lets them, and only where the project
  // permits that URL itself: the URL is the tenant's Chart.yaml, not an admin's.
  const template =
    byURL || !sourceRepoDecision(sourceRepos, url).permitted
      ? undefined
      : credentialTemplateFor(
          state.configs.filter((c) => sourceRepoDecision(sourceRepos, c.url).permitted),
          url,
          HELM_TYPES,
        );
  const config = byURL ?? template;
  if (!config) return { url };
  return accessFor(
    { ...state, configs: [config] },
    config.secretType === 'repository' ? config.url : url,
    config.project,
  );
}

/** Whether a change of this Secret can change what `url` resolves to (for requeueing the Applications using it). */
export function configAffects(config: RepositoryConfig, url: string): boolean {
  if (config.secretType === 'repository')
    return sameRepository(config.url, url) || sameURL(config.url, url) || trimOCI(config.url) === trimOCI(url);
  // The loose prefix too: a template that stopped matching is named in a failed fetch's message.
  return (
    templateCoverage(config.url, url) !== undefined ||
    normalizeGitURL(url).startsWith(normalizeGitURL(config.url)) ||
    trimOCI(url).startsWith(trimOCI(config.url))
  );
}

function trimOCI(u: string): string {
  return u.replace(/^oci:\/\//, '').replace(/\/+$/, '');
}
