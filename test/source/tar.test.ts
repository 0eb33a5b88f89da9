// The one reader of tar headers (source/tar.ts), on archives GNU tar writes in each of its formats,
// and the refusals unpacking adds to it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { SourceError } from '../../src/source/errors.ts';
import { readTgz, tarRecords } from '../../src/source/tar.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'impersync-tar-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// A path longer than a header's 100 bytes: ustar splits it into prefix and name, GNU writes an 'L'
// record before it, pax an 'x' record with its path.
const deep = `chart/${'d'.repeat(60)}/${'e'.repeat(60)}/values.schema.json`;
mkdirSync(path.join(dir, 'src', path.dirname(deep)), { recursive: true });
writeFileSync(path.join(dir, 'src', deep), '{}');
writeFileSync(path.join(dir, 'src', 'chart', 'Chart.yaml'), 'name: chart\n');

function archive(format: string): Buffer {
  return execFileSync('tar', [`--format=${format}`, '-C', path.join(dir, 'src'), '-cf', '-', 'chart'], {
    maxBuffer: 1 << 24,
  });
}

test('every format GNU tar writes: long paths whole, folders typed 5, files with their bytes', () => {
  for (const format of ['ustar', 'gnu', 'pax']) {
    const records = tarRecords(archive(format));
    assert.ok(typeof records !== 'string', `${format}: ${String(records)}`);
    const files = records.filter((r) => r.type === '0').map((r) => [r.name, r.data.toString('utf8')]);
    assert.deepEqual(
      files.sort(),
      [
        ['chart/Chart.yaml', 'name: chart\n'],
        [deep, '{}'],
      ],
      format,
    );
    assert.ok(
      records.some((r) => r.type === '5' && r.name.replace(/\/$/, '') === 'chart'),
      format,
    );
  }
});

test('an archive cut short, or with a size that is not a number, is refused, not read as a shorter one', () => {
  const one = execFileSync('tar', ['--format=ustar', '-C', path.join(dir, 'src'), '-cf', '-', 'chart/Chart.yaml']);
  // The header whole, 5 of the file's 12 bytes.
  const cut = one.subarray(0, 512 + 5);
  assert.equal(tarRecords(cut), 'a member that runs past the end of the archive');
  assert.throws(
    () => readTgz(gzipSync(cut), 'the archive', { maxBytes: 1 << 20, maxFiles: 100 }),
    (err: unknown) =>
      err instanceof SourceError &&
      err.reason === 'InvalidSource' &&
      err.message === 'the archive is not a tar archive: a member that runs past the end of the archive',
  );
  const bad = Buffer.from(one);
  bad.write('zzzzzzzzzzz\0', 124);
  assert.equal(tarRecords(bad), 'a member size that is not a number', 'the header is not quoted');
});
