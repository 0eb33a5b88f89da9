// A render's answer on the wire (protocol.ts): NDJSON, a header line and a line per object, kept
// as bytes in the answer cache; and the Application's own limits on it, checked on those bytes
// (so an answer from the cache is held to the limits of the request that reads it).
import { APPLICATION_LIMIT_KEYS } from '../api/limits.ts';
import type { ApplicationSource } from '../api/application.ts';
import { SourceError, formatBytes, redactURL } from '../source/errors.ts';
import type { RenderResult } from '../source/index.ts';
import type { RenderAnswerHeader, RequestLimits } from './protocol.ts';

export interface EncodedAnswer {
  body: Buffer;
  objects: number;
}

export function encodeAnswer(result: RenderResult): EncodedAnswer {
  const header: RenderAnswerHeader = {
    revision: result.revision,
    sourceType: result.sourceType,
    ...(result.dependencies ? { dependencies: result.dependencies } : {}),
    objects: result.objects.length,
  };
  const lines = [JSON.stringify(header)];
  for (const o of result.objects) lines.push(JSON.stringify({ object: o.object, location: o.location }));
  return { body: Buffer.from(`${lines.join('\n')}\n`), objects: result.objects.length };
}

/** The same answer under another revision (its header's first line rewritten, the objects as they were). */
export function withRevision(answer: EncodedAnswer, revision: string): EncodedAnswer {
  const end = answer.body.indexOf(0x0a);
  const header = JSON.parse(answer.body.subarray(0, end).toString('utf8')) as RenderAnswerHeader;
  const first = Buffer.from(JSON.stringify({ ...header, revision }));
  return { body: Buffer.concat([first, answer.body.subarray(end)]), objects: answer.objects };
}

/** Why `answer` is over the request's limits, or undefined. */
export function overApplicationLimits(
  answer: EncodedAnswer,
  limits: RequestLimits | undefined,
  source: Pick<ApplicationSource, 'path' | 'repoURL'>,
): SourceError | undefined {
  const where = `'${source.path || '.'}' of '${redactURL(source.repoURL)}'`;
  if (limits?.maxObjects !== undefined && answer.objects > limits.maxObjects)
    return new SourceError(
      'TooLarge',
      `${where} renders ${answer.objects} objects, more than this Application's limit of ${limits.maxObjects} (argocd-cm ${APPLICATION_LIMIT_KEYS.maxObjects})`,
    );
  if (limits?.maxRenderedBytes !== undefined && answer.body.length > limits.maxRenderedBytes)
    return new SourceError(
      'TooLarge',
      `the rendered objects of ${where} are ${formatBytes(answer.body.length)}, more than this Application's limit of ${formatBytes(limits.maxRenderedBytes)} (argocd-cm ${APPLICATION_LIMIT_KEYS.maxRenderedSize})`,
    );
  return undefined;
}
