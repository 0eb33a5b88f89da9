// The worker thread that parses a Helm repository's index.yaml for helm-index.ts. The index is
// tenant content (a repoURL names the server) and can be tens of MiB: parsed here, under the heap
// limit the thread was started with, it cannot hold the renderer's event loop or memory.
import { parentPort } from 'node:worker_threads';
import { load } from 'js-yaml';
import type { ChartVersion } from './helm-repo.ts';

export type IndexRequest = { text: Uint8Array };
export type IndexReply =
  { ok: true; entries: Array<[string, ChartVersion[]]>; bytes: number } | { ok: false; error: string };

/** What a remembered version costs besides its characters (the objects, the array slots). */
const VERSION_OVERHEAD_BYTES = 96;

const port = parentPort;
if (!port) throw new Error('helm-index-worker.ts runs as a worker thread');

port.once('message', (req: IndexRequest) => {
  let doc: unknown;
  try {
    // js-yaml rather than the yaml package used for manifests: on an index of 100,000 charts it
    // takes a seventh of the time and a quarter of the memory. `json: true` keeps the last of two
    // equal keys, as Helm's reader does. Aliases are references to one value, never copies, so
    // an alias bomb costs what its text costs.
    doc = load(new TextDecoder().decode(req.text), { json: true });
  } catch (err) {
    port.postMessage({ ok: false, error: (err as Error).message } satisfies IndexReply);
    return;
  }
  const entries = (doc as { entries?: unknown } | null)?.entries;
  const out: Array<[string, ChartVersion[]]> = [];
  // What the index will cost the renderer to remember (strings are two bytes a character).
  let bytes = 0;
  if (entries && typeof entries === 'object') {
    for (const [name, list] of Object.entries(entries as Record<string, unknown>)) {
      if (!Array.isArray(list)) continue;
      const versions = list.flatMap((e: { version?: unknown; urls?: unknown; digest?: unknown }) =>
        typeof e?.version === 'string'
          ? [
              {
                version: e.version,
                urls: Array.isArray(e.urls) ? e.urls.filter((u): u is string => typeof u === 'string') : [],
                digest: typeof e.digest === 'string' ? e.digest : undefined,
              },
            ]
          : [],
      );
      bytes += name.length * 2 + VERSION_OVERHEAD_BYTES;
      for (const v of versions)
        bytes +=
          VERSION_OVERHEAD_BYTES +
          2 * (v.version.length + (v.digest?.length ?? 0) + v.urls.reduce((n, u) => n + u.length, 0));
      out.push([name, versions]);
    }
  }
  port.postMessage({ ok: true, entries: out, bytes } satisfies IndexReply);
});
