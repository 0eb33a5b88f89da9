// Repository Secrets that do not parse, and the URLs they would have served. Argo CD picks the
// repository Secret (same URL, the Application's project first) and the credential template
// (longest URL prefix) from the Secrets' `url` as written and only then reads the one it picked
// (util/db/repository_secrets.go): a broken one fails the repository it was picked for, and no
// other. impersync does the same, so that such a repository is refused naming the Secret and field
// instead of being fetched without the credentials, proxy or TLS settings the Secret meant to give.
import type { RepositoryConfig, RepositorySecretError } from '../api/repository.ts';
import { normalizeGitURL } from '../project/repos.ts';
import { repositorySecretsFor, sameURL } from './access.ts';

/** The unreadable Secret that `url`, read by an Application of `project`, would have used; or none. */
export function unreadableSecretFor(
  configs: readonly RepositoryConfig[],
  unreadable: readonly RepositorySecretError[],
  url: string,
  project: string,
): RepositorySecretError | undefined {
  const { secret, ...rest } = repositorySecretsFor(configs, url, project);
  // A readable Secret of the Application's own project wins over any other; one of no project only
  // over others of no project (which of two Argo CD takes depends on their order: refused here).
  const repository = unreadable.find(
    (e) =>
      e.secretType === 'repository' &&
      sameURL(e.url, url) &&
      (e.project === project || (e.project === '' && secret?.project !== project)),
  );
  if (repository) return repository;
  // The templates are consulted only when the repository Secret gives no credentials.
  if (!('template' in rest)) return undefined;
  const repo = normalizeGitURL(url);
  const best = rest.template ? normalizeGitURL(rest.template.url).length : 0;
  return unreadable.find((e) => {
    if (e.secretType !== 'repo-creds' || e.url === '') return false;
    const prefix = normalizeGitURL(e.url);
    return prefix !== '' && repo.startsWith(prefix) && prefix.length >= best;
  });
}

/** The refusal for an Application whose sources read an unreadable Secret: it names the Secret and field. */
export function unreadableRefusal(
  configs: readonly RepositoryConfig[],
  unreadable: readonly RepositorySecretError[],
  urls: readonly string[],
  project: string,
): string | undefined {
  for (const url of urls) {
    const e = unreadableSecretFor(configs, unreadable, url, project);
    if (e) return `unreadable repository ${e.message}`;
  }
  return undefined;
}
