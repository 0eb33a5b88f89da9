// The renderer's failures as assert.rejects checks them.
import assert from 'node:assert/strict';
import { SourceError } from '../../src/source/errors.ts';

/**
 * For assert.rejects: a SourceError of `reason` whose message matches `message`, or is exactly it
 * when it is a string.
 */
export const failsWith =
  (reason: string, message: RegExp | string) =>
  (err: unknown): boolean => {
    assert.ok(err instanceof SourceError, `expected a SourceError, got ${String(err)}`);
    assert.equal(err.reason, reason, err.message);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  };
