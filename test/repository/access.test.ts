// Which credentials a repository URL gets (Argo CD's util/db/repository.go and
// repository_secrets.go), and which Applications a change of a Secret or ConfigMap refreshes.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { parseRepositorySecret, type RepositoryConfig } from '../../src/api/repository.ts';
import { accessFor, dependencyAccess, RepositoryRefused, type RepositoryState } from '../../src/repository/access.ts';
import { knownHostsFor } from '../../src/repository/known-hosts.ts';
import {
  appsAffectedByKnownHosts,
  appsAffectedByRepository,
  appsAffectedByTLSCerts,
} from '../../src/controller/requeue.ts';

function cfg(name: string, type: 'repository' | 'repo-creds', data: Record<string, string>): RepositoryConfig {
  return parseRepositorySecret({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': type } },
    stringData: data,
  });
}

const state = (configs: RepositoryConfig[], extra: Partial<RepositoryState> = {}): RepositoryState => ({
  configs,
  errors: [],
  knownHosts: '',
  tlsCerts: {},
  ...extra,
});

describe('the credentials of a repository URL', () => {
  it("the repository Secret of the Application's project wins over one with no project", () => {
    const s = state([
      cfg('global', 'repository', { url: 'https://git.example.com/org/app.git', password: 'global' }),
      cfg('team', 'repository', { url: 'https://git.example.com/org/app', password: 'team', project: 'team' }),
    ]);
    assert.equal(accessFor(s, 'https://GIT.example.com/org/app', 'team').password, 'team');
    assert.equal(accessFor(s, 'https://git.example.com/org/app', 'other').password, 'global');
  });

  it('a project-scoped repository gives nothing to another project', () => {
    const s = state([
      cfg('team', 'repository', { url: 'https://git.example.com/org/app', password: 'team', project: 'team' }),
    ]);
    assert.deepEqual(accessFor(s, 'https://git.example.com/org/app', 'other'), {
      url: 'https://git.example.com/org/app',
    });
  });

  it('the credential template with the longest URL prefix fills a repository without credentials', () => {
    const s = state([
      cfg('org', 'repo-creds', { url: 'https://git.example.com/org', username: 'org', password: 'o' }),
      cfg('team', 'repo-creds', { url: 'https://git.example.com/org/team', username: 'team', password: 't' }),
      cfg('noauth', 'repository', { url: 'https://git.example.com/org/team/app', insecure: 'true' }),
    ]);
    const a = accessFor(s, 'https://git.example.com/org/team/app', 'p');
    assert.equal(a.username, 'team');
    assert.equal(a.insecure, true, "the repository's own settings stay");
    assert.equal(accessFor(s, 'https://git.example.com/org/x', 'p').username, 'org');
    assert.equal(accessFor(s, 'https://git.example.com/other', 'p').username, undefined);
  });

  it('a field impersync cannot honour refuses the repository, naming the Secret and the field', () => {
    const s = state([
      cfg('gh', 'repo-creds', { url: 'https://github.com/org', githubAppPrivateKey: 'k', githubAppID: '1' }),
    ]);
    assert.throws(
      () => accessFor(s, 'https://github.com/org/app', 'p'),
      (e: unknown) =>
        e instanceof RepositoryRefused &&
        e.message ===
          "repository Secret argocd/gh: field 'githubAppPrivateKey' (GitHub App credentials) is not supported by impersync",
    );
    const gcp = state([
      cfg('g', 'repository', { url: 'https://source.developers.google.com/p/r', gcpServiceAccountKey: '{}' }),
    ]);
    assert.throws(() => accessFor(gcp, 'https://source.developers.google.com/p/r', 'p'), /gcpServiceAccountKey/);
  });

  it("booleans are read with Go's ParseBool, as Argo CD reads them", () => {
    assert.equal(cfg('a', 'repository', { url: 'u', insecure: 'True' }).insecure, true);
    assert.throws(
      () => cfg('a', 'repository', { url: 'u', insecure: 'yes' }),
      /data\.insecure: strconv\.ParseBool: parsing "yes": invalid syntax/,
    );
  });

  it('insecureIgnoreHostKey skips host key checking over SSH and TLS verification over HTTPS (IsInsecure)', () => {
    const s = state([
      cfg('ssh', 'repository', {
        url: 'git@git.example.com:org/app.git',
        sshPrivateKey: 'k',
        insecureIgnoreHostKey: 'true',
      }),
      cfg('https', 'repository', { url: 'https://git.example.com/org/app', insecureIgnoreHostKey: 'true' }),
    ]);
    const ssh = accessFor(s, 'git@git.example.com:org/app.git', 'p');
    assert.equal(ssh.insecureIgnoreHostKey, true);
    assert.equal(accessFor(s, 'https://git.example.com/org/app', 'p').insecure, true);
  });

  it("the host's CA certificates and known_hosts lines travel with it, nothing of other hosts", () => {
    const s = state([], {
      tlsCerts: { 'git.example.com': 'CA-A', 'other.example.com': 'CA-B' },
      knownHosts: 'git.example.com ssh-ed25519 AAAA1\n[git.example.com]:2222 ssh-ed25519 AAAA2\nother ssh-rsa BBBB\n',
    });
    assert.equal(accessFor(s, 'https://git.example.com:8443/org/app', 'p').caCerts, 'CA-A');
    assert.equal(
      accessFor(s, 'ssh://git@git.example.com:2222/org/app', 'p').knownHosts,
      '[git.example.com]:2222 ssh-ed25519 AAAA2\n',
    );
    assert.equal(accessFor(s, 'git@git.example.com:org/app', 'p').knownHosts, 'git.example.com ssh-ed25519 AAAA1\n');
  });

  it('known_hosts patterns: wildcards, negation and hashed names', () => {
    const salt = Buffer.from('0123456789abcdefghij');
    const hashed = `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update('[127.0.0.1]:2222').digest('base64')}`;
    assert.equal(knownHostsFor('*.example.com,!bad.example.com k A\n', 'bad.example.com', undefined), '');
    assert.equal(knownHostsFor(`${hashed} k A\n`, '127.0.0.1', 2222), `${hashed} k A\n`);
    assert.equal(knownHostsFor(`${hashed} k A\n`, '127.0.0.1', undefined), '');
  });
});

