// Commit and tag signatures, verified as Argo CD's repo-server verifies them when the AppProject
// asks (signatureKeys, or a sourceIntegrity policy in `head` mode): a revision that names an
// annotated tag verifies the tag, anything else the commit; the keyring is the public keys of
// argocd-gpg-keys-cm, imported into a fresh GNUPGHOME for each verification (nothing kept between
// two, no credential needed), and git's `--raw` status lines decide. A failure is a SourceError
// with Argo CD's message, so nothing of that revision is rendered, compared or applied.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SourceError } from './errors.ts';
import type { RunResult } from './exec.ts';

/** What the controller asks of one source's revision (project/signatures.ts). */
export interface SignatureRequirement {
  /** Allowed key IDs (16 hex digits, upper case). */
  keys: string[];
  /** signatureKeys (Argo CD's legacy messages), or a sourceIntegrity policy ("GIT/GPG: ..."). */
  legacy: boolean;
  /** argocd-gpg-keys-cm's ASCII-armoured public keys: the keyring. */
  publicKeys: string[];
}

/** Runs git in the clone (git.ts) with `env` added; `gpg` runs the keyring's import. */
export interface SignatureTools {
  git(args: string[], env: NodeJS.ProcessEnv): Promise<RunResult>;
  gpg(args: string[], env: NodeJS.ProcessEnv, stdin: string): Promise<RunResult>;
}

interface Verification {
  result: 'good' | 'bad' | 'expired' | 'revoked' | 'unknown' | 'unsigned';
  keyID: string;
  cipher: string;
  identity: string;
}

/** OpenPGP public key algorithms, named as gpg names them in "using RSA key ...". */
const CIPHERS: Record<string, string> = {
  '1': 'RSA',
  '2': 'RSA',
  '3': 'RSA',
  '17': 'DSA',
  '19': 'ECDSA',
  '22': 'EDDSA',
};

/** A key ID as Argo CD compares them (gpg.KeyID): the last 16 hex digits, upper case. */
export function keyID(k: string): string {
  return k.trim().replace(/^0x/i, '').toUpperCase().slice(-16);
}

/** git's `--raw` output (gpg's status lines) read as Argo CD reads gpg's verdict. */
export function parseStatus(raw: string): Verification {
  const v: Verification = { result: 'unsigned', keyID: '', cipher: '', identity: '' };
  for (const line of raw.split('\n')) {
    const m = /^\[GNUPG:\] (\S+) ?(.*)$/.exec(line.trim());
    if (!m) continue;
    const [, word, rest] = m as unknown as [string, string, string];
    const f = rest.split(' ');
    const set = (result: Verification['result']) => {
      v.result = result;
      v.keyID = keyID(f[0] ?? '');
      v.identity = f.slice(1).join(' ');
    };
    if (word === 'GOODSIG') set('good');
    else if (word === 'BADSIG') set('bad');
    else if (word === 'EXPSIG' || word === 'EXPKEYSIG') set('expired');
    else if (word === 'REVKEYSIG') set('revoked');
    else if (word === 'ERRSIG') {
      v.result = 'unknown';
      v.keyID = keyID(f[0] ?? '');
      v.cipher = CIPHERS[f[1] ?? ''] ?? `algorithm ${f[1]}`;
    } else if (word === 'VALIDSIG') v.cipher = CIPHERS[f[6] ?? ''] ?? `algorithm ${f[6]}`;
  }
  return v;
}

/**
 * Verifies `revision` (as written: a tag verifies the tag) at commit `sha`; throws with Argo CD's
 * message when the project's requirement is not met. `gpgHome` is where fresh GNUPGHOMEs are made.
 */
export async function verifySignature(
  tools: SignatureTools,
  req: SignatureRequirement,
  revision: string | undefined,
  sha: string,
  gpgHome = os.tmpdir(),
): Promise<void> {
  await mkdir(gpgHome, { recursive: true });
  const home = await mkdtemp(path.join(gpgHome, 'h-'));
  try {
    const env = { GNUPGHOME: home };
    // Run even with no keys: a renderer without gpg fails here, saying how to get it.
    const imported = await tools.gpg(['--batch', '--no-tty', '--import'], env, req.publicKeys.join('\n'));
    if (imported.code !== 0 && req.publicKeys.length > 0 && !/imported|unchanged/.test(imported.stderr))
      throw new SourceError('ToolFailed', `importing argocd-gpg-keys-cm's keys failed: ${imported.stderr}`);
    const tag = revision ? await annotatedTag(tools, revision) : undefined;
    const r = await tools.git(tag ? ['verify-tag', '--raw', tag] : ['verify-commit', '--raw', sha], env);
    const message = problem(parseStatus(r.stderr), req, sha);
    if (message) throw new SourceError('InvalidSource', message);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** `refs/tags/<revision>` when it is an annotated tag in the clone, else undefined. */
async function annotatedTag(tools: SignatureTools, revision: string): Promise<string | undefined> {
  const name = revision.replace(/^refs\/tags\//, '');
  if (name.startsWith('-') || name === '') return undefined;
  const r = await tools.git(['cat-file', '-t', '--end-of-options', `refs/tags/${name}`], {});
  return r.code === 0 && r.stdout.toString('utf8').trim() === 'tag' ? `refs/tags/${name}` : undefined;
}

function problem(v: Verification, req: SignatureRequirement, sha: string): string | undefined {
  const allowed = v.result === 'good' && v.keyID !== '' && req.keys.some((k) => keyID(k) === v.keyID);
  if (allowed) return undefined;
  if (req.legacy) {
    // Argo CD's VerifyGnuPGSignature (signatureKeys).
    if (v.result === 'unsigned') return `Target revision ${sha} in Git is not signed, but a signature is required`;
    if (v.result === 'good')
      return `Found good signature made with ${v.cipher} key ${v.keyID}, but this key is not allowed in AppProject`;
    if (v.result === 'unknown')
      return `Could not verify commit signature on revision '${sha}', check logs for more information.`;
    return `Found signature made with ${v.cipher} key ${v.keyID}, but verification result was invalid: '${v.result}'`;
  }
  // Argo CD's sourceIntegrity GPG check (gpgProblemMessage), as its check result names it.
  if (v.result === 'good')
    return `GIT/GPG: Revision ${sha} by '${v.identity}': signed with disallowed key '${v.keyID}'`;
  return `GIT/GPG: Failed verifying revision ${sha} by '${v.identity}': ${v.result} (key_id=${v.keyID})`;
}
