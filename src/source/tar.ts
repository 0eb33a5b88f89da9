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

function octal(b: Buffer, start: number, len: number): number {
  const t = str(b, start, len).trim();
  return t === '' ? 0 : Number.parseInt(t, 8);
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
  const out: TarEntry[] = [];
  let total = 0;
  let longName: string | undefined;
  let paxPath: string | undefined;
  for (let off = 0; off + 512 <= tar.length;) {
    const h = tar.subarray(off, off + 512);
    if (h.every((x) => x === 0)) break;
    const size = octal(h, 124, 12);
    const type = String.fromCharCode(h[156] ?? 0);
    const body = tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === 'L') {
      longName = str(body, 0, body.length);
      continue;
    }
    if (type === 'x') {
      const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString('utf8'));
      paxPath = m?.[1];
      continue;
    }
    if (type === 'g') continue;
    const prefix = str(h, 345, 155);
    const name = longName ?? paxPath ?? (prefix ? `${prefix}/${str(h, 0, 100)}` : str(h, 0, 100));
    longName = paxPath = undefined;
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
