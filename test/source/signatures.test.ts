// A revision's signature read and judged as Argo CD v3.6.1's repo-server does for a sourceIntegrity
// head policy (util/git LsSignatures, util/sourceintegrity gpgProblemMessage): the messages are its own.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeProblems, keyID, parseCommitLine, parseTagStatus, problemOf } from '../../src/source/signatures.ts';
import { legacyProblem, parseVerifyCommit } from '../../src/source/legacy-signatures.ts';

const SHA = '0123456789abcdef0123456789abcdef01234567';
const noPrimary = async () => undefined;

describe("git rev-list's signature line", () => {
  it('reads the commit, its %G? letter, its key and its author', () => {
    assert.deepEqual(parseCommitLine(`${SHA},G,4AEE18F83AFDEB23,"Wed, 2 Dec 2026 13:56:28 +0000","A B <a@x>"`), {
      revision: SHA,
      result: 'signed',
      keyID: '4AEE18F83AFDEB23',
      author: 'A B <a@x>',
    });
    const letters: Record<string, string> = {
      B: 'bad signature',
      U: 'signed with untrusted key',
      X: 'expired signature',
      Y: 'signed with expired key',
      R: 'signed with revoked key',
      E: 'signed with key not in keyring',
      N: 'unsigned',
    };
    for (const [letter, result] of Object.entries(letters))
      assert.equal(parseCommitLine(`${SHA},${letter},,"d","a <a@x>"`)?.result, result);
    assert.equal(parseCommitLine(`${SHA},Q,,"d","a"`), undefined);
  });
});

describe("git verify-tag --raw's status", () => {
  it('reads the first signature status word and its key, as evaluateGpgSignStatus', () => {
    assert.deepEqual(parseTagStatus(0, '[GNUPG:] NEWSIG\n[GNUPG:] GOODSIG 4AEE18F83AFDEB23 A <a@x>\n'), {
      result: 'signed',
      keyID: '4AEE18F83AFDEB23',
    });
    assert.deepEqual(parseTagStatus(0, '[GNUPG:] REVKEYSIG 4AEE18F83AFDEB23 A <a@x>\n'), {
      result: 'signed with revoked key',
      keyID: '4AEE18F83AFDEB23',
    });
    // ERRSIG (a key not in the keyring) exits 1 and is still read.
    assert.deepEqual(parseTagStatus(1, '[GNUPG:] ERRSIG 4AEE18F83AFDEB23 22 10 00 1 9 FPR\n[GNUPG:] NO_PUBKEY X\n'), {
      result: 'signed with key not in keyring',
      keyID: '4AEE18F83AFDEB23',
    });
    assert.deepEqual(parseTagStatus(1, 'error: no signature found\n'), { result: 'unsigned', keyID: '' });
    assert.ok('error' in parseTagStatus(128, 'fatal: something else'));
  });
});

describe("Argo CD's problem messages (gpgProblemMessage)", () => {
  const sig = { revision: SHA, author: 'A B <a@x>', keyID: '4AEE18F83AFDEB23' };
  it('names the revision, its author, the result and the key for every result but a good signature', async () => {
    assert.equal(
      await problemOf({ ...sig, result: 'signed with revoked key' }, ['4AEE18F83AFDEB23'], noPrimary),
      `Failed verifying revision ${SHA} by 'A B <a@x>': signed with revoked key (key_id=4AEE18F83AFDEB23)`,
    );
    assert.equal(
      await problemOf({ ...sig, result: 'unsigned', keyID: '' }, [], noPrimary),
      `Failed verifying revision ${SHA} by 'A B <a@x>': unsigned (key_id=)`,
    );
  });
  it('a good signature by a key the policy does not list is unallowed', async () => {
    assert.equal(
      await problemOf({ ...sig, result: 'signed' }, ['0000000000000000'], noPrimary),
      `Failed verifying revision ${SHA} by 'A B <a@x>': signed with unallowed key (key_id=4AEE18F83AFDEB23)`,
    );
    assert.equal(await problemOf({ ...sig, result: 'signed' }, ['4AEE18F83AFDEB23'], noPrimary), undefined);
  });
  it('compares keys as Argo CD KeyID does: 16 digits or a fingerprint, case as written', async () => {
    const good = { ...sig, result: 'signed' as const };
    assert.equal(await problemOf(good, ['0123456789ABCDEF012345674AEE18F83AFDEB23'], noPrimary), undefined);
    assert.notEqual(await problemOf(good, ['4aee18f83afdeb23'], noPrimary), undefined);
    assert.notEqual(await problemOf(good, ['0x4AEE18F83AFDEB23'], noPrimary), undefined);
    assert.equal(keyID('0123456789ABCDEF012345674AEE18F83AFDEB23'), '4AEE18F83AFDEB23');
    assert.equal(keyID('3AFDEB23'), undefined);
  });
  it('a signing subkey counts for its primary key, looked up in the keyring', async () => {
    const good = { ...sig, result: 'signed' as const };
    assert.equal(await problemOf(good, ['1111111111111111'], async () => '1111111111111111'), undefined);
    assert.notEqual(await problemOf(good, ['2222222222222222'], async () => '1111111111111111'), undefined);
  });
});

