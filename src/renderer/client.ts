// The controller's side of the renderer protocol (protocol.ts): one keep-alive connection pool to
// the renderer (its Service in the install, the socket of a child process elsewhere), the token on
// every request, and the answer read within a size limit and parsed with the protocol's schema,
// since it is the output of tenant content. Every failure is a SourceError, which the controller
// shows as the Application's ComparisonError.
import { Agent, request } from 'undici';
import type { ApplicationSource } from '../api/application.ts';
import { NeedsRepositories, SourceError, formatBytes, redactURL } from '../source/errors.ts';
import type { RenderInput, RenderResult } from '../source/index.ts';
import {
  ErrorAnswerSchema,
  MAX_ANSWER_BYTES,
  NeedsAnswerSchema,
  RENDER_PATH,
  RESOLVE_PATH,
  RenderAnswerSchema,
  ResolveAnswerSchema,
} from './protocol.ts';

/** What resolving a revision needs: the source, its repository's credentials, how old refs may be. */
export type ResolveInput = Pick<RenderInput, 'source' | 'revision' | 'repository' | 'revisionMaxAgeMs'> & {
  appName: string;
};

/** What the controller needs of a renderer: the objects of one source, and the commit a revision names. */
export interface Renderer {
  /** `noCache`: render again even if this input at this commit was rendered before (a hard refresh). */
  render(input: RenderInput, opts?: { noCache?: boolean }): Promise<RenderResult>;
  resolveRevision(input: ResolveInput): Promise<string>;
  close(): Promise<void>;
}

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
      connect: { timeout: 10_000, ...(socketPath ? { socketPath } : {}) },
    });
  }

  async render(input: RenderInput, opts: { noCache?: boolean } = {}): Promise<RenderResult> {
    const body = { input: wire(input), ...(opts.noCache ? { noCache: true } : {}) };
    const answer = await this.#post(RENDER_PATH, body, input.source);
    const parsed = RenderAnswerSchema.safeParse(answer);
    if (!parsed.success) throw this.#malformed(parsed.error.issues[0]?.path.join('.'));
    return parsed.data as RenderResult;
  }

  async resolveRevision(input: ResolveInput): Promise<string> {
    const answer = await this.#post(RESOLVE_PATH, { input: wire(input) }, input.source);
    const parsed = ResolveAnswerSchema.safeParse(answer);
    if (!parsed.success) throw this.#malformed('revision');
    return parsed.data.revision;
  }

  close(): Promise<void> {
    return this.#agent.close();
  }

  async #post(path: string, body: unknown, source: ApplicationSource, retried = false): Promise<unknown> {
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
      throw new SourceError(
        'RendererUnavailable',
        `the renderer at ${this.#opts.url} cannot be reached: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
    if (res.statusCode === 401 && this.#opts.onUnauthorized && !retried) {
      await res.body.dump();
      await this.#opts.onUnauthorized();
      return this.#post(path, body, source, true);
    }
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
        throw new SourceError(
          'TooLarge',
          `the rendered objects of '${source.path || '.'}' of '${redactURL(source.repoURL)}' are more than ${formatBytes(max)}`,
        );
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  #malformed(field: string | undefined): SourceError {
    return new SourceError('RendererUnavailable', `the renderer's answer is malformed (${field || 'its shape'})`);
  }
}

/** Only the protocol's fields go over the wire (an AbortSignal or anything else added locally does not). */
function wire(input: Partial<RenderInput>): Record<string, unknown> {
  const { source, appName, destinationNamespace, revision, kubeVersion, apiVersions, sourceRepos } = input;
  const { repository, refSources, dependencyRepositories, revisionMaxAgeMs } = input;
  return {
    source,
    appName,
    destinationNamespace,
    revision,
    kubeVersion,
    apiVersions,
    sourceRepos,
    repository,
    refSources,
    dependencyRepositories,
    revisionMaxAgeMs,
  };
}
