// Sizes as Kubernetes quantities are written in flags and settings ("512Mi", "1Gi", "2G") or as a
// plain number of bytes.

const UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  K: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

export type ByteSize = { ok: true; bytes: number } | { ok: false; error: string };

export function parseByteSize(raw: string): ByteSize {
  const m = /^(\d+(?:\.\d+)?)([kKMGT]i?|)$/.exec(raw.trim());
  const factor = m ? UNITS[m[2] as string] : undefined;
  if (!m || factor === undefined) {
    return { ok: false, error: `'${raw}' is not a size (a number of bytes, or e.g. 512Mi, 1Gi)` };
  }
  return { ok: true, bytes: Math.floor(Number(m[1]) * factor) };
}
