// Repository Secrets that do not parse (src/repository/unreadable.ts): the repository they would
// have served is refused naming the Secret and field, as Argo CD's GetRepository fails; every
// other repository is untouched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRepositorySecret, RepositorySecretError, type RepositoryConfig } from '../../src/api/repository.ts';
import { unreadableRefusal, unreadableSecretFor } from '../../src/repository/unreadable.ts';

const raw = (name: string, type: 'repository' | 'repo-creds', stringData: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': type } },
  stringData,
});
const ok = (...a: Parameters<typeof raw>): RepositoryConfig => parseRepositorySecret(raw(...a));
function broken(...a: Parameters<typeof raw>): RepositorySecretError {
  try {
    parseRepositorySecret(raw(...a));
  } catch (err) {
    assert.ok(err instanceof RepositorySecretError);
    return err;
  }
  throw new Error('it parsed');
}

const APP = 'https://git.example/team/app.git';

test('a repository Secret that does not parse refuses its URL, naming the Secret and field, and no other URL', () => {
  const bad = broken('bad', 'repository', {
    url: 'https://GIT.example/team/app',
    insecure: 'maybe',
    password: 's3cr3t',
  });
  assert.equal(bad.url, 'https://GIT.example/team/app');
  const message = unreadableRefusal([], [bad], [APP], 'team');
  assert.equal(
    message,
    'unreadable repository Secret argocd/bad: data.insecure: strconv.ParseBool: parsing "maybe": invalid syntax',
  );
  assert.ok(!message?.includes('s3cr3t'));
  assert.equal(unreadableSecretFor([], [bad], 'https://git.example/team/other', 'team'), undefined);
});

test("the project decides: another project's broken Secret is not this one's; a readable Secret of this project wins", () => {
  const other = broken('other', 'repository', { url: APP, project: 'other', insecure: 'maybe' });
  assert.equal(unreadableSecretFor([], [other], APP, 'team'), undefined);
  assert.equal(unreadableSecretFor([], [other], APP, 'other'), other);
  const global = broken('global', 'repository', { url: APP, insecure: 'maybe' });
  const mine = ok('mine', 'repository', { url: APP, project: 'team', password: 'p' });
  assert.equal(unreadableSecretFor([mine], [global], APP, 'team'), undefined);
  assert.equal(unreadableSecretFor([], [global], APP, 'team'), global);
});

test('a broken credential template refuses the URLs it would have given credentials to', () => {
  const creds = broken('creds', 'repo-creds', { url: 'https://git.example/team', forceHttpBasicAuth: 'sometimes' });
  assert.equal(unreadableSecretFor([], [creds], APP, 'team'), creds);
  assert.equal(unreadableSecretFor([], [creds], 'https://git.example/elsewhere/app', 'team'), undefined);
  // Not consulted: the repository Secret has credentials of its own.
  const own = ok('own', 'repository', { url: APP, username: 'u', password: 'p' });
  assert.equal(unreadableSecretFor([own], [creds], APP, 'team'), undefined);
  // Not chosen: a readable template with a longer prefix wins.
  const longer = ok('longer', 'repo-creds', { url: 'https://git.example/team/app', password: 'p' });
  assert.equal(unreadableSecretFor([longer], [creds], APP, 'team'), undefined);
  // Chosen over a shorter readable one, and over a repository Secret without credentials.
  const shorter = ok('shorter', 'repo-creds', { url: 'https://git.example', password: 'p' });
  const bare = ok('bare', 'repository', { url: APP, insecure: 'true' });
  assert.equal(unreadableSecretFor([shorter, bare], [creds], APP, 'team'), creds);
});

test('a broken Secret without a URL serves nothing', () => {
  const nourl = broken('nourl', 'repo-creds', { password: 'p' });
  assert.equal(nourl.url, '');
  assert.equal(unreadableSecretFor([], [nourl], APP, 'team'), undefined);
});
