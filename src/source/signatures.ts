// Commit and tag signatures, verified as Argo CD v3.6.1's repo-server verifies a sourceIntegrity
// git policy (signatureKeys being a `head` one for every repository, project/signatures.ts): a
// revision that names an annotated tag verifies the tag (git verify-tag --raw), `head` else the
// commit (git rev-list's %G? and %GK), `strict` then the commit's history back to seal commits. The keyring is argocd-gpg-keys-cm's public keys, imported
// into a fresh GNUPGHOME for each verification with ultimate owner trust, as Argo CD trusts them
// (nothing kept between two, no credential needed). A signature by a signing subkey counts for its
// primary key. A failure is a SourceError 'IntegrityFailed' whose message is Argo CD's condition,
// a line "GIT/GPG: Failed verifying revision <rev> by '<author>': <why> (key_id=<id>)" a problem,
// so nothing of that revision is rendered, compared or applied.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SourceError } from './errors.ts';
import type { RunResult } from './exec.ts';
import { legacyVerification } from './legacy-signatures.ts';

/** What the controller asks of one source's revision (project/signatures.ts). */
export interface SignatureRequirement {
  /**
   * head: the tag, else the commit; strict: the tag, and the commit's history back to seal commits;
   * legacy: the commit's `git verify-commit`, read as Argo CD's VerifyGnuPGSignature (legacy.ts).
   */
  mode: 'head' | 'strict' | 'legacy';
  /** The policy's `gpg.keys`, as written: 16 hex digits, or a 40-digit fingerprint. */
  keys: string[];
  /** argocd-gpg-keys-cm's ASCII-armoured public keys: the keyring. */
  publicKeys: string[];
}

/** Runs git in the clone (git.ts) with `env` added; `gpg` runs gpg in the fresh keyring. */
export interface SignatureTools {
  git(args: string[], env: NodeJS.ProcessEnv): Promise<RunResult>;
  gpg(args: string[], env: NodeJS.ProcessEnv, stdin: string): Promise<RunResult>;
}

/** Argo CD's GPGVerificationResult values: the words of its messages. */
export type VerificationResult =
  | 'signed'
  | 'bad signature'
  | 'signed with untrusted key'
  | 'expired signature'
  | 'signed with expired key'
  | 'signed with revoked key'
  | 'signed with key not in keyring'
  | 'unsigned';

export interface RevisionSignature {
  revision: string;
  result: VerificationResult;
  keyID: string;
  author: string;
}

/** git's %G? letters (git-rev-list(1) PRETTY FORMATS), as Argo CD's gpgVerificationFromGitRevParse. */
const BY_LETTER: Record<string, VerificationResult> = {
  G: 'signed',
  B: 'bad signature',
  U: 'signed with untrusted key',
  X: 'expired signature',
  Y: 'signed with expired key',
  R: 'signed with revoked key',
  E: 'signed with key not in keyring',
  N: 'unsigned',
};

/** gpg's status words in `git verify-tag --raw`, as Argo CD's gpgVerificationFromGpgCode. */
const BY_STATUS: Record<string, VerificationResult> = {
  GOODSIG: 'signed',
  BADSIG: 'bad signature',
  EXPSIG: 'expired signature',
  EXPKEYSIG: 'signed with expired key',
  REVKEYSIG: 'signed with revoked key',
  ERRSIG: 'signed with key not in keyring',
};

const HEX = /^[0-9a-fA-F]*$/;

/** Argo CD's KeyID: a fingerprint's last 16 digits, a 16-digit key ID as is, anything else none. */
export function keyID(k: string): string | undefined {
  if (k.length === 40 && HEX.test(k)) return k.slice(24);
  if (k.length === 16 && HEX.test(k)) return k;
  return undefined;
}

function keyAllowed(keys: readonly string[], id: string): boolean {
  return keys.some((k) => keyID(k) === id);
}

/** One line of `rev-list --pretty=format:%H,%G?,%GK,"%aD","%an <%ae>"`: a CSV record of five fields. */
export function parseCommitLine(line: string): RevisionSignature | undefined {
  const fields: string[] = [];
  const re = /("(?:[^"]|"")*"|[^,]*)(,|$)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) {
    const f = m[1] ?? '';
    fields.push(f.startsWith('"') ? f.slice(1, -1).replace(/""/g, '"') : f);
    if (m[2] === '') break;
  }
  const result = BY_LETTER[fields[1] ?? ''];
  if (fields.length < 5 || !result) return undefined;
  return { revision: fields[0] ?? '', result, keyID: fields[2] ?? '', author: fields[4] ?? '' };
}

