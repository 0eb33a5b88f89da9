// Unpacking a chart archive (.tgz from a Helm repository or an OCI layer), which is tenant content:
// only regular files and folders are written, each path must stay inside the target (no absolute
// path, no `..`), symlinks, hard links and devices are refused, and the unpacked size and file
// count are limited (a gzip bomb stops at the limit). ustar, pax (`path`) and GNU long names.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { SourceError, formatBytes, unparsable } from './errors.ts';

export interface UntarLimits {
  maxBytes: number;
  maxFiles: number;
}

export interface TarEntry {
  path: string;
  data: Buffer;
}

function str(b: Buffer, start: number, len: number): string {
  const s = b.subarray(start, start + len);
  const nul = s.indexOf(0);
  return (nul < 0 ? s : s.subarray(0, nul)).toString('utf8');
}

/** One member of a tar archive: its name (long names and pax paths applied), type flag and data. */
export interface TarRecord {
  name: string;
  type: string;
  data: Buffer;
}

/** Types whose header is all there is: Go's reader gives them no data, whatever their size says. */
const HEADER_ONLY = new Set(['1', '2', '3', '4', '5', '6']);
/** Go's reader refuses a pax or GNU long-name record larger than this. */
const MAX_SPECIAL_BYTES = 1024 * 1024;

/** A numeric field as Go's archive/tar reads it (NULs and spaces trimmed, octal), or undefined when it is not one. */
function octal(b: Buffer, start: number, len: number): number | undefined {
  const field = b.subarray(start, start + len).toString('latin1');
  const t = field.replace(/^[ \0]+|[ \0]+$/g, '');
  if (t === '') return 0;
  const digits = t.split('\0')[0] as string;
  return /^[0-7]+$/.test(digits) ? Number.parseInt(digits, 8) : undefined;
}

/** A pax extended header's records, as Go's archive/tar parses them (each by its length), or why not. */
function paxRecords(data: Buffer): Map<string, string> | string {
  const bad = 'a pax record that is not well formed';
  const out = new Map<string, string>();
  for (let at = 0; at < data.length;) {
    const space = data.indexOf(0x20, at);
    const nText = space < 0 ? '' : data.subarray(at, space).toString('latin1');
    const n = /^[+-]?[0-9]+$/.test(nText) ? Number(nText) : Number.NaN;
    if (!(n >= 5) || n > data.length - at || n <= nText.length + 1) return bad;
    const rec = data.subarray(space + 1, at + n);
    if (rec[rec.length - 1] !== 0x0a) return bad;
    const eq = rec.indexOf(0x3d);
    if (eq <= 0 || rec.indexOf(0) >= 0) return bad;
    const key = rec.subarray(0, eq).toString('utf8');
    // GNU sparse files are read through a map Go's reader applies and this one does not.
    if (key.startsWith('GNU.sparse.')) return 'a sparse member';
    out.set(key, rec.subarray(eq + 1, rec.length - 1).toString('utf8'));
    at += n;
  }
  return out;
}

/**
 * The members of an uncompressed tar (ustar, GNU long names, pax `path` and `size`), in order,
 * with nothing checked but the format; or why it is not a tar the renderer reads. The one walk
 * over tar headers: unpacking (readTgz) and the schema check (helm-schema.ts) each judge the
 * members. Headers are read as Go's archive/tar (helm's reader) reads them, so that what is
 * checked here is what helm loads: sizes with NULs around them, data-less types, the last pax
 * record of a name, a GNU long name over a pax path, a global header that ends what came before.
 */
