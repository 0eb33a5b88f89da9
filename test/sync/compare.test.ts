// compareOne's result logic and its request shape: the live read and the dry-run apply go out
// together (neither needs the other), and the answers decide the result exactly as when they were
// sent one after the other. The client here is a scripted DestinationClient (our port, not the API
// server): what the API server answers for real is covered by test/e2e/sync-engine.test.ts and
// test/e2e/diff.test.ts on the real control plane.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import type { ApplyOptions, DestinationClient, KubeError, KubeResult, ObjectRef } from '../../src/kube/types.ts';
import type { Prepared, PreparedObject } from '../../src/sync/prepare.ts';
import { compareResources } from '../../src/sync/index.ts';

const cm: KubeObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'c', namespace: 'guestbook' },
  data: { k: 'v' },
};
const err = (code: number, reason: string, message: string): KubeError => ({ code, reason, message });
const ok = <T>(value: T): KubeResult<T> => ({ ok: true, value, warnings: [] });
const fail = (e: KubeError): KubeResult<never> => ({ ok: false, error: e });

interface Script {
  get: KubeResult<KubeObject | null>;
  dry: KubeResult<KubeObject>;
}

/** A client that answers from a script, each answer one macrotask later, and logs what happened when. */
function scripted(script: Script): { client: DestinationClient; log: string[]; applyOpts: ApplyOptions[] } {
  const log: string[] = [];
  const applyOpts: ApplyOptions[] = [];
  const later = <T>(what: string, value: T): Promise<T> =>
    new Promise((resolve) =>
      setImmediate(() => {
        log.push(`${what} answered`);
        resolve(value);
      }),
    );
  const unused = (): never => {
    throw new Error('not used by compareOne');
  };
  const client: DestinationClient = {
    server: 'https://kubernetes.default.svc',
    identity: { impersonate: 'system:serviceaccount:guestbook:deployer' },
    request: unused,
    resolve: unused,
    resolveGroupKind: unused,
    create: unused,
    list: unused,
    delete: unused,
    uncached: unused,
    openApiV3: unused,
    get(ref: ObjectRef) {
      log.push(`get ${ref.kind}/${ref.name} sent`);
      return later('get', script.get);
    },
    apply(obj: KubeObject, opts?: ApplyOptions) {
      log.push(`apply ${obj.kind}/${obj.metadata.name} sent`);
      applyOpts.push(opts ?? {});
      return later('apply', script.dry);
    },
  };
  return { client, log, applyOpts };
}

function prepared(over: Partial<PreparedObject> = {}): Prepared {
  return {
    objects: [{ key: '/ConfigMap/guestbook/c', source: cm, target: cm, hook: false, pendingCrd: false, ...over }],
    warnings: [],
    excluded: [],
  };
}

const opts = { appName: 'guestbook', namespace: 'guestbook' };

async function compareWith(
  script: Script,
  over: Partial<PreparedObject> = {},
  extra: { fieldValidation?: 'Strict'; diffs?: boolean } = {},
) {
  const s = scripted(script);
  const result = await compareResources(s.client, prepared(over), [], { ...opts, ...extra });
  assert.equal(result.resources.length, 1);
  return { ...s, result, r: result.resources[0]! };
}

test('the live read and the dry-run apply are both sent before either is answered', async () => {
  const { log, applyOpts } = await compareWith({ get: ok(null), dry: ok(cm) }, {}, { fieldValidation: 'Strict' });
  assert.deepEqual(log.slice(0, 2).sort(), ['apply ConfigMap/c sent', 'get ConfigMap/c sent']);
  assert.deepEqual(log.slice(2).sort(), ['apply answered', 'get answered']);
  assert.deepEqual(applyOpts, [{ dryRun: true, fieldValidation: 'Strict' }]);
});

test('live equal to the dry-run prediction is Synced with no diff', async () => {
  const { r, result } = await compareWith({ get: ok(cm), dry: ok(cm) });
  assert.equal(r.status, 'Synced');
  assert.equal(r.diff, '');
  assert.deepEqual(r.live, cm);
  assert.equal(result.syncStatus, 'Synced');
});

test('live different from the prediction is OutOfSync, with a diff only when asked for one', async () => {
  const { r } = await compareWith({ get: ok({ ...cm, data: { k: 'old' } }), dry: ok(cm) }, {}, { diffs: true });
  assert.equal(r.status, 'OutOfSync');
  assert.match(r.diff, /old/);
  const { r: plain } = await compareWith({ get: ok({ ...cm, data: { k: 'old' } }), dry: ok(cm) });
  assert.equal(plain.status, 'OutOfSync');
  assert.equal(plain.diff, '', 'the controller reads no diff, so none is made');
  assert.equal(r.message, undefined);
});

test('a missing live object (404) is OutOfSync and Missing; "namespace not found" from the dry-run is not a note', async () => {
  for (const dry of [ok(cm), fail(err(404, 'NotFound', 'namespaces "guestbook" not found'))]) {
    const { r } = await compareWith({ get: ok(null), dry });
    assert.equal(r.status, 'OutOfSync');
    assert.deepEqual(r.health, { status: 'Missing' });
    assert.equal(r.live, null);
    assert.equal(r.message, undefined);
  }
});

test('a missing live object whose dry-run is refused stays OutOfSync and shows the refusal', async () => {
  const denied = err(
    403,
    'Forbidden',
    'configmaps is forbidden: User "system:serviceaccount:guestbook:deployer" cannot patch resource "configmaps"',
  );
  const { r } = await compareWith({ get: ok(null), dry: fail(denied) });
  assert.equal(r.status, 'OutOfSync');
  assert.equal(r.message, denied.message);
});

