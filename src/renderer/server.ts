// The renderer process's HTTP server (protocol.ts): the only way tenant content is turned into
// objects. It holds no Kubernetes credential and is given none (ARCHITECTURE.md, the credential
// rule): it reads a request, checks its token, renders with source/ and answers.
//
// Every request is hostile input: its body is size-capped and parsed with a strict schema, a wrong
// token is refused before anything is read of it, and renders run a bounded number at a time (the
// rest wait in a bounded queue; past it, 503), the slots shared fairly between tenants (slots.ts).
// A render that runs past its time limit (the renderer's, or the lower one of its Application) is
// answered with a Timeout error at the limit; what it left running (a git fetch) keeps its slot
// until its own time limit stops it, so an overloaded renderer queues instead of piling up work.
// The answer is over the Application's limits of objects and bytes (answer.ts) or it is sent.
//
// Memory (memory.ts): a request's slot comes with the bytes it may hold in the renderer's memory
// budget, in its tenant's turn (slots.ts), and only then does it start (its time limit too); a
// request that could never fit is refused at once, naming its Application and the sizes. GET
// /v1/budget tells the controller who waits for memory and what holds it.
//
// Answers are cached by input and commit (as Argo CD's repo-server caches manifests by revision):
// a refresh of an unchanged Application costs a `git ls-remote` and no render. `noCache` (a hard
// refresh) renders again.
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { NeedsRepositories, SourceError } from '../source/errors.ts';
import type { RefSource, RenderInput, SourceRenderer } from '../source/index.ts';
import { overTimeLimit } from '../source/render.ts';
import { BudgetExceededError, type BudgetStats } from './budget.ts';
import { neverFits, type RendererMemory } from './memory.ts';
import {
  BUDGET_PATH,
  MAX_REQUEST_BYTES,
  RENDER_PATH,
  RESOLVE_PATH,
  RenderRequestSchema,
  ResolveRequestSchema,
  type BudgetAnswer,
  type ErrorAnswer,
  type NeedsAnswer,
} from './protocol.ts';
import { AnswerCache } from './answer-cache.ts';
import { encodeAnswer, overApplicationLimits, withRevision, type EncodedAnswer } from './answer.ts';
import { appFilesHaveChanged } from '../source/generate-paths.ts';
import { APPLICATION_LIMIT_KEYS } from '../api/limits.ts';
import { RenderSlots } from './slots.ts';
import { ANSWER_CONTENT_TYPE, type RequestLimits } from './protocol.ts';

export interface RendererServerOptions {
  renderer: SourceRenderer;
  /** The token a request must carry; undefined while there is none yet (not ready: every request 503). */
  token: () => string | undefined;
  logger: Logger;
  /** Requests rendered at once. Default 8. */
  maxConcurrent?: number;
  /** Requests waiting for a slot before new ones are refused with 503. Default 1000. */
  maxQueued?: number;
  /** A request's time limit, from when it starts rendering. Default 180 s. */
  renderTimeoutMs?: number;
  /** Bytes of answers kept for unchanged inputs. Default 256 MiB; 0 turns the cache off. */
  cacheBytes?: number;
  /** The memory budget requests are admitted by (memory.ts); none: no admission by memory. */
  memory?: RendererMemory;
}

export interface RendererServer {
  /** `host:port` or the socket path it listens on. */
  readonly address: string;
  close(): Promise<void>;
}

/** An answer: JSON, except the plain-text probes and a render's objects (NDJSON). */
type Answer = { status: number; body: Buffer | string; type?: 'text' | 'ndjson' };