export function tarRecords(tar: Buffer): TarRecord[] | string {
  const out: TarRecord[] = [];
  let longName = '';
  let pax = new Map<string, string>();
  for (let off = 0; off + 512 <= tar.length;) {
    const h = tar.subarray(off, off + 512);
    if (h.every((x) => x === 0)) break;
    if ((h[124] ?? 0) & 0x80) return 'a member larger than 8 GiB'; // base-256 sizes
    const type = String.fromCharCode(h[156] ?? 0);
    const raw = octal(h, 124, 12);
    if (raw === undefined) return 'a member size that is not a number';
    const special = type === 'L' || type === 'K' || type === 'x' || type === 'g';
    if (special && raw > MAX_SPECIAL_BYTES) return 'a long name or pax header larger than 1 MiB';
    if (type === 'S') return 'a sparse member';
    let size = raw;
    let name = str(h, 0, 100);
    if (!special) {
      const magic = h.subarray(257, 263).toString('latin1');
      const version = h.subarray(263, 265).toString('latin1');
      let prefix = '';
      if (magic === 'ustar\0')
        prefix = h.subarray(508, 512).toString('latin1') === 'tar\0' ? str(h, 345, 131) : str(h, 345, 155);
      else if (magic === 'ustar ' && version === ' \0') {
        // GNU: no prefix, unless its times do not parse (Go then reads the field as a prefix).
        const badTime = [345, 357].some(
          (at) => h[at] !== 0 && !((h[at] ?? 0) & 0x80) && octal(h, at, 12) === undefined,
        );
        const gnuPrefix = str(h, 345, 155);
        if (badTime && [...gnuPrefix].every((c) => c.charCodeAt(0) < 0x80)) prefix = gnuPrefix;
      }
      if (prefix) name = `${prefix}/${name}`;
      const paxPath = pax.get('path');
      if (paxPath) name = paxPath;
      const paxSize = pax.get('size');
      if (paxSize) {
        if (!/^[+-]?[0-9]+$/.test(paxSize) || Number(paxSize) < 0) return 'a pax size that is not a number';
        size = Number(paxSize);
      }
      if (longName) name = longName;
    }
    const effective = type === '\0' && name.endsWith('/') ? '5' : type;
    if (HEADER_ONLY.has(effective)) size = 0;
    if (off + 512 + size > tar.length) return 'a member that runs past the end of the archive';
    const data = tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === 'L' || type === 'K') {
      if (type === 'L') longName = str(data, 0, data.length);
      continue;
    }
    if (type === 'x' || type === 'g') {
      const records = paxRecords(data);
      if (typeof records === 'string') return records;
      // A global header is a member of its own to Go's reader: what came before it applies to nothing.
      if (type === 'g') {
        longName = '';
        pax = new Map();
      } else pax = records;
      continue;
    }
    longName = '';
    pax = new Map();
    out.push({ name, type: effective, data });
  }
  return out;
}

/** The regular files of a gzipped tar, their paths checked; `what` names it in messages. */
export function readTgz(archive: Buffer, what: string, limits: UntarLimits): TarEntry[] {
  let tar: Buffer;
  try {
    tar = gunzipSync(archive, { maxOutputLength: limits.maxBytes + 1024 * 1024 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_BUFFER_TOO_LARGE' || /Cannot create a Buffer larger|maxOutputLength/.test((err as Error).message))
      throw new SourceError(
        'TooLarge',
        `${what} unpacks to more than the renderer's limit of ${formatBytes(limits.maxBytes)}`,
      );
    throw unparsable(what, 'a gzipped tar archive', archive.length);
  }
  const records = tarRecords(tar);
  if (typeof records === 'string') throw new SourceError('InvalidSource', `${what} is not a tar archive: ${records}`);
  const out: TarEntry[] = [];
  let total = 0;
  for (const { name, type, data: body } of records) {
    const size = body.length;
    if (type === '5') continue;
    if (type !== '0' && type !== '\0' && type !== '7') {
      const kind = type === '2' ? 'a symlink' : type === '1' ? 'a hard link' : `an entry of type '${type}'`;
      throw new SourceError('InvalidSource', `${what} holds ${kind} (${name}), which the renderer does not unpack`);
    }
    const clean = path.posix.normalize(name.replace(/^\.\/+/, ''));
    if (clean === '' || clean === '.' || path.posix.isAbsolute(clean) || clean === '..' || clean.startsWith('../')) {
      throw new SourceError('InvalidSource', `${what} holds a path outside the archive: '${name}'`);
    }
    total += size;
    if (total > limits.maxBytes)
      throw new SourceError(
        'TooLarge',
        `${what} unpacks to more than the renderer's limit of ${formatBytes(limits.maxBytes)}`,
      );
    if (out.length >= limits.maxFiles)
      throw new SourceError('TooLarge', `${what} holds more than the renderer's limit of ${limits.maxFiles} files`);
    out.push({ path: clean, data: Buffer.from(body) });
  }
  return out;
}

/** Writes entries under `dir` (which must exist); `strip` leading path components are dropped. */
export async function writeEntries(dir: string, entries: readonly TarEntry[], strip = 0): Promise<void> {
  for (const e of entries) {
    const rel = e.path.split('/').slice(strip).join('/');
    if (rel === '') continue;
    const target = path.join(dir, rel);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, e.data, { mode: 0o644 });
  }
}