/** `git verify-tag --raw` (its exit code and stderr), read as Argo CD's evaluateGpgSignStatus. */
export function parseTagStatus(
  code: number,
  stderr: string,
): { result: VerificationResult; keyID: string } | { error: string } {
  const out = stderr.trim();
  if (code !== 0) {
    if (out === 'error: no signature found') return { result: 'unsigned', keyID: '' };
    if (!out.includes('[GNUPG:] ERRSIG ')) return { error: out || `git verify-tag exited with ${code}` };
  }
  for (const line of out.split('\n')) {
    const m = /\[GNUPG:] (GOODSIG|BADSIG|EXPSIG|EXPKEYSIG|REVKEYSIG|ERRSIG) ([0-9A-F]+) /.exec(line);
    if (m) return { result: BY_STATUS[m[1] ?? ''] ?? 'bad signature', keyID: m[2] ?? '' };
  }
  return { error: `unexpected \`git verify-tag --raw\` output: ${JSON.stringify(out)}` };
}

/**
 * Argo CD's gpgProblemMessage: undefined when the signature passes. `primaryOf` resolves a signing
 * key ID to its primary key's, from the keyring.
 */
export async function problemOf(
  sig: RevisionSignature,
  keys: readonly string[],
  primaryOf: (id: string) => Promise<string | undefined>,
): Promise<string | undefined> {
  const by = `Failed verifying revision ${sig.revision} by '${sig.author}'`;
  if (sig.result !== 'signed') return `${by}: ${sig.result} (key_id=${sig.keyID})`;
  if (keyAllowed(keys, sig.keyID)) return undefined;
  if (sig.keyID.length === 16 && HEX.test(sig.keyID)) {
    const primary = await primaryOf(sig.keyID);
    if (primary !== undefined && primary !== sig.keyID && keyAllowed(keys, primary)) return undefined;
  }
  return `${by}: signed with unallowed key (key_id=${sig.keyID})`;
}

/** At most this many problems are named (Argo CD's describeProblems), the most recent first. */
const MAX_PROBLEMS = 10;

/**
 * Argo CD's describeProblems: each signature's problem in order, one per signing key among commits
 * (unsigned commits and tags are each named), at most MAX_PROBLEMS.
 */
export async function describeProblems(
  sigs: readonly RevisionSignature[],
  keys: readonly string[],
  primaryOf: (id: string) => Promise<string | undefined>,
): Promise<string[]> {
  const problems: string[] = [];
  const reported = new Set<string>();
  for (const sig of sigs) {
    const problem = await problemOf(sig, keys, primaryOf);
    if (!problem) continue;
    if (sig.keyID !== '' && FULL_SHA.test(sig.revision)) {
      if (reported.has(sig.keyID)) continue;
      reported.add(sig.keyID);
    }
    problems.push(problem);
    if (problems.length >= MAX_PROBLEMS) break;
  }
  return problems;
}

const FULL_SHA = /^[0-9a-f]{40}$/;

/**
 * Verifies `revision` (as written: an annotated tag verifies the tag) at commit `sha`; throws Argo
 * CD's condition when the policy is not met. `gpgHome` is where fresh GNUPGHOMEs are made.
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
    await importKeyring(tools, env, req.publicKeys);
    const primaryOf = async (id: string) => {
      const r = await tools.gpg(['--batch', '--no-tty', '--with-colons', '--list-keys', '--', id], env, '');
      const pub = r.stdout
        .toString('utf8')
        .split('\n')
        .map((l) => l.split(':'))
        .find((f) => f.length >= 5 && f[0] === 'pub' && f[4] !== '');
      return r.code === 0 ? pub?.[4] : undefined;
    };
    if (req.mode === 'legacy') {
      const message = await legacyVerification(tools, env, req.keys, sha, primaryOf);
      if (message) throw new SourceError('IntegrityFailed', message);
      return;
    }
    const tag = revision ? await annotatedTag(tools, revision) : undefined;
    const sigs: RevisionSignature[] = tag ? [await tagSignature(tools, env, tag)] : [];
    if (req.mode === 'strict') sigs.push(...(await historySignatures(tools, env, sha)));
    else if (!tag) sigs.push(await commitSignature(tools, env, sha));
    const problems = await describeProblems(sigs, req.keys, primaryOf);
    if (problems.length > 0) throw new SourceError('IntegrityFailed', problems.map((p) => `GIT/GPG: ${p}`).join('\n'));
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** Imports the keys and trusts each ultimately, as Argo CD's SyncKeyRingFromDirectory does. */
async function importKeyring(tools: SignatureTools, env: NodeJS.ProcessEnv, publicKeys: string[]): Promise<void> {
  // Run even with no keys: a renderer without gpg fails here, saying how to get it.
  const imported = await tools.gpg(['--batch', '--no-tty', '--import'], env, publicKeys.join('\n'));
  if (imported.code !== 0 && publicKeys.length > 0 && !/imported|unchanged/.test(imported.stderr))
    throw new SourceError('ToolFailed', `importing argocd-gpg-keys-cm's keys failed: ${imported.stderr}`);
  if (publicKeys.length === 0) return;
  const listed = await tools.gpg(['--batch', '--no-tty', '--with-colons', '--fingerprint'], env, '');
  // The primary keys' fingerprints: the `fpr` record right after each `pub` one (field 10).
  const fingerprints: string[] = [];
  let afterPub = false;
  for (const line of listed.stdout.toString('utf8').split('\n')) {
    const f = line.split(':');
    if (afterPub && f[0] === 'fpr' && f[9]) fingerprints.push(f[9]);
    afterPub = f[0] === 'pub';
  }
  if (fingerprints.length === 0) return;
  const trusted = await tools.gpg(
    ['--batch', '--no-tty', '--import-ownertrust'],
    env,
    fingerprints.map((f) => `${f}:6:\n`).join(''),
  );
  if (trusted.code !== 0)
    throw new SourceError('ToolFailed', `trusting argocd-gpg-keys-cm's keys failed: ${trusted.stderr}`);
  // Now rather than in the middle of the first verification's output, which the legacy check reads.
  await tools.gpg(['--batch', '--no-tty', '--check-trustdb'], env, '');
}