describe("strict mode's list of problems (describeProblems)", () => {
  const commit = (n: number, result: 'signed' | 'unsigned', keyID: string) => ({
    revision: n.toString(16).padStart(40, '0'),
    result,
    keyID,
    author: 'a <a@x>',
  });
  it('names one problem per signing key among commits, every unsigned commit and every tag, at most 10', async () => {
    const sigs = [
      { revision: 'v1', result: 'signed' as const, keyID: 'BBBBBBBBBBBBBBBB', author: 't "<t@x>"' },
      commit(1, 'signed', 'BBBBBBBBBBBBBBBB'),
      commit(2, 'signed', 'BBBBBBBBBBBBBBBB'),
      commit(3, 'signed', 'AAAAAAAAAAAAAAAA'),
      ...Array.from({ length: 12 }, (_, i) => commit(10 + i, 'unsigned', '')),
    ];
    const problems = await describeProblems(sigs, ['AAAAAAAAAAAAAAAA'], noPrimary);
    assert.equal(problems.length, 10);
    assert.equal(
      problems[0],
      `Failed verifying revision v1 by 't "<t@x>"': signed with unallowed key (key_id=BBBBBBBBBBBBBBBB)`,
    );
    assert.equal(
      problems[1],
      `Failed verifying revision ${commit(1, 'signed', '').revision} by 'a <a@x>': signed with unallowed key (key_id=BBBBBBBBBBBBBBBB)`,
    );
    assert.equal(
      problems[2],
      `Failed verifying revision ${commit(10, 'unsigned', '').revision} by 'a <a@x>': unsigned (key_id=)`,
    );
    assert.deepEqual(
      await describeProblems([commit(3, 'signed', 'AAAAAAAAAAAAAAAA')], ['AAAAAAAAAAAAAAAA'], noPrimary),
      [],
    );
  });
});

describe("Argo CD's legacy check (signatureKeys beside a sourceIntegrity.git that does not cover the repository)", () => {
  const made = 'gpg: Signature made Wed Dec  2 14:18:15 2026 UTC';
  const using = 'gpg:                using EDDSA key 7F664BE755CF70A445E4596E8B2163903E439A5A';
  it('reads the first signature as parseGitCommitVerification does', () => {
    assert.deepEqual(parseVerifyCommit([made, using, 'gpg: Good signature from "a <a@x>" [ultimate]'].join('\n')), {
      result: 'Good',
      keyID: '8B2163903E439A5A',
      cipher: 'EDDSA',
      message: 'Success verifying the commit signature.',
    });
    assert.equal(
      parseVerifyCommit([made, using, 'gpg: BAD signature from "a <a@x>" [ultimate]'].join('\n')).result,
      'Bad',
    );
    assert.equal(
      parseVerifyCommit([made, using, "gpg: Can't check signature: No public key"].join('\n')).result,
      'Invalid',
    );
    assert.deepEqual(parseVerifyCommit([made, using, 'gpg: checking the trustdb'].join('\n')), {
      result: 'Unknown',
      keyID: '',
      cipher: '',
      message: 'Could not parse result of verify operation, check logs for more information.',
    });
  });
  it("words its conditions as VerifyGnuPGSignature: a revoked key's good signature is allowed", async () => {
    const good = [
      made,
      using,
      'gpg: Good signature from "a <a@x>" [ultimate]',
      'gpg: WARNING: This key has been revoked by its owner!',
    ].join('\n');
    assert.equal(await legacyProblem(good, SHA, ['8B2163903E439A5A'], noPrimary), undefined);
    assert.equal(
      await legacyProblem(good, SHA, ['0000000000000000'], noPrimary),
      'Found good signature made with EDDSA key 8B2163903E439A5A, but this key is not allowed in AppProject',
    );
    assert.equal(
      await legacyProblem([made, using, "gpg: Can't check signature: No public key"].join('\n'), SHA, [], noPrimary),
      "Found signature made with EDDSA key 8B2163903E439A5A, but verification result was invalid: 'gpg: Can't check signature: No public key'",
    );
    assert.equal(
      await legacyProblem('garbage', SHA, [], noPrimary),
      `Could not verify commit signature on revision '${SHA}', check logs for more information.`,
    );
  });
});
