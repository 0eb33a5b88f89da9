// Reading repository Secrets and credential templates (src/api/repository.ts): what a render
// request cannot carry is refused with the Secret and field named, never passed on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DocumentError } from '../../src/api/index.ts';
import { RepositoryAccessSchema, parseRepositorySecret } from '../../src/api/repository.ts';

const secret = (stringData: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'repo', namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': 'repository' } },
  stringData,
});

test('a value longer than a render request carries is refused naming the Secret and field, not quoted', () => {
  for (const [field, length] of [
    ['username', 4097],
    ['password', 65_537],
    ['proxy', 4097],
    ['url', 4097],
  ] as const) {
    const value = `s3cr3t${'x'.repeat(length - 6)}`;
    const data = { url: 'https://git.example/app', [field]: value };
    assert.throws(
      () => parseRepositorySecret(secret(data)),
      (err: unknown) =>
        err instanceof DocumentError &&
        err.message.startsWith(`Secret argocd/repo: data.${field}: longer than`) &&
        !err.message.includes('s3cr3t'),
      field,
    );
  }
  // At the limit, the values go into a request the renderer reads.
  const c = parseRepositorySecret(secret({ url: 'https://git.example/app', username: 'u'.repeat(4096) }));
  assert.ok(RepositoryAccessSchema.safeParse({ url: c.url, username: c.username }).success);
});
