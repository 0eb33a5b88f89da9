// The messages of Argo CD's plugin.ConfigManagementPluginService (cmpserver/plugin/plugin.proto,
// v3.6.1), written from the .proto by hand: the protocol is six small messages, so a protobuf
// encoder of their field types (string, bytes, bool, int64, nested, repeated) is shorter and
// easier to bound than a code generator. Unknown fields are skipped, as protobuf readers must.

/** A protobuf field: its number, and a value of one of the wire types used here. */
type Field = [number, string | Uint8Array | boolean | number | Buffer];

function varint(n: number | bigint): Buffer {
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n; // int64 negatives are ten bytes of two's complement
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return Buffer.from(out);
}

/** One message's bytes; empty strings, false and zero are left out, as proto3 does. */
export function encode(fields: readonly Field[]): Buffer {
  const parts: Buffer[] = [];
  for (const [no, value] of fields) {
    if (typeof value === 'boolean' || typeof value === 'number') {
      if (value === false || value === 0) continue;
      parts.push(varint(no << 3), varint(value === true ? 1 : value));
      continue;
    }
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value);
    if (typeof value === 'string' && bytes.length === 0) continue;
    parts.push(varint((no << 3) | 2), varint(bytes.length), bytes);
  }
  return Buffer.concat(parts);
}

/** A message's fields in order: varints as bigint, length-delimited ones as their bytes. */
export function decode(buf: Uint8Array): Array<[number, bigint | Buffer]> {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: Array<[number, bigint | Buffer]> = [];
  let i = 0;
  const readVarint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (i >= b.length || shift > 63n) throw new Error('truncated or overlong varint');
      const byte = b[i++] as number;
      v |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return v;
    }
  };
  while (i < b.length) {
    const key = readVarint();
    const no = Number(key >> 3n);
    switch (Number(key & 7n)) {
      case 0:
        out.push([no, readVarint()]);
        break;
      case 1:
        i += 8;
        break;
      case 2: {
        const len = Number(readVarint());
        if (i + len > b.length) throw new Error('a field runs past the end of the message');
        out.push([no, b.subarray(i, i + len)]);
        i += len;
        break;
      }
      case 5:
        i += 4;
        break;
      default:
        throw new Error(`unsupported wire type in field ${no}`);
    }
  }
  if (i > b.length) throw new Error('a fixed-size field runs past the end of the message');
  return out;
}

const str = (v: bigint | Buffer): string => (Buffer.isBuffer(v) ? v.toString('utf8') : '');
const bool = (v: bigint | Buffer): boolean => typeof v === 'bigint' && v !== 0n;

export interface ManifestRequestMetadata {
  appName: string;
  appRelPath: string;
  /** sha256 of the whole tar.gz, hex: the cmp-server refuses a stream that does not match. */
  checksum: string;
  size: number;
  env: ReadonlyArray<{ name: string; value: string }>;
}

/** AppStreamRequest{metadata = 1}. */
export function metadataRequest(m: ManifestRequestMetadata): Buffer {
  const meta = encode([
    [1, m.appName],
    [2, m.appRelPath],
    [3, m.checksum],
    [4, m.size],
    ...m.env.map((e): Field => [
      5,
      encode([
        [1, e.name],
        [2, e.value],
      ]),
    ]),
  ]);
  return encode([[1, meta]]);
}

/** AppStreamRequest{file = 2 {chunk = 1}}. */
export function fileRequest(chunk: Uint8Array): Buffer {
  return encode([[2, encode([[1, chunk]])]]);
}

export interface ManifestResponse {
  manifests: string[];
  sourceType: string;
}

export function decodeManifestResponse(buf: Buffer): ManifestResponse {
  const out: ManifestResponse = { manifests: [], sourceType: '' };
  for (const [no, v] of decode(buf)) {
    if (no === 1) out.manifests.push(str(v));
    else if (no === 2) out.sourceType = str(v);
  }
  return out;
}

export interface RepositoryResponse {
  isSupported: boolean;
  isDiscoveryEnabled: boolean;
}

export function decodeRepositoryResponse(buf: Buffer): RepositoryResponse {
  const out = { isSupported: false, isDiscoveryEnabled: false };
  for (const [no, v] of decode(buf)) {
    if (no === 1) out.isSupported = bool(v);
    else if (no === 2) out.isDiscoveryEnabled = bool(v);
  }
  return out;
}

export interface PluginConfiguration {
  isDiscoveryConfigured: boolean;
  provideGitCreds: boolean;
}

export function decodeCheckPluginConfigurationResponse(buf: Buffer): PluginConfiguration {
  const out = { isDiscoveryConfigured: false, provideGitCreds: false };
  for (const [no, v] of decode(buf)) {
    if (no === 1) out.isDiscoveryConfigured = bool(v);
    else if (no === 2) out.provideGitCreds = bool(v);
  }
  return out;
}

/** repository.ParameterAnnouncement (reposerver/repository/repository.proto). */
export interface ParameterAnnouncement {
  name: string;
  title?: string;
  tooltip?: string;
  required?: boolean;
  itemType?: string;
  collectionType?: string;
  string?: string;
  array?: string[];
  map?: Record<string, string>;
}

export function decodeParametersAnnouncementResponse(buf: Buffer): ParameterAnnouncement[] {
  const out: ParameterAnnouncement[] = [];
  for (const [no, v] of decode(buf)) {
    if (no !== 1 || !Buffer.isBuffer(v)) continue;
    const p: ParameterAnnouncement = { name: '' };
    for (const [f, x] of decode(v)) {
      if (f === 1) p.name = str(x);
      else if (f === 2) p.title = str(x);
      else if (f === 3) p.tooltip = str(x);
      else if (f === 4) p.required = bool(x);
      else if (f === 5) p.itemType = str(x);
      else if (f === 6) p.collectionType = str(x);
      else if (f === 7) p.string = str(x);
      else if (f === 8) (p.array ??= []).push(str(x));
      else if (f === 9 && Buffer.isBuffer(x)) {
        // A map entry is a message {key = 1, value = 2}; written into a prototype-less record.
        let key = '';
        let value = '';
        for (const [k, y] of decode(x)) {
          if (k === 1) key = str(y);
          else if (k === 2) value = str(y);
        }
        (p.map ??= Object.create(null) as Record<string, string>)[key] = value;
      }
    }
    out.push(p);
  }
  return out;
}