export function rendererHandler(
  opts: RendererServerOptions,
): http.RequestListener & { stats: RendererStats; budgetStats: () => BudgetStats | undefined } {
  const maxConcurrent = opts.maxConcurrent ?? 8;
  const maxQueued = opts.maxQueued ?? 1000;
  const timeoutMs = opts.renderTimeoutMs ?? 180_000;
  const cache = new AnswerCache(opts.cacheBytes ?? 256 * 1024 * 1024);
  const memory = opts.memory;
  const slots = new RenderSlots(
    maxConcurrent,
    maxQueued,
    Date.now,
    memory ? { budget: memory.budget, largest: memory.renderHold(undefined) } : undefined,
  );
  const counts = { renders: 0, cacheHits: 0 };
  const stats: RendererStats = {
    get renders() {
      return counts.renders;
    },
    get cacheHits() {
      return counts.cacheHits;
    },
    get running() {
      return slots.stats.running;
    },
    get queued() {
      return slots.stats.queued;
    },
  };

  const render = async (input: RenderInput, noCache: boolean, limits: RequestLimits | undefined): Promise<Answer> => {
    const deadline = Date.now() + timeLimit(limits).ms;
    const revision = await opts.renderer.resolveRevision(input);
    // The commits of the ref sources too: a moved `$values` branch is a new render, not a cached one.
    const resolved = input.refSources ? { ...input, refSources: await resolvedRefSources(input) } : input;
    const key = cacheKey(resolved, revision);
    let answer = noCache ? undefined : cache.get(key);
    if (!answer && !noCache) answer = await unchangedAnswer(resolved, revision);
    // A plain folder whose files another commit held as they are now: that commit's answer, under
    // this one (a monorepo's commit re-renders only the folders it changed).
    let byFolder: string | undefined;
    let reused = false;
    if (!answer && opts.cacheBytes !== 0) {
      const folder = await opts.renderer.folderKey(resolved, revision, deadline);
      byFolder = folder === undefined ? undefined : folderCacheKey(resolved, folder);
      const same = byFolder !== undefined && !noCache ? cache.get(byFolder) : undefined;
      if (same) {
        answer = withRevision(same, revision);
        cache.set(key, answer);
        reused = true;
      }
    }
    // Which refresh rendered and which reused an answer (the hard-refresh tests read these lines).
    opts.logger.debug(
      { application: input.appName, revision, cached: answer !== undefined, ...(reused ? { sameFolder: true } : {}) },
      'render answered',
    );
    if (answer) counts.cacheHits++;
    else {
      counts.renders++;
      const result = await opts.renderer.render({ ...resolved, revision }, { deadline, timeLimit: timeLimit(limits) });
      answer = encodeAnswer(result);
      // Kept once, named by both keys when the folder's content names it too.
      if (byFolder !== undefined && result.sourceType === 'Directory') {
        cache.set(byFolder, answer);
        cache.alias(key, byFolder);
      } else cache.set(key, answer);
    }
    const over = overApplicationLimits(answer, limits, input.source);
    if (over) throw over;
    return { status: 200, body: answer.body, type: 'ndjson' };
  };

  /**
   * manifest-generate-paths, as Argo CD's UpdateRevisionForPaths: when the new commit changes no file
   * under the paths, the previous commit's cached answer is the new one's (under the new revision),
   * even where a file elsewhere would render differently. Ref sources: rendered anew (not compared).
   */
  const unchangedAnswer = async (input: RenderInput, revision: string): Promise<EncodedAnswer | undefined> => {
    const g = input.generatePaths;
    if (!g || g.paths.length === 0 || g.syncedRevision === revision || input.refSources) return undefined;
    const previous = cache.get(cacheKey(input, g.syncedRevision));
    // Not cached (Argo CD's "manifest cache miss"): generated at the new commit.
    if (!previous) return undefined;
    const files = await opts.renderer.changedFiles(input, g.syncedRevision, revision);
    if (files === undefined || (files.length > 0 && appFilesHaveChanged(g.paths, files))) return undefined;
    opts.logger.debug(
      { application: input.appName, from: g.syncedRevision, to: revision },
      'manifest cache moved: no change under manifest-generate-paths',
    );
    const moved = withRevision(previous, revision);
    cache.set(cacheKey(input, revision), moved);
    return moved;
  };

  /** Each ref source at the commit its targetRevision names now. */
  const resolvedRefSources = async (input: RenderInput): Promise<Record<string, RefSource>> => {
    const out: Record<string, RefSource> = {};
    for (const [name, ref] of Object.entries(input.refSources ?? {})) {
      const targetRevision = await opts.renderer.resolveRevision({
        source: { repoURL: ref.repoURL, ...(ref.targetRevision ? { targetRevision: ref.targetRevision } : {}) },
        repository: ref.repository,
        revisionMaxAgeMs: input.revisionMaxAgeMs,
      });
      out[name] = { ...ref, targetRevision };
    }
    return out;
  };

  /** The time limit of a request: the renderer's, or its Application's when that is lower. */
  const timeLimit = (limits: RequestLimits | undefined): { ms: number; setBy?: string } =>
    limits?.renderTimeoutMs !== undefined && limits.renderTimeoutMs < timeoutMs
      ? { ms: limits.renderTimeoutMs, setBy: `argocd-cm ${APPLICATION_LIMIT_KEYS.renderTimeout}` }
      : { ms: timeoutMs };

  const budgetAnswer = (): BudgetAnswer => {
    const budget = memory?.budget;
    if (!budget) return { capacity: 0, used: 0, waiting: [], holders: [] };
    const now = Date.now();
    return {
      capacity: budget.capacity,
      used: budget.used,
      waiting: slots
        .waitingForMemory()
        .map((w) => ({ job: w.job, bytes: w.bytes, waitedMs: Math.max(0, now - w.since) })),
      holders: budget.holders(),
    };
  };
  const budgetStats = (): BudgetStats | undefined => {
    const a = memory ? budgetAnswer() : undefined;
    return (
      a && {
        capacity: a.capacity,
        used: a.used,
        waiting: a.waiting.length,
        waitingBytes: a.waiting.reduce((n, w) => n + w.bytes, 0),
        oldestWaitMs: Math.max(0, ...a.waiting.map((w) => w.waitedMs)),
      }
    );
  };

  const handle = async (req: http.IncomingMessage): Promise<Answer> => {
    const url = req.url ?? '/';
    if (req.method === 'GET' && url === '/healthz') return { status: 200, body: 'ok', type: 'text' };
    if (req.method === 'GET' && url === '/readyz') {
      return opts.token()
        ? { status: 200, body: 'ok', type: 'text' }
        : { status: 503, body: 'the renderer has no token yet', type: 'text' };
    }
    const isBudget = req.method === 'GET' && url === BUDGET_PATH;
    if (!isBudget && (req.method !== 'POST' || (url !== RENDER_PATH && url !== RESOLVE_PATH))) {
      return refusal(404, 'RendererUnavailable', `no such renderer endpoint: ${req.method} ${url.slice(0, 100)}`);
    }
    const token = opts.token();
    if (!token) return refusal(503, 'RendererUnavailable', 'the renderer has no token yet');
    if (!authorized(req.headers.authorization, token)) {
      return refusal(401, 'RendererUnavailable', 'the renderer refused the request: wrong or missing token');
    }
    if (isBudget) return { status: 200, body: JSON.stringify(budgetAnswer()) };
    const raw = await readBody(req);
    if (raw === undefined) {
      return refusal(413, 'RendererUnavailable', `render request over ${MAX_REQUEST_BYTES} bytes`);
    }
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      return refusal(400, 'RendererUnavailable', 'render request is not JSON');
    }
    const schema = url === RENDER_PATH ? RenderRequestSchema : ResolveRequestSchema;
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return refusal(
        400,
        'RendererUnavailable',
        `render request: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
      );
    }
    const input = parsed.data.input as RenderInput;
    const limits = 'limits' in parsed.data ? (parsed.data.limits as RequestLimits | undefined) : undefined;
    let need: { job: string; bytes: number } | undefined;
    if (memory) {
      const kind = url === RESOLVE_PATH ? 'resolve' : 'render';
      const bytes = kind === 'resolve' ? memory.resolveHold() : memory.renderHold(limits?.maxRenderedBytes);
      need = { job: `Application ${parsed.data.application ?? input.appName}`, bytes };
      if (bytes > memory.budget.capacity) {
        const err = new BudgetExceededError(need.job, bytes, memory.budget.capacity);
        return refusal(422, 'TooLarge', neverFits(err, memory, memory.explain(kind, limits?.maxRenderedBytes)));
      }
    }
    // The slot comes with the memory: in the tenant's turn, once its bytes fit.
    const release = await slots.acquire(parsed.data.tenant ?? '', need);
    if (!release) return refusal(503, 'RendererUnavailable', `the renderer is busy (${maxQueued} requests waiting)`);
    const done = release;
    const work =
      url === RESOLVE_PATH
        ? opts.renderer
            .resolveRevision(input)
            .then((revision): Answer => ({ status: 200, body: JSON.stringify({ revision }) }))
        : render(input, 'noCache' in parsed.data && parsed.data.noCache === true, limits);
    // The slot and the memory are held until the work really ends, even when the answer went out at the time limit.
    void work.then(done, done);
    let timer: NodeJS.Timeout | undefined;
    const limit = timeLimit(limits);
    const overtime = new Promise<never>((_, reject) => {
      // A little after the render's own limit: the render reports its limit itself when it can.
      timer = setTimeout(() => reject(overTimeLimit(input.source, limit.ms, limit.setBy)), limit.ms + 1000);
    });
    try {
      return await Promise.race([work, overtime]);
    } finally {
      clearTimeout(timer);
    }
  };

  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const started = performance.now();
    handle(req)
      .catch((err: unknown): Answer => {
        if (err instanceof NeedsRepositories) {
          return { status: 409, body: JSON.stringify({ needs: err.needs } satisfies NeedsAnswer) };
        }
        const e =
          err instanceof SourceError ? err : new SourceError('Unexpected', (err as Error)?.message ?? String(err));
        return refusal(422, e.reason, e.message);
      })
      .then((answer) => {
        if (answer.status !== 200 && answer.status !== 409 && answer.type !== 'text') {
          opts.logger.info(
            { path: req.url, status: answer.status, ms: Math.round(performance.now() - started) },
            errorText(answer),
          );
        }
        res.writeHead(answer.status, {
          'content-type':
            answer.type === 'text' ? 'text/plain' : answer.type === 'ndjson' ? ANSWER_CONTENT_TYPE : 'application/json',
          'content-length': Buffer.byteLength(answer.body),
          // A request cut off for its size is not read further: the connection goes with it.
          ...(answer.status === 413 ? { connection: 'close' } : {}),
        });
        res.end(answer.body);
      });
  };
  return Object.assign(listener, { stats, budgetStats });
}

export interface RendererStats {
  /** Renders run (not answered from the cache). */
  readonly renders: number;
  readonly cacheHits: number;
  readonly running: number;
  readonly queued: number;
}

/** Listens on `host:port` (TCP) or `unix:/path` (a socket only its owner may use). */
export async function startRendererServer(listen: string, handler: http.RequestListener): Promise<RendererServer> {
  const server = http.createServer({ headersTimeout: 10_000, requestTimeout: 0, keepAliveTimeout: 65_000 }, handler);
  const socketPath = listen.startsWith('unix:') ? listen.slice('unix:'.length) : undefined;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (socketPath) {
      server.listen({ path: socketPath, readableAll: false, writableAll: false }, resolve);
    } else {
      const colon = listen.lastIndexOf(':');
      const host = colon > 0 ? listen.slice(0, colon).replace(/^\[|\]$/g, '') : '0.0.0.0';
      server.listen({ host, port: Number(listen.slice(colon + 1)) }, resolve);
    }
  });
  const a = server.address();
  const address = socketPath ?? `${(a as AddressInfo).address}:${(a as AddressInfo).port}`;
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function refusal(status: number, reason: ErrorAnswer['error']['reason'], message: string): Answer {
  return { status, body: JSON.stringify({ error: { reason, message } } satisfies ErrorAnswer) };
}

function errorText(a: Answer): string {
  try {
    return (JSON.parse(a.body.toString()) as ErrorAnswer).error.message;
  } catch {
    return a.body.toString().slice(0, 200);
  }
}

/** Compared as digests, in constant time: the token's length is not told either. */
function authorized(header: string | undefined, token: string): boolean {
  const given = header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b) && given !== '';
}

/** The body as text, or undefined when it is larger than MAX_REQUEST_BYTES (reading stops there). */
function readBody(req: http.IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        resolve(undefined);
        chunks.length = 0;
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * The same input at the same commit renders the same objects; so does the same input of a plain
 * directory from the same files at any commit, keyed by the folder's content key instead of a
 * revision (SourceRenderer.folderKey).
 */
function cacheKey(input: RenderInput, revision: string): string {
  return answerKey(input, { revision });
}

function folderCacheKey(input: RenderInput, folder: string): string {
  return answerKey(input, { folder });
}

function answerKey(input: RenderInput, by: { revision: string } | { folder: string }): string {
  // The input holds the credentials: an answer rendered with one is never served to a request
  // with another. Only the digest is kept. How old refs may be does not change the objects.
  // Nor does the revision manifest-generate-paths compares with, nor the revision asked for (the
  // commit it resolved to, or the folder's content, stands for it).
  const { revisionMaxAgeMs: _age, generatePaths: _paths, revision: _asked, ...rest } = input;
  void _age;
  void _paths;
  void _asked;
  return createHash('sha256')
    .update(JSON.stringify({ ...rest, ...by }))
    .digest('hex');
}