test('a live object whose dry-run is refused is Unknown with the dry-run’s message', async () => {
  const invalid = err(422, 'Invalid', 'ConfigMap "c" is invalid: data: Invalid value');
  const { r, result } = await compareWith({ get: ok(cm), dry: fail(invalid) });
  assert.equal(r.status, 'Unknown');
  assert.equal(r.message, invalid.message);
  assert.deepEqual(r.live, cm);
  assert.equal(result.syncStatus, 'Unknown');
  assert.match(result.errors[0] ?? '', /ConfigMap guestbook\/c: ConfigMap "c" is invalid/);
});

test('a failed live read decides the result whatever the dry-run answered', async () => {
  const forbidden = err(
    403,
    'Forbidden',
    'configmaps "c" is forbidden: User "system:serviceaccount:guestbook:deployer" cannot get resource "configmaps"',
  );
  for (const dry of [ok(cm), fail(err(422, 'Invalid', 'other'))]) {
    const { r } = await compareWith({ get: fail(forbidden), dry });
    assert.equal(r.status, 'Unknown');
    assert.equal(r.message, forbidden.message);
    assert.equal(r.health, null);
    assert.equal(r.live, undefined);
  }
});

test('an object whose CRD is still pending, or that could not be prepared, sends nothing', async () => {
  const pending = await compareWith({ get: ok(cm), dry: ok(cm) }, { pendingCrd: true });
  assert.deepEqual(pending.log, []);
  assert.equal(pending.r.status, 'OutOfSync');
  assert.deepEqual(pending.r.health, { status: 'Missing' });
  const broken = await compareWith({ get: ok(cm), dry: ok(cm) }, { error: err(404, 'NotFound', 'no kind ConfigMap') });
  assert.deepEqual(broken.log, []);
  assert.equal(broken.r.status, 'Unknown');
  assert.equal(broken.r.message, 'no kind ConfigMap');
});

test('ServerSideDiff=true, IncludeMutationWebhook=true: the prediction is the dry-run apply’s answer, webhook changes included', async () => {
  // What a mutating webhook makes of a field Git declares is in the server's answer and in live:
  // no difference. Compared with the target instead of the answer, it would be OutOfSync.
  const mutated: KubeObject = { ...cm, data: { k: 'set-by-webhook' } };
  const { r, applyOpts } = await compareWith({ get: ok(mutated), dry: ok(mutated) });
  assert.equal(applyOpts[0]?.dryRun, true);
  assert.equal(r.status, 'Synced');
  const { r: changed } = await compareWith({ get: ok(cm), dry: ok(mutated) });
  assert.equal(changed.status, 'OutOfSync', 'live without what the webhook would make of it differs');
});

test('a live object whose managedFields cost too much to read is Unknown with why, and nothing throws', async () => {
  // One list named by 3,000 kinds of key: each kind would index the whole list of 3,000.
  const steps: Record<string, unknown> = {};
  for (let i = 0; i < 3000; i++) steps[`k:{"a${i}":1}`] = { 'f:b': {} };
  const crafted: KubeObject = {
    ...cm,
    metadata: {
      ...cm.metadata,
      managedFields: [{ manager: 'kubectl-client-side-apply', operation: 'Update', fieldsV1: { 'f:list': steps } }],
    },
    list: Array.from({ length: 3000 }, (_, i) => ({ [`a${i}`]: 1, b: i })),
  };
  const why = 'failed to calculate diff: ConfigMap/c: its managedFields name one list by more than 8 kinds of key';
  const takeover = await compareResources(scripted({ get: ok(crafted), dry: ok(crafted) }).client, prepared(), [], {
    ...opts,
    takeover: ['kubectl-client-side-apply'],
  });
  assert.equal(takeover.resources[0]?.status, 'Unknown');
  assert.ok(takeover.resources[0]?.message?.startsWith(why), takeover.resources[0]?.message);
  assert.deepEqual(takeover.resources[0]?.live, crafted);
  const rule = {
    group: '',
    kind: 'ConfigMap',
    jsonPointers: [],
    jqPathExpressions: [],
    managedFieldsManagers: ['kubectl-client-side-apply'],
  };
  const ignored = await compareResources(scripted({ get: ok(crafted), dry: ok(crafted) }).client, prepared(), [], {
    ...opts,
    diff: { rules: [rule], ignoreAggregatedRoles: false, status: 'all' },
  });
  assert.equal(ignored.resources[0]?.status, 'Unknown');
  assert.ok(ignored.resources[0]?.message?.startsWith(why), ignored.resources[0]?.message);
});

test('a live object nested deeper than a copy can go is Unknown with why, and nothing throws', async () => {
  let spec: Record<string, unknown> = { leaf: 1 };
  for (let d = 0; d < 20_000; d++) spec = { a: spec };
  const deep: KubeObject = {
    ...cm,
    metadata: {
      ...cm.metadata,
      managedFields: [{ manager: 'kubectl-client-side-apply', operation: 'Update', fieldsV1: { 'f:spec': {} } }],
    },
    spec,
  };
  const result = await compareResources(scripted({ get: ok(deep), dry: ok(deep) }).client, prepared(), [], {
    ...opts,
    takeover: ['kubectl-client-side-apply'],
  });
  assert.equal(result.resources[0]?.status, 'Unknown');
  assert.match(result.resources[0]?.message ?? '', /^failed to calculate diff: ConfigMap\/c: /);
});
