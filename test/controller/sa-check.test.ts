// The ServiceAccount existence check's pure parts: which identity is checked, which names are asked
// for, what an answer means, and that an unanswerable check is logged once and never blocks. The
// check against a real API server (404, 403 without `get`, between waves) is
// test/e2e/faults-identity.test.ts and test/e2e/faults-sa-check.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import {
  impersonatedServiceAccount,
  invalidReason,
  missingMessage,
  outcomeOf,
  serviceAccountPath,
  ServiceAccountCheck,
} from '../../src/controller/sa-check.ts';
import type { ImpersonatedAccount } from '../../src/controller/sa-check.ts';
import type { DestinationClient, Identity, KubeResult, RawRequest } from '../../src/kube/types.ts';
import { createLogger } from '../../src/observability/logger.ts';

const deployer: ImpersonatedAccount = {
  namespace: 'team-a',
  name: 'deployer',
  user: 'system:serviceaccount:team-a:deployer',
};

test('only an impersonated ServiceAccount is checked; its namespace and name come from the user name', () => {
  assert.equal(impersonatedServiceAccount({ controller: true }), null);
  assert.equal(impersonatedServiceAccount({ impersonate: 'alice' }), null);
  assert.deepEqual(impersonatedServiceAccount({ impersonate: 'system:serviceaccount:team-a:deployer' }), deployer);
  // spec §3.4 keeps `ns:name` verbatim, so what follows the first colon is the name, colons and all.
  assert.deepEqual(impersonatedServiceAccount({ impersonate: 'system:serviceaccount:a:b:c' }), {
    namespace: 'a',
    name: 'b:c',
    user: 'system:serviceaccount:a:b:c',
  });
  assert.deepEqual(impersonatedServiceAccount({ impersonate: 'system:serviceaccount:lonely' }), {
    namespace: 'lonely',
    name: '',
    user: 'system:serviceaccount:lonely',
  });
});

test('a name the API server could never have stored is not asked for', () => {
  assert.equal(invalidReason(deployer), null);
  assert.equal(invalidReason({ ...deployer, name: 'dotted.name-1' }), null);
  const bad = (namespace: string, name: string) =>
    invalidReason({ namespace, name, user: `system:serviceaccount:${namespace}:${name}` });
  assert.equal(bad('team-a', ''), 'not a valid ServiceAccount name');
  assert.equal(bad('team-a', ' deployer'), 'not a valid ServiceAccount name'); // spec §3.4 keeps spaces
  assert.equal(bad('team-a', 'Deployer'), 'not a valid ServiceAccount name');
  assert.equal(bad('team-a', '..'), 'not a valid ServiceAccount name');
  assert.equal(bad('team-a', 'b:c'), 'not a valid ServiceAccount name');
  assert.equal(bad('team-a', 'x'.repeat(254)), 'not a valid ServiceAccount name');
  assert.equal(bad('', 'deployer'), 'not a valid namespace name');
  assert.equal(bad('team.a', 'deployer'), 'not a valid namespace name');
  assert.equal(bad('x'.repeat(64), 'deployer'), 'not a valid namespace name');
});

test('the path and the message name the ServiceAccount', () => {
  assert.equal(serviceAccountPath(deployer), '/api/v1/namespaces/team-a/serviceaccounts/deployer');
  assert.equal(
    missingMessage(deployer),
    'ServiceAccount "deployer" not found in namespace "team-a": refusing to sync as system:serviceaccount:team-a:deployer',
  );
  assert.equal(
    missingMessage({ ...deployer, name: 'Dep' }, 'not a valid ServiceAccount name'),
    'ServiceAccount "Dep" not found in namespace "team-a" (not a valid ServiceAccount name): refusing to sync as system:serviceaccount:team-a:deployer',
  );
});

test('only a 404 blocks: present on success, unknown on 403, 500 or no answer', () => {
  const err = (code: number, reason: string): KubeResult<unknown> => ({
    ok: false,
    error: { code, reason, message: `${reason}!` },
  });
  assert.deepEqual(outcomeOf(deployer, { ok: true, value: {}, warnings: [] }), { kind: 'present' });
  assert.deepEqual(outcomeOf(deployer, err(404, 'NotFound')), { kind: 'missing', message: missingMessage(deployer) });
  for (const [code, reason] of [
    [403, 'Forbidden'],
    [500, 'InternalError'],
    [0, 'ConnectionError'],
  ] as const) {
    assert.deepEqual(outcomeOf(deployer, err(code, reason)), {
      kind: 'unknown',
      error: { code, reason, message: `${reason}!` },
    });
  }
});

