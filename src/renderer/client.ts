// The controller's side of the renderer protocol (protocol.ts): one keep-alive connection pool to
// the renderer (its Service in the install, the socket of a child process elsewhere), the token on
// every request, and the answer read within a size limit and parsed with the protocol's schema,
// since it is the output of tenant content: line by line (NDJSON, one object a line), yielding to
// the event loop as it goes, so that no render holds the controller's event loop for longer than
// one object takes to parse. Every failure is a SourceError, which the controller shows as the
// Application's ComparisonError.
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { ApplicationSource } from '../api/application.ts';
import type { ApplicationLimits } from '../api/limits.ts';
import { APPLICATION_LIMIT_KEYS } from '../api/limits.ts';
import { NeedsRepositories, SourceError, formatBytes, redactURL } from '../source/errors.ts';
import { HELD_PER_ANSWER_BYTE, holdInJob } from './budget.ts';
import type { RenderedObject, RenderInput, RenderResult } from '../source/index.ts';
import {
  ANSWER_CONTENT_TYPE,
  BUDGET_PATH,
  BudgetAnswerSchema,
  type BudgetAnswer,
  ErrorAnswerSchema,
  MAX_ANSWER_BYTES,
  NeedsAnswerSchema,
  RENDER_PATH,
  RESOLVE_PATH,
  RenderAnswerHeaderSchema,
  RenderedObjectSchema,
  ResolveAnswerSchema,
} from './protocol.ts';

export interface RenderOptions {
  /** Render again even if this input at this commit was rendered before (a hard refresh). */
  noCache?: boolean | undefined;
  /** The Application's limits (argocd-cm), applied by the renderer and, for bytes, here too. */
  limits?: ApplicationLimits | undefined;
  /** Whose render it is, for a fair share of the renderer's slots (the AppProject). */
  tenant?: string | undefined;
  /** Which Application (the controller's key, namespace/name), named in the renderer's memory budget. */
  application?: string | undefined;
}

/** What resolving a revision needs: the source, its repository's credentials, how old refs may be. */
export type ResolveInput = Pick<RenderInput, 'source' | 'revision' | 'repository' | 'revisionMaxAgeMs'> & {
  appName: string;
};

/** What the controller needs of a renderer: the objects of one source, and the commit a revision names. */
export interface Renderer {
  render(input: RenderInput, opts?: RenderOptions): Promise<RenderResult>;
  resolveRevision(input: ResolveInput, opts?: Pick<RenderOptions, 'tenant' | 'application'>): Promise<string>;
  /** The renderer's memory budget and who waits for it; undefined from a renderer that has none. */
  budget?(): Promise<BudgetAnswer | undefined>;
  /** Several replicas' budgets, each its own (routed.ts); a renderer with this has no `budget`. */
  budgets?(): Promise<Array<{ replica: string; answer: BudgetAnswer }>>;
  close(): Promise<void>;
}

/**
 * A request that got no answer at all from the renderer it was sent to: the connection was refused
 * or could not be made in time (`connect`; no renderer saw the request), or it was closed before
 * any answer came (`reset`; the renderer may have been working on it when it went away). Another
 * replica may be asked (renderer/routed.ts); any answer, an error too, is final.
 */
export class RendererUnreachable extends SourceError {
  readonly how: 'connect' | 'reset';

  constructor(message: string, how: 'connect' | 'reset', options?: { cause?: unknown }) {
    super('RendererUnavailable', message, options);
    this.how = how;
  }
}

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EADDRNOTAVAIL',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOENT', // a unix socket that is not there
  'UND_ERR_CONNECT_TIMEOUT',
]);
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/**
 * Whether a failed request reached no renderer's answer, and how. A timeout waiting for the answer's
 * headers is not among them: the renderer has the request (a busy one queues it), and asking
 * another would run a render that may be slow by its content twice.
 */
function notReached(err: unknown): 'connect' | 'reset' | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 3; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string') continue;
    if (CONNECT_CODES.has(code)) return 'connect';
    if (RESET_CODES.has(code)) return 'reset';
  }
  return undefined;
}

/** Parsing runs this long at most before the event loop gets a turn. */
const PARSE_SLICE_MS = 5;

export interface RendererClientOptions {
  /** `http://host:port` or `unix:/path/to/socket`. */
  url: string;
  /** The bearer token; asked for on every request (a token read from a Secret may change). */
  token: () => string | Promise<string>;
  /** Called once after a 401, before the request is tried again (re-read a rotated token). */
  onUnauthorized?: () => Promise<void>;
  /** How long an answer may take, queueing at a busy renderer included. Default 15 min. */
  timeoutMs?: number;
  /** Largest answer read. Default MAX_ANSWER_BYTES (65 MiB). */
  maxAnswerBytes?: number;
  /** How long making a connection may take. Default 10 s. */
  connectTimeoutMs?: number;
}

