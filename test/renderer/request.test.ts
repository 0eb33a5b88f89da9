// The controller's side of a render request: an Application becomes one source and the facts a
// render needs; what cannot be rendered at all is refused before anything is sent.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Application } from '../../src/api/application.ts';
import { SourceError } from '../../src/source/errors.ts';
import { renderInputFor } from '../../src/renderer/request.ts';

const app = (spec: Record<string, unknown>): Application =>
  ({ metadata: { name: 'guestbook', namespace: 'argocd' }, spec }) as Application;

test('an Application becomes its source, its name and its destination namespace', () => {
  const source = { repoURL: 'https://git.example/r.git', path: 'app', targetRevision: 'main' };
  assert.deepEqual(renderInputFor(app({ source, destination: { namespace: 'team-a' } }), { revision: 'abc1234' }), {
    source,
    appName: 'guestbook',
    destinationNamespace: 'team-a',
    revision: 'abc1234',
  });
});

test('multi-source Applications and Applications without a source are refused', () => {
  const refused = (spec: Record<string, unknown>, message: RegExp) =>
    assert.throws(
      () => renderInputFor(app(spec)),
      (err: unknown) => err instanceof SourceError && err.reason === 'InvalidSource' && message.test(err.message),
    );
  refused(
    { sources: [{ repoURL: 'https://git.example/r.git' }] },
    /spec\.sources \(multiple sources\) is not supported/,
  );
  refused({}, /^spec\.source is missing$/);
});