describe("a chart dependency's credentials", () => {
  const s = state([
    cfg('charts', 'repository', { url: 'https://charts.example.com', type: 'helm', name: 'mycharts', password: 'c' }),
    cfg('team', 'repository', { url: 'https://team.example.com', type: 'helm', password: 't', project: 'team' }),
    cfg('tmpl', 'repo-creds', { url: 'https://tmpl.example.com/', type: 'helm', password: 'x' }),
    cfg('reg', 'repository', { url: 'registry.example.com/charts', type: 'helm', enableOCI: 'true', password: 'r' }),
  ]);
  it('by URL or by the name of @name, only when the project permits the repository', () => {
    assert.equal(dependencyAccess(s, { url: 'https://charts.example.com/' }, 'p', ['*'])?.password, 'c');
    assert.equal(dependencyAccess(s, { name: 'mycharts' }, 'p', ['*'])?.url, 'https://charts.example.com');
    assert.deepEqual(dependencyAccess(s, { url: 'https://charts.example.com' }, 'p', ['https://git.example.com/*']), {
      url: 'https://charts.example.com',
    });
    assert.equal(dependencyAccess(s, { url: 'https://tmpl.example.com/stable' }, 'p', ['*'])?.password, 'x');
    // An oci:// dependency gets the enableOCI repository Secret of its registry path.
    const oci = dependencyAccess(s, { url: 'oci://registry.example.com/charts' }, 'p', ['*']);
    assert.equal(oci?.password, 'r');
    assert.equal(oci?.enableOCI, true);
  });
  it("a template's credentials never go to a host that only begins like its URL, nor to a URL the project does not permit", () => {
    assert.deepEqual(dependencyAccess(s, { url: 'https://tmpl.example.com.evil.net/' }, 'p', ['*']), {
      url: 'https://tmpl.example.com.evil.net/',
    });
    assert.deepEqual(dependencyAccess(s, { url: 'https://tmpl.example.comevil/x' }, 'p', ['*']), {
      url: 'https://tmpl.example.comevil/x',
    });
    // The template's own URL permitted, the dependency's not: no credentials for it.
    assert.deepEqual(
      dependencyAccess(s, { url: 'https://tmpl.example.com/stable' }, 'p', ['https://tmpl.example.com/']),
      { url: 'https://tmpl.example.com/stable' },
    );
    assert.equal(
      dependencyAccess(s, { url: 'https://tmpl.example.com/stable' }, 'p', ['https://tmpl.example.com/*'])?.password,
      'x',
    );
  });
  it('never a repository scoped to another project', () => {
    assert.equal(dependencyAccess(s, { url: 'https://team.example.com' }, 'other', ['*'])?.password, undefined);
    assert.equal(dependencyAccess(s, { url: 'https://team.example.com' }, 'team', ['*'])?.password, 't');
  });
});

describe('what a change refreshes', () => {
  const apps = [
    { key: 'argocd/a', project: 'p', destination: {}, repoURLs: ['https://git.example.com/org/a'] },
    { key: 'argocd/b', project: 'p', destination: {}, repoURLs: ['https://git.example.com/org/b.git'] },
    { key: 'argocd/c', project: 'p', destination: {}, repoURLs: ['git@ssh.example.com:org/c'] },
    {
      key: 'argocd/d',
      project: 'p',
      destination: {},
      repoURLs: ['https://elsewhere.example.com/d', 'https://charts.example.com'],
    },
  ];
  it('a repository Secret: the Applications of the same URL; a template: those it prefixes', () => {
    const repo = cfg('b', 'repository', { url: 'https://git.example.com/org/b' });
    assert.deepEqual(appsAffectedByRepository(apps, undefined, repo), ['argocd/b']);
    const tmpl = cfg('org', 'repo-creds', { url: 'https://git.example.com/org' });
    assert.deepEqual(appsAffectedByRepository(apps, tmpl, undefined), ['argocd/a', 'argocd/b']);
    const dep = cfg('charts', 'repository', { url: 'https://charts.example.com', type: 'helm' });
    assert.deepEqual(appsAffectedByRepository(apps, dep, dep), ['argocd/d'], 'a dependency repository counts');
  });
  it("known hosts: the SSH Applications whose host's lines changed; CA certificates: those of that server name", () => {
    assert.deepEqual(appsAffectedByKnownHosts(apps, '', 'ssh.example.com k A\n'), ['argocd/c']);
    assert.deepEqual(appsAffectedByKnownHosts(apps, 'x k A\n', 'x k B\n'), []);
    assert.deepEqual(appsAffectedByTLSCerts(apps, {}, { 'git.example.com': 'CA' }), ['argocd/a', 'argocd/b']);
  });
});