export class RendererClient implements Renderer {
  readonly #opts: RendererClientOptions;
  readonly #agent: Agent;
  readonly #origin: string;

  constructor(opts: RendererClientOptions) {
    this.#opts = opts;
    const timeout = opts.timeoutMs ?? 15 * 60_000;
    const socketPath = opts.url.startsWith('unix:') ? opts.url.slice('unix:'.length) : undefined;
    this.#origin = socketPath ? 'http://renderer' : opts.url.replace(/\/+$/, '');
    this.#agent = new Agent({
      headersTimeout: timeout,
      bodyTimeout: timeout,
      keepAliveTimeout: 30_000,
      connect: { timeout: opts.connectTimeoutMs ?? 10_000, ...(socketPath ? { socketPath } : {}) },
    });
  }

  async render(input: RenderInput, opts: RenderOptions = {}): Promise<RenderResult> {
    const limits = opts.limits;
    const body = {
      input: wire(input),
      ...(opts.noCache ? { noCache: true } : {}),
      ...(limits
        ? {
            limits: {
              renderTimeoutMs: limits.renderTimeoutMs,
              maxObjects: limits.maxObjects,
              maxRenderedBytes: limits.maxRenderedBytes,
            },
          }
        : {}),
      ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}),
      ...(opts.application !== undefined ? { application: opts.application } : {}),
    };
    return (await this.#post(RENDER_PATH, body, input.source, limits)) as RenderResult;
  }

  async resolveRevision(
    input: ResolveInput,
    opts: Pick<RenderOptions, 'tenant' | 'application'> = {},
  ): Promise<string> {
    const body = {
      input: wire(input),
      ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}),
      ...(opts.application !== undefined ? { application: opts.application } : {}),
    };
    const answer = await this.#post(RESOLVE_PATH, body, input.source);
    const parsed = ResolveAnswerSchema.safeParse(answer);
    if (!parsed.success) throw this.#malformed('revision');
    return parsed.data.revision;
  }

  /** GET /v1/budget; undefined when the renderer has no such endpoint (an older one) or answers otherwise. */
  async budget(): Promise<BudgetAnswer | undefined> {
    const token = await this.#opts.token();
    const res = await request(`${this.#origin}${BUDGET_PATH}`, {
      method: 'GET',
      dispatcher: this.#agent,
      headers: { authorization: `Bearer ${token}` },
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    if (res.statusCode !== 200) {
      await res.body.dump();
      return undefined;
    }
    const text = await res.body.text();
    if (text.length > 4 * 1024 * 1024) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return undefined;
    }
    const parsed = BudgetAnswerSchema.safeParse(json);
    return parsed.success ? parsed.data : undefined;
  }

  close(): Promise<void> {
    return this.#agent.close();
  }

  async #post(
    path: string,
    body: unknown,
    source: ApplicationSource,
    limits?: ApplicationLimits,
    retried = false,
  ): Promise<unknown> {
    let token: string;
    try {
      token = await this.#opts.token();
    } catch (err) {
      throw new SourceError('RendererUnavailable', `no token for the renderer: ${(err as Error).message}`, {
        cause: err,
      });
    }
    let res;
    try {
      res = await request(`${this.#origin}${path}`, {
        method: 'POST',
        dispatcher: this.#agent,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
    } catch (err) {
      const message = `the renderer at ${this.#opts.url} cannot be reached: ${(err as Error).message}`;
      const unreached = notReached(err);
      if (unreached) throw new RendererUnreachable(message, unreached, { cause: err });
      throw new SourceError('RendererUnavailable', message, { cause: err });
    }
    if (res.statusCode === 401 && this.#opts.onUnauthorized && !retried) {
      await res.body.dump();
      await this.#opts.onUnauthorized();
      return this.#post(path, body, source, limits, true);
    }
    if (res.statusCode === 200 && String(res.headers['content-type'] ?? '').startsWith(ANSWER_CONTENT_TYPE))
      return this.#objects(res.body, source, limits, Number(res.headers['content-length']));
    const text = await this.#read(res.body, source);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new SourceError(
        'RendererUnavailable',
        `the renderer answered ${res.statusCode} with something that is not JSON`,
      );
    }
    if (res.statusCode === 200) return json;
    if (res.statusCode === 409) {
      const needs = NeedsAnswerSchema.safeParse(json);
      if (needs.success) throw new NeedsRepositories(needs.data.needs);
    }
    const error = ErrorAnswerSchema.safeParse(json);
    if (!error.success) throw new SourceError('RendererUnavailable', `the renderer answered ${res.statusCode}`);
    // A source error (422) is the render's own; anything else is about the renderer, and says so.
    if (res.statusCode === 422) throw new SourceError(error.data.error.reason, error.data.error.message);
    throw new SourceError(
      'RendererUnavailable',
      `the renderer refused the request (${res.statusCode}): ${error.data.error.message}`,
    );
  }

  async #read(body: AsyncIterable<Buffer> & { destroy(): void }, source: ApplicationSource): Promise<string> {
    const max = this.#opts.maxAnswerBytes ?? MAX_ANSWER_BYTES;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      size += chunk.length;
      if (size > max) {
        body.destroy();
        throw this.#tooLarge(source, max, undefined);
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  /**
   * A render's NDJSON answer, line by line: every line parsed and checked as it arrives, the event
   * loop given a turn every PARSE_SLICE_MS, reading stopped at the Application's size limit.
   */
  async #objects(
    body: AsyncIterable<Buffer> & { destroy(): void },
    source: ApplicationSource,
    limits: ApplicationLimits | undefined,
    declared: number,
  ): Promise<RenderResult> {
    const limit = this.#opts.maxAnswerBytes ?? Math.min(limits?.maxRenderedBytes ?? MAX_ANSWER_BYTES, MAX_ANSWER_BYTES);
    // Held in the controller's memory budget before it is read (renderer/budget.ts; nothing outside
    // a job): the length the answer declares, or its limit; an answer longer than it said is cut.
    // Declared over the limit: nothing held, and reading stops at the limit as for any answer.
    const oversized = Number.isSafeInteger(declared) && declared > limit;
    const admitted = !oversized && Number.isSafeInteger(declared) && declared >= 0 ? declared : limit;
    if (!oversized)
      try {
        await holdInJob(admitted * HELD_PER_ANSWER_BYTE);
      } catch (err) {
        body.destroy();
        throw err;
      }
    const max = admitted;
    const objects: RenderedObject[] = [];
    let header:
      | {
          revision: string;
          sourceType: RenderResult['sourceType'];
          objects: number;
          dependencies?: string[] | undefined;
        }
      | undefined;
    let pending: Buffer[] = [];
    let size = 0;
    let sliceStart = performance.now();
    const line = (text: string): void => {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw this.#malformed(header ? `object ${objects.length + 1}` : 'its header');
      }
      if (!header) {
        const h = RenderAnswerHeaderSchema.safeParse(json);
        if (!h.success) throw this.#malformed(h.error.issues[0]?.path.join('.') || 'its header');
        header = h.data;
        return;
      }
      const o = RenderedObjectSchema.safeParse(json);
      if (!o.success) throw this.#malformed(`objects.${objects.length}.${o.error.issues[0]?.path.join('.') ?? ''}`);
      objects.push(o.data as RenderedObject);
    };
    try {
      for await (const chunk of body) {
        size += chunk.length;
        if (size > max)
          throw max < limit ? this.#malformed('its length (longer than it said)') : this.#tooLarge(source, max, limits);
        let from = 0;
        for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, from)) {
          pending.push(chunk.subarray(from, nl));
          line(Buffer.concat(pending).toString('utf8'));
          pending = [];
          from = nl + 1;
          if (performance.now() - sliceStart > PARSE_SLICE_MS) {
            await yieldToEventLoop();
            sliceStart = performance.now();
          }
        }
        if (from < chunk.length) pending.push(chunk.subarray(from));
      }
    } catch (err) {
      body.destroy();
      throw err;
    }
    if (pending.length > 0 && Buffer.concat(pending).length > 0) throw this.#malformed('its last line');
    if (!header || header.objects !== objects.length) throw this.#malformed('its object count');
    return {
      revision: header.revision,
      sourceType: header.sourceType,
      objects,
      ...(header.dependencies ? { dependencies: header.dependencies } : {}),
    };
  }

  #tooLarge(source: ApplicationSource, max: number, limits: ApplicationLimits | undefined): SourceError {
    const by =
      limits && max === limits.maxRenderedBytes ? ` (argocd-cm ${APPLICATION_LIMIT_KEYS.maxRenderedSize})` : '';
    return new SourceError(
      'TooLarge',
      `the rendered objects of '${source.path || '.'}' of '${redactURL(source.repoURL)}' are more than ${formatBytes(max)}${by}`,
    );
  }

  #malformed(field: string | undefined): SourceError {
    return new SourceError('RendererUnavailable', `the renderer's answer is malformed (${field || 'its shape'})`);
  }
}

/** Only the protocol's fields go over the wire (an AbortSignal or anything else added locally does not). */
function wire(input: Partial<RenderInput>): Record<string, unknown> {
  const { source, appName, instanceName, destinationNamespace, project, revision, kubeVersion, apiVersions } = input;
  const { sourceRepos } = input;
  const { repository, refSources, refNames, dependencyRepositories, revisionMaxAgeMs, tools, localManifests } = input;
  const { submoduleRepositories, signature, generatePaths } = input;
  return {
    source,
    appName,
    instanceName,
    destinationNamespace,
    project,
    revision,
    kubeVersion,
    apiVersions,
    sourceRepos,
    repository,
    refSources,
    refNames,
    dependencyRepositories,
    revisionMaxAgeMs,
    tools,
    localManifests,
    submoduleRepositories,
    signature,
    generatePaths,
  };
}
