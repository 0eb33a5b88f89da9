// The worker thread that parses a Helm repository's index.yaml for helm-index.ts. The index is
// tenant content (a repoURL names the server) and can be tens of MiB: parsed here, under the heap
// limit the thread was started with, it cannot hold the renderer's event loop or memory.
import { parentPort } from 'node:worker_threads';
import { load } from 'js-yaml';
import type { ChartVersion } from './helm-repo.ts';

export type IndexRequest = { text: Uint8Array; maxBytes: number };
export type IndexReply =
  { ok: true; entries: Array<[string, ChartVersion[]]>; bytes: number } | { ok: false; tooLarge?: boolean };

/** What a remembered version costs besides its strings (the objects, the array slots). */
const VERSION_OVERHEAD_BYTES = 96;
/** What a string costs besides its characters (its header, the slot that holds it). */
const STRING_OVERHEAD_BYTES = 24;

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
  } catch {
    // Not its message: js-yaml quotes the lines around the error, and the index is any server's answer.
    port.postMessage({ ok: false } satisfies IndexReply);
    return;
  }
  const entries = (doc as { entries?: unknown } | null)?.entries;
  const out: Array<[string, ChartVersion[]]> = [];
  // What the index will cost the renderer to remember, and to receive: the structured clone of the
  // reply copies a string once for each place it is in, however many aliases of one string the
  // YAML made (strings are two bytes a character).
  let bytes = 0;
  const cost = (s: string | undefined) => (s === undefined ? 0 : STRING_OVERHEAD_BYTES + 2 * s.length);
  if (entries && typeof entries === 'object') {
    for (const [name, list] of Object.entries(entries as Record<string, unknown>)) {
      if (!Array.isArray(list)) continue;
      bytes += cost(name) + VERSION_OVERHEAD_BYTES;
      const versions: ChartVersion[] = [];
      for (const e of list as Array<{ version?: unknown; urls?: unknown; digest?: unknown }>) {
        if (typeof e?.version !== 'string') continue;
        // Only the first URL is downloaded (helm-repo.ts), so only it is kept: an alias of a list of
        // a million URLs under every version is one URL each.
        const url = Array.isArray(e.urls) ? e.urls.find((u): u is string => typeof u === 'string') : undefined;
        const v = {
          version: e.version,
          urls: url === undefined ? [] : [url],
          digest: typeof e.digest === 'string' ? e.digest : undefined,
        };
        bytes += VERSION_OVERHEAD_BYTES + cost(v.version) + cost(v.digest) + cost(url);
        if (bytes > req.maxBytes) {
          port.postMessage({ ok: false, tooLarge: true } satisfies IndexReply);
          return;
        }
        versions.push(v);
      }
      out.push([name, versions]);
    }
  }
  port.postMessage({ ok: true, entries: out, bytes } satisfies IndexReply);
});