/** The commit's signature (Argo CD's LsSignatures in head mode on a commit). */
async function commitSignature(tools: SignatureTools, env: NodeJS.ProcessEnv, sha: string): Promise<RevisionSignature> {
  const [sig] = await listSignatures(tools, env, [sha, '-1', '--'], sha);
  if (!sig) throw new SourceError('ToolFailed', `git rev-list of ${sha} gave no signature status`);
  return sig;
}

/** `git rev-list` of `args` with each commit's signature status, the most recent first. */
async function listSignatures(
  tools: SignatureTools,
  env: NodeJS.ProcessEnv,
  args: string[],
  sha: string,
): Promise<RevisionSignature[]> {
  const r = await tools.git(
    ['rev-list', '--pretty=format:%H,%G?,%GK,"%aD","%an <%ae>"', '--no-commit-header', ...args],
    env,
  );
  if (r.code !== 0) throw new SourceError('ToolFailed', `git rev-list of ${sha} failed: ${r.stderr.trim()}`);
  return r.stdout
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const sig = parseCommitLine(line);
      if (!sig) throw new SourceError('ToolFailed', `invalid rev-list output for ${JSON.stringify(sha)}`);
      return sig;
    });
}

/** The trailer a seal commit's message carries (Argo CD's strict mode), any case. */
const SEAL_TRAILER = 'Argocd-gpg-seal:';

/**
 * Argo CD's strict history (listRawSignatures, getSealRevListFilter): every ancestor of `sha` back
 * to the root, or to the seal commits, those whose message holds the seal trailer and whose
 * signature is good and trusted (signed by a key of the keyring, allowed or not); the seal commits
 * are listed too (rev-list --boundary), so they are verified against the policy's keys.
 */
async function historySignatures(
  tools: SignatureTools,
  env: NodeJS.ProcessEnv,
  sha: string,
): Promise<RevisionSignature[]> {
  const r = await tools.git(
    ['rev-list', '--pretty=format:%G?,%H', '--no-commit-header', `--grep=${SEAL_TRAILER}`, '--regexp-ignore-case', sha],
    env,
  );
  if (r.code !== 0) throw new SourceError('ToolFailed', `git rev-list of ${sha} failed: ${r.stderr.trim()}`);
  const seals = r.stdout
    .toString('utf8')
    .split('\n')
    .filter((l) => l.startsWith('G,'))
    .map((l) => l.slice(2));
  if (seals.length === 0) return listSignatures(tools, env, [sha, '--'], sha);
  if (seals[0] === sha) return listSignatures(tools, env, [sha, '-1', '--'], sha);
  return listSignatures(tools, env, ['--boundary', sha, '--not', ...seals], sha);
}

/** The annotated tag's signature (Argo CD's tagSignature): its tagger as `name "<email>"`. */
async function tagSignature(
  tools: SignatureTools,
  env: NodeJS.ProcessEnv,
  tag: { name: string; ref: string },
): Promise<RevisionSignature> {
  const info = await tools.git(['for-each-ref', tag.ref, '--format=%(taggername) "%(taggeremail)"'], env);
  const author = info.stdout.toString('utf8').trim();
  const r = await tools.git(['verify-tag', '--raw', tag.ref], env);
  const status = parseTagStatus(r.code, r.stderr);
  if ('error' in status)
    throw new SourceError('ToolFailed', `gpg failed verifying git tag ${JSON.stringify(tag.name)}: ${status.error}`);
  return { revision: tag.name, author, ...status };
}

/** The revision as written and `refs/tags/<name>` when it is an annotated tag in the clone, else undefined. */
async function annotatedTag(
  tools: SignatureTools,
  revision: string,
): Promise<{ name: string; ref: string } | undefined> {
  const name = revision.replace(/^refs\/tags\//, '');
  if (name.startsWith('-') || name === '') return undefined;
  const ref = `refs/tags/${name}`;
  const r = await tools.git(['cat-file', '-t', '--end-of-options', ref], {});
  return r.code === 0 && r.stdout.toString('utf8').trim() === 'tag' ? { name: revision, ref } : undefined;
}