/** A client answering every request with one result, recording the paths asked for. */
function answering(identity: Identity, result: KubeResult<unknown>, paths: string[] = []): DestinationClient {
  const unused = () => Promise.reject(new Error('not used by the check'));
  return {
    server: 'https://kubernetes.default.svc',
    identity,
    request: <T>(req: RawRequest) => {
      paths.push(`${req.method} ${req.path}`);
      return Promise.resolve(result as KubeResult<T>);
    },
    resolve: unused,
    resolveGroupKind: unused,
    apply: unused,
    create: unused,
    get: unused,
    list: unused,
    uncached: () => {
      throw new Error('not used by the check');
    },
    delete: unused,
    openApiV3: unused,
  };
}

function capture(): { lines: string[]; check: ServiceAccountCheck } {
  const lines: string[] = [];
  const logger = createLogger(
    { level: 'info' },
    new Writable({
      write(c, _e, cb) {
        lines.push(String(c));
        cb();
      },
    }),
  );
  return { lines, check: new ServiceAccountCheck(logger) };
}

test('guard: nothing to check for the controller identity; the check asks as the controller client', async () => {
  const { check } = capture();
  const ok: KubeResult<unknown> = { ok: true, value: {}, warnings: [] };
  assert.equal(
    check.guard(answering({ controller: true }, ok), () => answering({ controller: true }, ok)),
    undefined,
  );
  const paths: string[] = [];
  const guard = check.guard(answering({ impersonate: deployer.user }, ok), () =>
    answering({ controller: true }, ok, paths),
  );
  assert.ok(guard);
  assert.equal(await guard(), null);
  assert.deepEqual(paths, ['GET /api/v1/namespaces/team-a/serviceaccounts/deployer']);
  const gone = check.guard(answering({ impersonate: deployer.user }, ok), () =>
    answering({ controller: true }, { ok: false, error: { code: 404, reason: 'NotFound', message: 'nope' } }),
  );
  assert.equal(await gone?.(), missingMessage(deployer));
});

test('guard: an invalid name is refused without a request', async () => {
  const { check } = capture();
  const paths: string[] = [];
  const guard = check.guard(
    answering({ impersonate: 'system:serviceaccount:team-a: deployer' }, { ok: true, value: {}, warnings: [] }),
    () => answering({ controller: true }, { ok: true, value: {}, warnings: [] }, paths),
  );
  assert.equal(
    await guard?.(),
    'ServiceAccount " deployer" not found in namespace "team-a" (not a valid ServiceAccount name): refusing to sync as system:serviceaccount:team-a: deployer',
  );
  assert.deepEqual(paths, []);
});

test('guard: a refused check lets the sync go on and is logged once at info per destination and failure', async () => {
  const { lines, check } = capture();
  const forbidden: KubeResult<unknown> = {
    ok: false,
    error: { code: 403, reason: 'Forbidden', message: 'serviceaccounts "deployer" is forbidden' },
  };
  const own = answering({ controller: true }, forbidden);
  for (let i = 0; i < 3; i++)
    assert.equal(await check.guard(answering({ impersonate: deployer.user }, forbidden), () => own)?.(), null);
  assert.equal(
    await check.guard(answering({ impersonate: 'system:serviceaccount:team-b:other' }, forbidden), () => own)?.(),
    null,
  );
  assert.equal(lines.length, 1, lines.join(''));
  const line = JSON.parse(lines[0] ?? '{}') as { level: string; msg: string; code: number; serviceAccount: string };
  assert.equal(line.level, 'info');
  assert.equal(line.code, 403);
  assert.equal(line.serviceAccount, deployer.user);
  assert.match(
    line.msg,
    /^cannot check that ServiceAccount "deployer" exists in namespace "team-a" \(403 Forbidden: serviceaccounts "deployer" is forbidden\); syncing without the check/,
  );
  // Another kind of failure is worth its own line.
  await check.guard(answering({ impersonate: deployer.user }, forbidden), () =>
    answering({ controller: true }, { ok: false, error: { code: 0, reason: 'ConnectionError', message: 'down' } }),
  )?.();
  assert.equal(lines.length, 2);
});
