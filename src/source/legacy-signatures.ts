// Argo CD v3.6.1's legacy signature check (util/sourceintegrity VerifyGnuPGSignature), which its
// controller still applies when a project sets signatureKeys beside a sourceIntegrity.git that has
// no verifying policy for the repository: the repo-server's `git verify-commit` of the commit (via
// git-verify-wrapper.sh: nothing when an annotated tag points at the commit, nothing for an
// unsigned one), read line by line as parseGitCommitVerification reads gpg's words, and judged
// against the keys. Its messages are Argo CD's own.
import { SourceError } from './errors.ts';
import type { SignatureTools } from './signatures.ts';

interface LegacyResult {
  result: 'Good' | 'Bad' | 'Invalid' | 'Unknown';
  keyID: string;
  cipher: string;
  message: string;
}

/** Argo CD reads at most this many lines of verify-commit's output. */
const MAX_LINES = 40;

const START = /^gpg: Signature made ([a-zA-Z0-9 :]+)$/;
const KEY = /^gpg:\s+using\s([A-Za-z]+)\skey\s([a-zA-Z0-9]+)$/;
const ISSUER = /^gpg:\s+issuer\s.+$/;
const STATUS = /^gpg: ([a-zA-Z]+) signature from "([^"]+)" \[([a-zA-Z]+)\]$/;

function legacyKeyID(k: string): string | undefined {
  if (/^[0-9a-fA-F]{40}$/.test(k)) return k.slice(24);
  if (/^[0-9a-fA-F]{16}$/.test(k)) return k;
  return undefined;
}

/** parseGitCommitVerification: the first signature of `output`, or Unknown with its reason. */
export function parseVerifyCommit(output: string): LegacyResult {
  const unknown = (message: string): LegacyResult => ({ result: 'Unknown', keyID: '', cipher: '', message });
  const lines = output.split('\n');
  let i = 0;
  let parsed = 0;
  const next = () => (i < lines.length ? lines[i++] : undefined);
  const eof = 'Unexpected end-of-file while parsing commit verification output.';
  for (let line = next(); line !== undefined && parsed < MAX_LINES; line = next()) {
    parsed++;
    if (!START.test(line)) continue;
    const keyLine = next();
    if (keyLine === undefined) return unknown(eof);
    parsed++;
    const key = KEY.exec(keyLine);
    if (!key) return unknown('Could not parse key ID of commit verification output.');
    const id = legacyKeyID(key[2] ?? '');
    if (id === undefined) return unknown('Invalid PGP key ID found in verification result: ');
    let status = next();
    if (status === undefined) return unknown(eof);
    parsed++;
    while (ISSUER.test(status)) {
      status = next();
      if (status === undefined) return unknown(eof);
      parsed++;
    }
    const base = { keyID: id, cipher: key[1] ?? '' };
    let result: LegacyResult;
    if (status.startsWith("gpg: Can't check signature: ")) result = { ...base, result: 'Invalid', message: status };
    else {
      const m = STATUS.exec(status);
      if (!m) return unknown('Could not parse result of verify operation, check logs for more information.');
      const word = (m[1] ?? '').toLowerCase();
      const verdict = word === 'good' ? 'Good' : word === 'bad' ? 'Bad' : 'Invalid';
      result = { ...base, result: verdict, message: 'Success verifying the commit signature.' };
    }
    if (parsed >= MAX_LINES) break;
    return result;
  }
  if (parsed >= MAX_LINES) return unknown('Too many lines of gpg verify-commit output, abort.');
  return unknown(`Could not parse output of verify-commit, no verification data found, lines parsed ${parsed}.`);
}

/** VerifyGnuPGSignature on `output` (non-empty): its condition's message, or undefined when allowed. */
export async function legacyProblem(
  output: string,
  sha: string,
  keys: readonly string[],
  primaryOf: (id: string) => Promise<string | undefined>,
): Promise<string | undefined> {
  const v = parseVerifyCommit(output);
  const allowed = (id: string) => keys.some((k) => k !== '' && legacyKeyID(k) === id);
  if (v.result === 'Good') {
    if (allowed(v.keyID)) return undefined;
    const primary = await primaryOf(v.keyID);
    if (primary !== undefined && primary !== v.keyID && allowed(primary)) return undefined;
    return `Found good signature made with ${v.cipher} key ${v.keyID}, but this key is not allowed in AppProject`;
  }
  if (v.result === 'Invalid')
    return `Found signature made with ${v.cipher} key ${v.keyID}, but verification result was invalid: '${v.message}'`;
  return `Could not verify commit signature on revision '${sha}', check logs for more information.`;
}

/** git-verify-wrapper.sh's output for commit `sha`, then legacyProblem; undefined when nothing is said. */
export async function legacyVerification(
  tools: SignatureTools,
  env: NodeJS.ProcessEnv,
  keys: readonly string[],
  sha: string,
  primaryOf: (id: string) => Promise<string | undefined>,
): Promise<string | undefined> {
  // An annotated tag at the commit: the wrapper runs verify-tag on the SHA, which fails, and says nothing.
  const described = await tools.git(['describe', '--exact-match', sha], env);
  if (described.code === 0) return undefined;
  const r = await tools.git(['verify-commit', sha], env);
  if (r.code !== 0 && r.code !== 1)
    throw new SourceError('ToolFailed', `git verify-commit of ${sha} failed: ${r.stderr.trim()}`);
  const output = `${r.stdout.toString('utf8')}${r.stderr}`.trim();
  if (output === '') return undefined;
  return legacyProblem(output, sha, keys, primaryOf);
}
