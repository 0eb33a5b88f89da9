// Test helpers for signed Git revisions with a real gpg: a throwaway GnuPG home with one ed25519
// signing key, commits and annotated tags signed (or not) with it, and the key revoked.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestKey {
  home: string;
  /** The long key ID (16 hex digits, upper case), as git's %GK prints it. */
  id: string;
  fingerprint: string;
  /** The ASCII-armoured public key, as argocd-gpg-keys-cm holds it. */
  armored: string;
  remove(): void;
}

function gpgIn(home: string, ...args: string[]): string {
  const r = spawnSync('gpg', ['--batch', '--homedir', home, ...args], { encoding: 'utf8' });
  if (r.error) throw new Error(`gpg is needed for the signature tests: apt-get install gpg (${r.error.message})`);
  if (r.status !== 0) throw new Error(`gpg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/**
 * A GnuPG home with one ed25519 key that signs, for `name <name@impersync.invalid>`; with
 * `signingSubkey`, the primary key only certifies and a subkey of it signs.
 */
export function gpgKey(name: string, opts: { signingSubkey?: boolean } = {}): TestKey {
  const home = mkdtempSync(path.join(os.tmpdir(), 'sig-gpg-'));
  const uid = `${name} <${name}@impersync.invalid>`;
  gpgIn(home, '--passphrase', '', '--quick-gen-key', uid, 'ed25519', opts.signingSubkey ? 'cert' : 'sign', 'never');
  const colons = gpgIn(home, '--with-colons', '--fingerprint');
  const id = /^pub:[^:]*:[^:]*:[^:]*:([0-9A-F]{16}):/m.exec(colons)?.[1];
  const fingerprint = /^fpr:(?:[^:]*:){8}([0-9A-F]{40}):/m.exec(colons)?.[1];
  if (!id || !fingerprint) throw new Error(`no key in gpg --list-keys of ${home}`);
  if (opts.signingSubkey) gpgIn(home, '--passphrase', '', '--quick-add-key', fingerprint, 'ed25519', 'sign', 'never');
  return {
    home,
    id,
    fingerprint,
    armored: gpgIn(home, '--armor', '--export', id),
    remove: () => rmSync(home, { recursive: true, force: true }),
  };
}

/**
 * Revokes the key with the revocation certificate gpg wrote when it made it, and answers the
 * public key as exported since: what argocd-gpg-keys-cm would hold once the owner revoked it.
 */
export function revoke(key: TestKey): string {
  const cert = readFileSync(path.join(key.home, 'openpgp-revocs.d', `${key.fingerprint}.rev`), 'utf8');
  // gpg prefixes the armour's first line with ':' so that the file is not imported by accident.
  const r = spawnSync('gpg', ['--batch', '--homedir', key.home, '--import'], {
    input: cert.replace(/^:-----BEGIN/m, '-----BEGIN'),
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`importing the revocation of ${key.id}: ${r.stderr}`);
  return gpgIn(key.home, '--armor', '--export', key.id);
}

/** The identities of signed revisions: the author of commits, the tagger of tags. */
export const SIGNER = { name: 'signer', email: 'signer@impersync.invalid' };

/** Runs git in `dir` as SIGNER with `key`'s GnuPG home (no user config); throws with its stderr. */
export function gitAsSigner(dir: string, key: TestKey | undefined, ...args: string[]): string {
  const r = spawnSync('git', [...(key ? ['-c', `user.signingkey=${key.id}`] : []), ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: {
      ...process.env,
      ...(key ? { GNUPGHOME: key.home } : {}),
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: SIGNER.name,
      GIT_AUTHOR_EMAIL: SIGNER.email,
      GIT_COMMITTER_NAME: SIGNER.name,
      GIT_COMMITTER_EMAIL: SIGNER.email,
    },
  });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

/** An empty commit signed with `key` (git commit -S) on the checked-out branch; its SHA. */
export function signedCommit(dir: string, key: TestKey, message = 'signed'): string {
  gitAsSigner(dir, key, 'commit', '--quiet', '--allow-empty', '-S', '-m', message);
  return gitAsSigner(dir, undefined, 'rev-parse', 'HEAD');
}

/** An annotated tag of HEAD, signed with `key` (git tag -s), or not signed when `key` is undefined. */
export function annotatedTag(dir: string, name: string, key: TestKey | undefined): void {
  if (key) gitAsSigner(dir, key, 'tag', '-s', '-u', key.id, '-m', `tag ${name}`, name);
  else gitAsSigner(dir, undefined, 'tag', '-a', '-m', `tag ${name}`, name);
}
