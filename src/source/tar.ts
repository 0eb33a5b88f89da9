// Unpacking a chart archive (.tgz from a Helm repository or an OCI layer), which is tenant content:
// only regular files and folders are written, each path must stay inside the target (no absolute
// path, no `..`), symlinks, hard links and devices are refused, and the unpacked size and file
// count are limited (a gzip bomb stops at the limit). ustar, pax (`path`) and GNU long names.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { SourceError, formatBytes } from './errors.ts';

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

/**
 * The members of an uncompressed tar (ustar, GNU long names, pax `path`), in order, with nothing
 * checked but the format; or why it is not a tar the renderer reads. The one walk over tar
 * headers: unpacking (readTgz) and the schema check (helm-schema.ts) each judge the members.
 */
export function tarRecords(tar: Buffer): TarRecord[] | string {
  const out: TarRecord[] = [];
  let longName: string | undefined;
  for (let off = 0; off + 512 <= tar.length;) {
    const h = tar.subarray(off, off + 512);
    if (h.every((x) => x === 0)) break;
    if ((h[124] ?? 0) & 0x80) return 'a member larger than 8 GiB'; // base-256 sizes
    const sizeText = str(h, 124, 12).trim();
    const size = sizeText === '' ? 0 : Number.parseInt(sizeText, 8);
    if (!Number.isInteger(size) || size < 0) return `a member size that is not a number ('${sizeText}')`;
    if (off + 512 + size > tar.length) return 'a member that runs past the end of the archive';
    const data = tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    const type = String.fromCharCode(h[156] ?? 0);
    if (type === 'L') {
      longName = str(data, 0, data.length);
      continue;
    }
    if (type === 'x') {
      longName = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(data.toString('utf8'))?.[1] ?? longName;
      continue;
    }
    if (type === 'g') continue;
    const prefix = h.subarray(257, 262).toString('latin1') === 'ustar' ? str(h, 345, 155) : '';
    const name = longName ?? (prefix ? `${prefix}/${str(h, 0, 100)}` : str(h, 0, 100));
    longName = undefined;
    out.push({ name, type, data });
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
    throw new SourceError('InvalidSource', `${what} is not a gzipped tar archive: ${(err as Error).message}`);
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
