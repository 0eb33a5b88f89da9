// argocd-cm's per-Application limits (docs/security.md, "Limits"): defaults, values, unusable values.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_APPLICATION_LIMITS } from '../../src/api/limits.ts';
import { readApplicationLimits } from '../../src/controller/app-limits.ts';

const cm = (data: Record<string, string>) => ({ metadata: { name: 'argocd-cm', namespace: 'argocd' }, data });

test('without argocd-cm, or without the keys, the defaults: 90 s, 10,000 objects, 16 MiB', () => {
  assert.deepEqual(readApplicationLimits(undefined), { limits: DEFAULT_APPLICATION_LIMITS, errors: [] });
  assert.deepEqual(readApplicationLimits(cm({})).limits, {
    renderTimeoutMs: 90_000,
    maxObjects: 10_000,
    maxRenderedBytes: 16 * 1024 * 1024,
  });
});

test('each key as argocd-cm writes it: a Go duration, a number, a size', () => {
  const read = readApplicationLimits(
    cm({
      'impersync.application.renderTimeout': '1m30s',
      'impersync.application.maxObjects': '500',
      'impersync.application.maxRenderedSize': '4Mi',
    }),
  );
  assert.deepEqual(read, {
    limits: { renderTimeoutMs: 90_000, maxObjects: 500, maxRenderedBytes: 4 * 1024 * 1024 },
    errors: [],
  });
});

test('an unusable value keeps its default and says which key and why', () => {
  const read = readApplicationLimits(
    cm({
      'impersync.application.renderTimeout': 'soon',
      'impersync.application.maxObjects': '-3',
      'impersync.application.maxRenderedSize': '0',
    }),
  );
  assert.deepEqual(read.limits, DEFAULT_APPLICATION_LIMITS);
  assert.equal(read.errors.length, 3);
  assert.match(read.errors[0] ?? '', /^argocd-cm impersync\.application\.renderTimeout: .*soon.*; using 90s$/);
  assert.match(read.errors[1] ?? '', /^argocd-cm impersync\.application\.maxObjects: '-3' is not a whole number/);
  assert.match(
    read.errors[2] ?? '',
    /^argocd-cm impersync\.application\.maxRenderedSize: must be more than 0; using 16Mi$/,
  );
});
