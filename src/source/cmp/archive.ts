// The app's repository as Argo CD's repo-server streams it to a plugin (util/cmp/stream.go,
// util/io/files/tar.go): a tar.gz of the checkout's root with folders, regular files (their mode
// kept) and symlinks as links, never followed. Tenant content, so it is bounded: files and bytes
// are counted as they are read, a link whose target leaves the repository is refused (the
// cmp-server's untar would refuse it too), and FIFOs, sockets and devices are left out, as Argo
// CD's supportedFileMode does.
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { SourceError } from '../errors.ts';
import { formatBytes } from '../limits.ts';
import { goMatch } from '../generate-paths.ts';

export interface ArchiveLimits {
  maxFiles: number;
  maxBytes: number;
}

export interface RepoArchive {
  tgz: Buffer;
  /** sha256 of tgz, hex: what ManifestRequestMetadata.checksum carries. */
  checksum: string;
  files: number;
}

/** Chunks of the archive for AppStreamRequest.file (Argo CD's default is 1 KiB; any size is read). */
export function* chunksOf(tgz: Buffer, size = 64 * 1024): Generator<Buffer> {
  for (let i = 0; i < tgz.length; i += size) yield tgz.subarray(i, i + size);
}

/**
 * Argo CD's matchesExclusionPattern for --plugin-tar-exclude: a glob with a `/` is matched against
 * the path from the root with `**` for any number of folders (doublestar), one without against the
 * whole path as Go's filepath.Match (so `*.md` leaves out top-level files only).
 */
export function excluded(globs: readonly string[], relativePath: string): boolean {
  return globs.some((g) => (g.includes('/') ? doublestarMatch(g, relativePath) : goMatch(g, relativePath)));
}

function doublestarMatch(pattern: string, name: string): boolean {
  const match = (p: string[], n: string[]): boolean => {
    if (p.length === 0) return n.length === 0;
    const [head, ...rest] = p as [string, ...string[]];
    if (head === '**') {
      for (let i = 0; i <= n.length; i++) if (match(rest, n.slice(i))) return true;
      return false;
    }
    return n.length > 0 && goMatch(head, n[0] as string) && match(rest, n.slice(1));
  };
  return match(pattern.split('/'), name.split('/'));
}

export async function archiveRepository(
  root: string,
  limits: ArchiveLimits,
  exclusions: readonly string[] = [],
): Promise<RepoArchive> {
  const blocks: Buffer[] = [];
  let files = 0;
  let bytes = 0;
  const walk = async (rel: string): Promise<void> => {
    const names = (await readdir(path.join(root, rel))).sort();
    for (const name of names) {
      const entry = rel === '' ? name : `${rel}/${name}`;
      // A folder excluded is not walked (Argo CD's SkipDir); a file excluded is not sent.
      if (exclusions.length > 0 && excluded(exclusions, entry)) continue;
      const full = path.join(root, entry);
      const info = await lstat(full);
      if (info.isDirectory()) {
        blocks.push(header(`${entry}/`, '5', info.mode, 0));
        await walk(entry);
      } else if (info.isSymbolicLink()) {
        const target = await readlink(full);
        const resolved = path.relative(root, path.resolve(path.dirname(full), target));
        if (path.isAbsolute(target) || resolved === '..' || resolved.startsWith(`..${path.sep}`)) {
          throw new SourceError('InvalidSource', `symlink '${entry}' leads outside the repository`);
        }
        blocks.push(header(entry, '2', info.mode, 0, target));
      } else if (info.isFile()) {
        if (++files > limits.maxFiles) {
          throw new SourceError(
            'TooLarge',
            `the repository has more than ${limits.maxFiles} files to send to the plugin`,
          );
        }
        if ((bytes += info.size) > limits.maxBytes) {
          throw new SourceError(
            'TooLarge',
            `the repository's files are more than the ${formatBytes(limits.maxBytes)} the renderer sends to a plugin`,
          );
        }
        const data = await readNoFollow(full, info.size);
        blocks.push(header(entry, '0', info.mode, data.length), data, Buffer.alloc((512 - (data.length % 512)) % 512));
      }
    }
  };
  await walk('');
  blocks.push(Buffer.alloc(1024));
  const tgz = gzipSync(Buffer.concat(blocks));
  return { tgz, checksum: createHash('sha256').update(tgz).digest('hex'), files };
}

/** A regular file's bytes, opened without following a link, no more than the size lstat gave. */
async function readNoFollow(file: string, size: number): Promise<Buffer> {
  const fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (!(await fh.stat()).isFile()) throw new SourceError('InvalidSource', `'${file}' is not a regular file`);
    const buf = Buffer.alloc(size);
    const { bytesRead } = await fh.read(buf, 0, size, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** A ustar header, preceded by a pax header when a name does not fit ustar's fields. */
function header(name: string, type: string, mode: number, size: number, link = ''): Buffer {
  const fits = (s: string, n: number) => Buffer.byteLength(s) <= n && /^[\x20-\x7e]*$/.test(s);
  const blocks: Buffer[] = [];
  if (!fits(name, 100) || !fits(link, 100)) {
    const records = [record('path', name), ...(link ? [record('linkpath', link)] : [])].join('');
    const body = Buffer.from(records, 'utf8');
    blocks.push(ustar('PaxHeader', 'x', 0o644, body.length, ''), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(ustar(name.slice(0, 100), type, mode & 0o7777, size, link.slice(0, 100)));
  return Buffer.concat(blocks);
}

/** A pax record: its own length counts its length's digits. */
function record(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(rest);
  while (String(len).length + Buffer.byteLength(rest) !== len) len = String(len).length + Buffer.byteLength(rest);
  return `${len}${rest}`;
}

function ustar(name: string, type: string, mode: number, size: number, link: string): Buffer {
  const b = Buffer.alloc(512);
  const octal = (value: number, at: number, width: number) =>
    b.write(`${value.toString(8).padStart(width - 1, '0')}\0`, at, width, 'ascii');
  b.write(name, 0, 100, 'utf8');
  octal(mode, 100, 8);
  octal(0, 108, 8);
  octal(0, 116, 8);
  octal(size, 124, 12);
  octal(0, 136, 12);
  b.write(type, 156, 1, 'ascii');
  b.write(link, 157, 100, 'utf8');
  b.write('ustar\0', 257, 6, 'ascii');
  b.write('00', 263, 2, 'ascii');
  b.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return b;
}
