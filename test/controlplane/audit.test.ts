// Reading the API server's audit log back as records (src/controlplane/audit.ts).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAudit, readAudit, toAuditRecord, waitForAudit } from '../../src/controlplane/audit.ts';

// Shaped like kube-apiserver 1.34's audit.k8s.io/v1 Events at Metadata level.
const impersonatedApply = {
  kind: 'Event',
  apiVersion: 'audit.k8s.io/v1',
  level: 'Metadata',
  auditID: 'a1',
  stage: 'ResponseComplete',
  requestURI: '/api/v1/namespaces/guestbook/configmaps/cfg?dryRun=All&fieldManager=impersync&force=true',
  verb: 'patch',
  user: { username: 'impersync-controller', uid: 'static-1', groups: ['system:authenticated'] },
  impersonatedUser: {
    username: 'system:serviceaccount:guestbook:guestbook-deployer',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:guestbook', 'system:authenticated'],
    extra: { 'impersync.io/application': ['argocd/guestbook'], 'impersync.io/revision': ['0123abcd'] },
  },
  sourceIPs: ['127.0.0.1'],
  userAgent: 'node',
  objectRef: { resource: 'configmaps', namespace: 'guestbook', name: 'cfg', apiVersion: 'v1' },
  responseStatus: { metadata: {}, code: 201 },
  requestReceivedTimestamp: '2026-11-29T10:00:00.000000Z',
  stageTimestamp: '2026-11-29T10:00:00.010000Z',
  annotations: {
    'authorization.k8s.io/decision': 'allow',
    'authorization.k8s.io/reason': 'RBAC: allowed by RoleBinding "x/guestbook"',
  },
};

const deniedStatus = {
  kind: 'Event',
  auditID: 'a2',
  stage: 'ResponseComplete',
  requestURI: '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/guestbook/status',
  verb: 'update',
  user: { username: 'impersync-controller' },
  objectRef: {
    resource: 'applications',
    namespace: 'argocd',
    name: 'guestbook',
    apiGroup: 'argoproj.io',
    subresource: 'status',
  },
  responseStatus: { code: 403, reason: 'Forbidden' },
  annotations: { 'authorization.k8s.io/decision': 'forbid' },
};

test('an impersonated dry-run apply reads back with both identities, the verb, the object and the code', () => {
  const r = toAuditRecord(impersonatedApply);
  assert.ok(r);
  assert.equal(r.user, 'impersync-controller');
  assert.equal(r.impersonatedUser, 'system:serviceaccount:guestbook:guestbook-deployer');
  assert.deepEqual([r.verb, r.resource, r.namespace, r.name, r.code], ['patch', 'configmaps', 'guestbook', 'cfg', 201]);
  assert.equal(r.dryRun, true);
  assert.equal(r.fieldManager, 'impersync');
  assert.equal(r.decision, 'allow');
  assert.equal(r.apiGroup, undefined, 'the core group has no apiGroup in objectRef');
  assert.equal(r.time, '2026-11-29T10:00:00.000000Z');
  assert.deepEqual(r.impersonatedExtra, {
    'impersync.io/application': ['argocd/guestbook'],
    'impersync.io/revision': ['0123abcd'],
  });
});

test('a request without impersonation has no impersonatedUser; subresource and decision are kept', () => {
  const r = toAuditRecord(deniedStatus);
  assert.ok(r);
  assert.equal(r.impersonatedUser, undefined);
  assert.deepEqual(r.impersonatedExtra, {});
  assert.deepEqual(
    [r.apiGroup, r.resource, r.subresource, r.code, r.decision, r.dryRun],
    ['argoproj.io', 'applications', 'status', 403, 'forbid', false],
  );
  assert.deepEqual(r.groups, []);
});

test('only completed requests count; other stages, other kinds and broken lines are skipped', () => {
  const lines = [
    JSON.stringify({ ...impersonatedApply, stage: 'ResponseStarted', auditID: 'w' }),
    JSON.stringify(impersonatedApply),
    'not json',
    JSON.stringify({ kind: 'EventList', items: [] }),
    '',
    JSON.stringify({ ...deniedStatus, stage: 'Panic' }),
    '{"kind":"Event","stage":"ResponseCompl', // a line being written
  ];
  const records = parseAudit(lines.join('\n'));
  assert.deepEqual(
    records.map((r) => [r.auditID, r.stage]),
    [
      ['a1', 'ResponseComplete'],
      ['a2', 'Panic'],
    ],
  );
});

test('a missing log reads as empty; waitForAudit waits for the line to appear', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'audit-test-'));
  try {
    const path = join(dir, 'audit.log');
    assert.deepEqual(await readAudit(path), []);
    await writeFile(path, JSON.stringify(deniedStatus) + '\n');
    setTimeout(() => void appendFile(path, JSON.stringify(impersonatedApply) + '\n'), 300);
    const found = await waitForAudit(path, (r) => r.impersonatedUser !== undefined, { timeoutMs: 5000 });
    assert.deepEqual(
      found.map((r) => r.auditID),
      ['a1'],
    );
    await assert.rejects(
      waitForAudit(path, (r) => r.verb === 'delete', { timeoutMs: 200 }),
      /no audit record in .*audit\.log matched/,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('with `open`, a long-running request still open is read from its ResponseStarted record; one that ended, once', () => {
  const watch = (id: string, stage: string) => ({
    ...impersonatedApply,
    auditID: id,
    stage,
    verb: 'watch',
    requestURI: '/api/v1/namespaces/guestbook/configmaps?watch=1&sendInitialEvents=true',
  });
  const text = [
    watch('w1', 'ResponseStarted'),
    watch('w2', 'ResponseStarted'),
    watch('w2', 'ResponseComplete'),
    impersonatedApply,
  ]
    .map((e) => JSON.stringify(e))
    .join('\n');
  assert.deepEqual(
    parseAudit(text).map((r) => `${r.verb} ${r.stage}`),
    ['watch ResponseComplete', 'patch ResponseComplete'],
  );
  assert.deepEqual(
    parseAudit(text, { open: true }).map((r) => `${r.verb} ${r.stage}`),
    ['watch ResponseComplete', 'patch ResponseComplete', 'watch ResponseStarted'],
  );
});
