// What the renderer remembers of repositories in its own memory, beside the answer cache: the refs
// a Git server listed, the tags an OCI registry listed, the Helm indexes parsed, the folder listings
// of commits (the folder-content key) and the commits refused. Each is a ByteLru, so each is bounded
// by its bytes whatever tenants' servers send; this is how one total (the renderer's
// --metadata-cache) is shared between them, so that the memory budget can set the total aside
// whole (renderer/memory.ts).

/** The total by default: 128 MiB of Helm indexes, 64 of refs, 64 of tags, 32 of listings and refusals. */
export const DEFAULT_METADATA_CACHE_BYTES = 288 * 1024 * 1024;

export interface MetadataCacheSizes {
  helmIndexBytes: number;
  refsBytes: number;
  tagsBytes: number;
  listingBytes: number;
  refusedBytes: number;
}

/** `totalBytes` shared out in ninths (Helm indexes 4, refs 2, tags 2, listings 1, a 32nd of it for refusals); the parts never add up to more. */
export function metadataCacheSizes(totalBytes: number): MetadataCacheSizes {
  const total = Math.max(0, Math.floor(totalBytes));
  const ninth = total / 9;
  const helmIndexBytes = Math.floor(4 * ninth);
  const refsBytes = Math.floor(2 * ninth);
  const tagsBytes = Math.floor(2 * ninth);
  const rest = total - helmIndexBytes - refsBytes - tagsBytes;
  const refusedBytes = Math.floor(rest / 32);
  return { helmIndexBytes, refsBytes, tagsBytes, listingBytes: rest - refusedBytes, refusedBytes };
}
