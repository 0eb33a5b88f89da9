// Parses Helm repositories' index.yaml off the renderer's event loop (helm-index-worker.ts): one
// worker thread per index, under a heap limit and a time limit, at most `concurrency` at once. An
// index that needs more is a clear error naming the repository; the renderer goes on answering
// the other Applications meanwhile.
import { Worker } from 'node:worker_threads';
import { SourceError, formatBytes, unparsable } from './errors.ts';
import type { ChartVersion } from './helm-repo.ts';
import type { IndexReply, IndexRequest } from './helm-index-worker.ts';

export interface IndexParseLimits {
  /** Heap of the thread that parses one index. Default 512 MiB (a 16 MiB index needs about 200). */
  heapBytes: number;
  /** Time one parse may take. Default 60 s. */
  timeoutMs: number;
  /** Indexes parsed at once. Default 2. */
  concurrency: number;
  /** What one parsed index may cost the renderer (counted as the worker counts it). Default 256 MiB. */
  maxResultBytes: number;
}

export const DEFAULT_INDEX_PARSE_LIMITS: IndexParseLimits = {
  heapBytes: 512 * 1024 * 1024,
  timeoutMs: 60_000,
  concurrency: 2,
  maxResultBytes: 256 * 1024 * 1024,
};

const WORKER_URL = new URL(`./helm-index-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

export class IndexParser {
  readonly #limits: IndexParseLimits;
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(limits: Partial<IndexParseLimits> = {}) {
    this.#limits = { ...DEFAULT_INDEX_PARSE_LIMITS, ...limits };
  }

  /** The index's charts and their versions, and about what they take in memory; `what` names the repository in errors. */
  async parse(body: Uint8Array, what: string): Promise<{ index: Map<string, ChartVersion[]>; bytes: number }> {
    if (this.#running >= this.#limits.concurrency) await new Promise<void>((r) => this.#waiting.push(r));
    this.#running++;
    try {
      const { entries, bytes } = await this.#run(body, what);
      return { index: new Map(entries), bytes };
    } finally {
      this.#running--;
      this.#waiting.shift()?.();
    }
  }

  #run(body: Uint8Array, what: string): Promise<{ entries: Array<[string, ChartVersion[]]>; bytes: number }> {
    const heapMb = Math.max(16, Math.floor(this.#limits.heapBytes / (1024 * 1024)));
    const worker = new Worker(WORKER_URL, {
      resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: Math.min(64, heapMb / 8) },
      env: {},
      stdout: false,
      stderr: false,
    });
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        void worker.terminate();
        outcome();
      };
      const timer = setTimeout(
        () =>
          finish(() =>
            reject(
              new SourceError(
                'Timeout',
                `${what}: index.yaml took longer than ${shownMs(this.#limits.timeoutMs)} to parse`,
              ),
            ),
          ),
        this.#limits.timeoutMs,
      );
      worker.once('message', (reply: IndexReply) =>
        finish(() =>
          reply.ok
            ? resolve({ entries: reply.entries, bytes: reply.bytes })
            : reply.tooLarge
              ? reject(
                  new SourceError(
                    'TooLarge',
                    `${what}: index.yaml holds more than the renderer's limit of ${formatBytes(this.#limits.maxResultBytes)} once parsed`,
                  ),
                )
              : reject(unparsable(`the index.yaml of ${what}`, 'YAML', body.length)),
        ),
      );
      worker.once('error', (err: Error & { code?: string }) =>
        finish(() =>
          reject(
            err.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? new SourceError('TooLarge', `${what}: index.yaml needs more than the renderer's ${heapMb} MiB to parse`)
              : new SourceError('Unexpected', `${what}: parsing index.yaml failed: ${err.message}`),
          ),
        ),
      );
      worker.once('exit', (code) =>
        finish(() => reject(new SourceError('Unexpected', `${what}: the index.yaml parser exited (${code})`))),
      );
      // A copy of its own, moved to the thread rather than copied again.
      const text = new Uint8Array(body);
      worker.postMessage({ text, maxBytes: this.#limits.maxResultBytes } satisfies IndexRequest, [text.buffer]);
    });
  }
}

function shownMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
