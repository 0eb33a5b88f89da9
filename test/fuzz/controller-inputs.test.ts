// Fuzzing what the controller reads from the control namespace and what it writes back: repository
// and repo-creds Secrets (src/api/repository.ts) and the credentials a URL gets from them
// (src/repository/access.ts), cluster Secrets (src/api/cluster.ts), AppProjects with garbage in
// sourceRepos and destinations, Application statuses as other writers leave them (src/api/status.ts,
// src/controller/admission.ts), and the status kept within the size limit
// (src/controller/status-size.ts, src/controller/applications.ts). Nothing may throw but the
// documented errors; every message names the object and field and quotes no credential.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ApplicationStatusSchema,
  DocumentError,
  parseClusterSecret,
  readStatus,
  type AppProject,
  type ApplicationStatus,
} from '../../src/api/index.ts';
import {
  RepositoryAccessSchema,
  RepositorySecretError,
  parseRepositorySecret,
  type RepositoryConfig,
} from '../../src/api/repository.ts';
import { unreadableRefusal } from '../../src/repository/unreadable.ts';
import {
  RepositoryRefused,
  accessFor,
  credentialTemplateFor,
  dependencyAccess,
  type RepositoryState,
} from '../../src/repository/access.ts';
import { templateCoverage } from '../../src/repository/url.ts';
import { admit, type ControlState } from '../../src/controller/admission.ts';
import { writeStatus } from '../../src/controller/applications.ts';
import { fitStatus } from '../../src/controller/status-size.ts';
import type { ControlClient } from '../../src/kube/control.ts';
import { readImpersonationSettings } from '../../src/impersonation/index.ts';

// CI has 2 cores: each property stays well under 2 s.
const runs = { numRuns: 200 };
const SECRET_TYPE = 'argocd.argoproj.io/secret-type';
const unclear = /(?<!received )(undefined|NaN)|\[object /;

/** Credential values are marked, so a message that quotes one is caught whatever field it came from. */
const MARK = 'Cr3dMark';
const credential = fc.oneof(
  fc.string({ minLength: 1, maxLength: 8 }).map((s) => `${MARK}${s}`),
  fc.nat({ max: 70_000 }).map((n) => `${MARK}${'k'.repeat(n)}`),
  fc.constant(`-----BEGIN OPENSSH PRIVATE KEY-----\n${MARK}\n-----END OPENSSH PRIVATE KEY-----\n`),
);
const CREDENTIAL_KEYS = [
  'username',
  'password',
  'bearerToken',
  'sshPrivateKey',
  'tlsClientCertData',
  'tlsClientCertKey',
  'githubAppPrivateKey',
  'gcpServiceAccountKey',
  'azureServicePrincipalClientSecret',
] as const;
const BOOL_KEYS = ['insecure', 'insecureIgnoreHostKey', 'enableOCI', 'insecureOCIForceHttp', 'forceHttpBasicAuth'];
const boolish = fc.oneof(
  fc.constantFrom('true', 'false', '1', '0', 't', 'F', 'TRUE', 'True', '', 'yes', ' true', 'maybe'),
  fc.string({ maxLength: 6 }),
);
/** Repository URLs of every form Argo CD meets, and some it should not. */
const url = fc.oneof(
  fc.constantFrom(
    'https://git.example/team/app.git',
    'https://git.example/team/app',
    'https://git.example/team',
    'https://git.example',
    'https://git.example/team/app/team',
    'https://GIT.example/Team/App.git',
    'https://git.example.evil.net/team/app',
    'git@git.example:team/app.git',
    'ssh://git@git.example:2222/team/app.git',
    'ssh://git@[::1]:22/x',
    'oci://registry.example/charts',
    'registry.example/charts',
    'https://charts.example/',
    'https://charts.example',
    'https://user:pass@git.example/x',
    'https://constructor/x',
    'toString',
    'http://[::1',
    'https://',
    '://',
    '@',
    '.git',
    ' ',
    '',
  ),
  fc.string({ maxLength: 24 }),
  fc.webUrl(),
  fc.nat({ max: 5000 }).map((n) => `https://git.example/${'a'.repeat(n)}`),
);
const plainValue = (key: string) =>
  (CREDENTIAL_KEYS as readonly string[]).includes(key)
    ? credential
    : BOOL_KEYS.includes(key)
      ? boolish
      : key === 'url'
        ? url
        : fc.oneof(fc.constantFrom('helm', 'oci', 'git', 'p', 'team', ''), fc.string({ maxLength: 12 }));
const repoKey = fc.constantFrom(
  'url',
  'type',
  'name',
  'project',
  'proxy',
  'noProxy',
  'depth',
  'enableLfs',
  '__proto__',
  'constructor',
  'toString',
  ...CREDENTIAL_KEYS,
  ...BOOL_KEYS,
);
/** A field map as Secrets hold it: `data` base64 (or not: a writer that skipped the API server's check). */
function fields(encode: boolean) {
  return fc
    .array(
      repoKey.chain((k) =>
        plainValue(k).chain((v) =>
          fc
            .oneof(
              { weight: 8, arbitrary: fc.constant(encode ? Buffer.from(v).toString('base64') : v) },
              { weight: 1, arbitrary: fc.constantFrom('%%not base64%%', '====', 'aGk', '\u0000') },
              { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.constant(null), fc.boolean()) },
            )
            .map((value) => [k, value] as const),
        ),
      ),
      { maxLength: 8 },
    )
    .map((entries) => {
      // As JSON.parse leaves it: own properties, even "__proto__".
      const out: Record<string, unknown> = JSON.parse('{}');
      for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true });
      return out;
    });
}
const repositorySecret = fc.record(
  {
    apiVersion: fc.constant('v1'),
    kind: fc.constantFrom('Secret', 'Secret', 'ConfigMap'),
    metadata: fc.oneof(
      {
        weight: 9,
        arbitrary: fc.record({
          name: fc.constantFrom('repo-a', 'creds-b', 'x'),
          namespace: fc.constantFrom('argocd', ''),
          labels: fc.record({ [SECRET_TYPE]: fc.constantFrom('repository', 'repo-creds', 'cluster', '') }),
        }),
      },
      { weight: 1, arbitrary: fc.oneof(fc.constant(null), fc.record({ name: fc.constant('') }), fc.string()) },
    ),
    data: fc.oneof({ weight: 9, arbitrary: fields(true) }, { weight: 1, arbitrary: fc.anything() }),
    stringData: fields(false),
  },
  { requiredKeys: ['metadata'] },
);

/** The credential values a raw Secret holds (decoded), for "no message quotes one". */
function credentialsIn(raw: unknown): string[] {
  const out: string[] = [];
  const r = raw as { data?: unknown; stringData?: unknown };
  for (const [map, decode] of [
    [r.data, true],
    [r.stringData, false],
  ] as const) {
    if (!map || typeof map !== 'object') continue;
    for (const [k, v] of Object.entries(map)) {
      if (typeof v !== 'string' || !(CREDENTIAL_KEYS as readonly string[]).includes(k)) continue;
      out.push(v, ...(decode ? [Buffer.from(v, 'base64').toString('utf8')] : []));
    }
  }
  return out.filter((v) => v.includes(MARK));
}

function assertNoCredential(message: string, raw: unknown[]): void {
  assert.ok(!message.includes(MARK), `a credential is quoted: ${message.slice(0, 300)}`);
  for (const r of raw) for (const c of credentialsIn(r)) assert.ok(!message.includes(c), message.slice(0, 300));
}

/** Parsed repository Secrets, or the DocumentError each one is, checked on the way. */
function parseAll(raws: unknown[], unreadable: RepositorySecretError[] = []): RepositoryConfig[] {
  const configs: RepositoryConfig[] = [];
  for (const raw of raws) {
    try {
      configs.push(parseRepositorySecret(raw));
    } catch (err) {
      assert.ok(err instanceof RepositorySecretError, `not a RepositorySecretError: ${String(err)}`);
      unreadable.push(err);
      assert.equal(err.kind, 'Secret');
      assert.ok(err.message.startsWith(`Secret ${err.objectName || '<unnamed>'}: ${err.path}: `), err.message);
      assert.match(err.path, /^(data|stringData|metadata|kind|apiVersion)\b/, err.message);
      assert.ok(!unclear.test(err.reason), err.message);
      assertNoCredential(err.message, [raw]);
    }
  }
  return configs;
}

test('fuzz: a repository or repo-creds Secret parses to what it says, or is a DocumentError naming the Secret and field, no credential quoted', () => {
  fc.assert(
    fc.property(repositorySecret, (raw) => {
      const [config] = parseAll([raw]);
      if (!config) return;
      const meta = raw.metadata as { name: string; namespace?: string; labels?: Record<string, string> };
      assert.equal(config.secret, `${meta.namespace ?? ''}/${meta.name}`);
      assert.equal(config.secretType, meta.labels?.[SECRET_TYPE] === 'repo-creds' ? 'repo-creds' : 'repository');
      assert.notEqual(config.url, '');
      if (config.secretType === 'repo-creds') assert.equal(config.project, '', 'a template has no project');
      for (const k of BOOL_KEYS) assert.equal(typeof config[k as keyof RepositoryConfig], 'boolean', k);
      // stringData wins over data, as the API server merges them.
      const sd = (raw.stringData ?? {}) as Record<string, unknown>;
      for (const k of ['username', 'password', 'bearerToken', 'sshPrivateKey'] as const)
        if (typeof sd[k] === 'string') assert.equal(config[k], sd[k], k);
      // The result goes into a render request: the renderer must accept every value it carries.
      const access = RepositoryAccessSchema.safeParse({
        url: config.url,
        username: config.username,
        password: config.password,
        bearerToken: config.bearerToken,
        sshPrivateKey: config.sshPrivateKey,
        tlsClientCertData: config.tlsClientCertData,
        tlsClientCertKey: config.tlsClientCertKey,
        proxy: config.proxy,
        noProxy: config.noProxy,
      });
      assert.ok(access.success, `the renderer would refuse it: ${access.error?.issues[0]?.path.join('.')}`);
    }),
    {
      ...runs,
      examples: [
        [
          {
            metadata: { name: 'x', namespace: 'argocd' },
            stringData: { url: 'u', username: 'u'.repeat(5000) },
          } as never,
        ],
        [{ metadata: { name: 'x', namespace: 'argocd' }, stringData: { url: 'u', proxy: 'p'.repeat(5000) } } as never],
      ],
    },
  );
});

const project = fc.constantFrom('team', 'other', '');
const sourceRepos = fc.array(fc.oneof(url, fc.constantFrom('*', '!*', '**', '!https://git.example/*', '[', '{a,')), {
  maxLength: 3,
});

/**
 * argocd-tls-certs-cm's data without a prototype, as the controller's cache and `impersync diff`
 * build it: accessFor looks a URL's host up in it, and `https://constructor/x` is a URL.
 */
function state(configs: RepositoryConfig[], knownHosts = '', tlsCerts: Record<string, string> = {}): RepositoryState {
  return { configs, errors: [], knownHosts, tlsCerts: Object.assign(Object.create(null), tlsCerts) };
}

/** A RepositoryRefused names every Secret it came from and the field. */
function assertRefusal(err: unknown, configs: RepositoryConfig[], raws: unknown[]): void {
  assert.ok(err instanceof RepositoryRefused, `not a RepositoryRefused: ${String(err)}`);
  assert.match(err.message, /^repository Secret [^:]+: field '\w+' /);
  const named = /^repository Secret ([^:]+):/.exec(err.message)?.[1]?.split(', ') ?? [];
  for (const n of named)
    assert.ok(
      configs.some((c) => c.secret === n),
      `${n} is a Secret`,
    );
  assertNoCredential(err.message, raws);
}

test('fuzz: accessFor and dependencyAccess on any URL give a request the renderer accepts, or a RepositoryRefused naming Secret and field', () => {
  fc.assert(
    fc.property(
      fc.array(repositorySecret, { maxLength: 5 }),
      url,
      project,
      sourceRepos,
      fc.record({
        url: fc.option(url, { nil: undefined }),
        name: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }),
      }),
      fc.constantFrom(
        '',
        'git.example ssh-ed25519 AAAA\n',
        '*.example,!evil ssh-rsa AAAA\n[git.example]:2222 ssh-rsa B\n',
      ),
      fc.nat({ max: 9 }),
      fc.constantFrom('', '/app', '.git'),
      (raws, anyURL, proj, repos, anyNeed, knownHosts, pick, suffix) => {
        const unreadable: RepositorySecretError[] = [];
        const configs = parseAll(raws, unreadable);
        // Mostly a URL one of the Secrets is for (or under), so that they match and refuse.
        const theirs = configs[pick % 5] ? `${configs[pick % 5]?.url}${suffix}` : undefined;
        const target = pick < 5 && theirs ? theirs : anyURL;
        const need = pick >= 5 && theirs ? { url: theirs } : anyNeed;
        const st = state(configs, knownHosts, { 'git.example': '-----BEGIN CERTIFICATE-----\n' });
        // A Secret that does not parse refuses the URL it was for, naming it; nothing of its values.
        const refusal = unreadableRefusal(configs, unreadable, [target], proj);
        if (refusal !== undefined) {
          assert.ok(
            unreadable.some((e) => refusal === `unreadable repository ${e.message}`),
            refusal,
          );
          assertNoCredential(refusal, raws);
        }
        for (const call of [() => accessFor(st, target, proj), () => dependencyAccess(st, need, proj, repos)]) {
          let out;
          try {
            out = call();
          } catch (err) {
            assertRefusal(err, configs, raws);
            continue;
          }
          if (out === undefined) continue;
          if (out.url.length <= 4096) {
            const parsed = RepositoryAccessSchema.safeParse(out);
            assert.ok(parsed.success, `the renderer would refuse: ${JSON.stringify(parsed.error?.issues[0])}`);
          }
          // Credentials come only from a Secret that is there.
          for (const k of ['username', 'password', 'bearerToken', 'sshPrivateKey'] as const)
            if (out[k] !== undefined)
              assert.ok(
                configs.some((c) => c[k] === out[k]),
                k,
              );
        }
      },
    ),
    runs,
  );
});

/** Secrets for URLs inside one another, so that prefixes compete. */
const nested = fc.record({
  metadata: fc.record({
    name: fc.constantFrom('t1', 't2', 't3'),
    namespace: fc.constant('argocd'),
    labels: fc.record({ [SECRET_TYPE]: fc.constantFrom('repository', 'repo-creds', 'repo-creds') }),
  }),
  stringData: fc.record({
    url: fc.constantFrom(
      'https://git.example',
      'https://git.example/team',
      'git.example/team/app',
      'HTTPS://git.example/team/',
    ),
    password: credential,
  }),
});

test('fuzz: credentialTemplateFor picks the repo-creds Secret that covers the URL most deeply, never a repository Secret', () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(repositorySecret, nested), { maxLength: 6 }),
      url,
      fc.nat({ max: 7 }),
      (raws, anyURL, pick) => {
        const configs = parseAll(raws);
        // Mostly a URL under one of the Secrets' URLs, so that several templates compete.
        const theirs = configs[pick];
        const target = theirs ? `${theirs.url}/team/app` : anyURL;
        const best = credentialTemplateFor(configs, target);
        const depths = configs
          .filter((c) => c.secretType === 'repo-creds')
          .map((c) => templateCoverage(c.url, target))
          .filter((n): n is number => n !== undefined);
        if (depths.length === 0) return assert.equal(best, undefined);
        assert.ok(best && best.secretType === 'repo-creds');
        assert.equal(templateCoverage(best.url, target), Math.max(...depths));
      },
    ),
    runs,
  );
});

// Cluster Secrets: `config` is JSON holding the credentials; a broken one must not be quoted.
const clusterConfig = fc.oneof(
  credential.chain((c) =>
    fc.constantFrom(
      `{"bearerToken": "${c}"}`,
      `{"bearerToken": ${c}}`,
      `{"bearerToken": "${c}"`,
      `{"password": "${c}", "username": 1}`,
      `{"tlsClientConfig": {"keyData": "${c}", "insecure": "yes"}}`,
      `{"tlsClientConfig": "${c}"}`,
      `["${c}"]`,
      `${c}`,
      `{"bearerToken": "${c}\u0001"}`,
    ),
  ),
  fc.constantFrom('', ' ', '{}', 'null', '[]', '1', '{"tlsClientConfig":{"insecure":true}}'),
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 12 }),
);
const clusterFields = fc.record(
  {
    name: fc.constantFrom('remote', '', 'in-cluster'),
    server: fc.oneof(url, fc.constant('https://kubernetes.default.svc')),
    config: clusterConfig,
    namespaces: fc.constantFrom('a,b', ''),
  },
  { requiredKeys: [] },
);
const clusterSecret = fc.record(
  {
    apiVersion: fc.constant('v1'),
    kind: fc.constant('Secret'),
    metadata: fc.record({
      name: fc.constantFrom('cluster-a', 'b'),
      namespace: fc.constantFrom('argocd', ''),
      labels: fc.constant({ [SECRET_TYPE]: 'cluster' }),
    }),
    data: fc.oneof(
      clusterFields.map((f) =>
        Object.fromEntries(Object.entries(f).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
      ),
      fc.anything(),
    ),
    stringData: clusterFields,
  },
  { requiredKeys: ['metadata'] },
);

test('fuzz: a cluster Secret parses, or is a DocumentError naming the Secret and field that quotes no credential of its config', () => {
  fc.assert(
    fc.property(clusterSecret, (raw) => {
      let cluster;
      try {
        cluster = parseClusterSecret(raw);
      } catch (err) {
        assert.ok(err instanceof DocumentError, `not a DocumentError: ${String(err)}`);
        assert.ok(err.message.startsWith(`Secret ${err.objectName}: ${err.path}: `), err.message);
        assert.match(err.path, /^(data|stringData)\b/, err.message);
        assert.ok(!unclear.test(err.reason), err.message);
        assert.ok(!err.message.includes(MARK), `a credential is quoted: ${err.message.slice(0, 300)}`);
        return;
      }
      assert.ok(cluster.server !== '');
      assert.ok(cluster.secret.endsWith(raw.metadata.name));
      assert.equal(typeof cluster.config, 'object');
    }),
    {
      ...runs,
      examples: [
        [
          {
            metadata: { name: 'c', namespace: 'argocd' },
            stringData: { server: 'https://r', config: `{"bearerToken": ${MARK}xyz}` },
          } as never,
        ],
      ],
    },
  );
});

// Admission: garbage in an AppProject's sourceRepos and destinations, and any status at all.
const IN = 'https://kubernetes.default.svc';
const globbish = fc.oneof(
  url,
  fc.constantFrom('*', '!*', '', '!', '[', '[a-', '{a,b', '\\', '**', 'team-*', '!team-a', 'in-cluster', IN),
  fc.string({ maxLength: 10 }),
);
const settings = readImpersonationSettings({
  metadata: { name: 'argocd-cm', namespace: 'argocd' },
  data: { 'application.sync.impersonation.enabled': 'true' },
});
function controlState(p: AppProject): ControlState {
  return {
    namespace: 'argocd',
    settings,
    clusters: [],
    clusterErrors: [],
    projects: [p],
    projectErrors: new Map(),
  };
}
const anyValue = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.integer(),
  fc.constant(null),
  fc.boolean(),
  fc.jsonValue({ maxDepth: 2 }),
);
/** Statuses as another writer (an older Argo CD, a script, `kubectl edit`) leaves them. */
const strayStatus = fc.oneof(
  fc.constantFrom<unknown>(
    { sync: { status: '' } },
    { sync: { status: 'Synced' }, health: { status: 'Great' } },
    { conditions: 'none' },
    { conditions: [{ type: 'X' }] },
    { operationState: { phase: 'Dancing', startedAt: 'now' } },
    { operationState: { operation: {}, phase: 'Succeeded' } },
    { resources: [{ kind: 1 }] },
    { history: [{ id: 'one' }] },
    { reconciledAt: 7 },
    [],
    'Synced',
    null,
  ),
  fc.record(
    {
      sync: fc.oneof(fc.record({ status: fc.oneof(fc.constantFrom('Synced', 'OutOfSync', ''), anyValue) }), anyValue),
      health: fc.oneof(fc.record({ status: fc.oneof(fc.constantFrom('Healthy', 'Unknown'), anyValue) }), anyValue),
      conditions: fc.oneof(fc.array(fc.record({ type: anyValue, message: anyValue }), { maxLength: 2 }), anyValue),
      operationState: fc.oneof(fc.record({ phase: anyValue, startedAt: anyValue }, { requiredKeys: [] }), anyValue),
      resources: fc.oneof(fc.array(fc.record({ kind: anyValue, name: anyValue }), { maxLength: 2 }), anyValue),
      reconciledAt: anyValue,
    },
    { requiredKeys: [] },
  ),
);

function application(
  status: unknown,
  repoURL = 'https://git.example/team/app.git',
  dest = { server: IN, namespace: 'team-a' },
) {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'web', namespace: 'argocd' },
    spec: { project: 'team', source: { repoURL, path: 'app' }, destination: dest },
    ...(status === undefined ? {} : { status }),
  };
}

test('fuzz: an AppProject with garbage in sourceRepos and destinations admits or refuses with a condition naming what', () => {
  fc.assert(
    fc.property(
      fc.array(globbish, { maxLength: 4 }),
      fc.array(fc.record({ server: globbish, namespace: globbish, name: globbish }, { requiredKeys: [] }), {
        maxLength: 3,
      }),
      url,
      fc.record({ server: fc.oneof(globbish, fc.constant(IN)), namespace: globbish }),
      (repos, destinations, repoURL, dest) => {
        const p: AppProject = {
          metadata: { name: 'team', namespace: 'argocd' },
          spec: {
            sourceRepos: repos,
            destinations,
            destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }],
          },
        };
        const a = admit(controlState(p), application(undefined, repoURL, dest));
        if (a.admitted) return;
        const m = a.condition.message;
        assert.ok(m.trim() !== '' && !unclear.test(m), m);
        if (a.by === 'spec' && a.app)
          assert.match(m, /sourceRepos|destination|spec\.|repoURL|cluster|server|namespace/, m);
      },
    ),
    runs,
  );
});

test('fuzz: any status another writer left is read as a status or as none, and never decides the admission', () => {
  const p: AppProject = {
    metadata: { name: 'team', namespace: 'argocd' },
    spec: {
      sourceRepos: ['*'],
      destinations: [{ server: '*', namespace: '*' }],
      destinationServiceAccounts: [{ server: IN, namespace: 'team-*', defaultServiceAccount: 'deployer' }],
    },
  };
  const clean = admit(controlState(p), application(undefined));
  assert.ok(clean.admitted);
  fc.assert(
    fc.property(fc.oneof(strayStatus, fc.anything()), (status) => {
      const raw = application(status);
      const read = readStatus(raw);
      if (read !== undefined) assert.ok(ApplicationStatusSchema.safeParse(read).success);
      const a = admit(controlState(p), raw);
      assert.ok(
        a.admitted,
        `refused for its status: ${a.admitted ? '' : a.condition.message} (${JSON.stringify(status)?.slice(0, 200)})`,
      );
      assert.deepEqual(a.actsAs, clean.actsAs);
    }),
    { ...runs, examples: [[{ sync: { status: '' } }]] },
  );
});

// Status size: results near and over the budget.
const resultArb = fc.record({
  group: fc.constant(''),
  version: fc.constant('v1'),
  kind: fc.constant('ConfigMap'),
  namespace: fc.constant('big'),
  name: fc.nat({ max: 99_999 }).map((i) => `cm-${i}`),
  status: fc.constantFrom('Synced', 'Synced', 'Synced', 'Pruned', 'PruneSkipped', 'SyncFailed'),
  hookPhase: fc.constantFrom('Succeeded', 'Succeeded', 'Running', 'Failed'),
  syncPhase: fc.constant('Sync'),
  message: fc.nat({ max: 400 }).map((n) => 'm'.repeat(n)),
});
const NOTE = /(\d+) resource result\(s\) not listed: the Application's status would exceed the API server's size limit/;
const NOTES = new RegExp(NOTE.source, 'g');
const statusArb = fc
  .record({
    results: fc.array(resultArb, { maxLength: 300 }),
    inventory: fc.nat({ max: 2000 }),
    message: fc.constantFrom(
      'successfully synced (all tasks run)',
      '',
      undefined,
      "3 resource result(s) not listed: the Application's status would exceed the API server's size limit",
      "one or more tasks failed (3 resource result(s) not listed: the Application's status would exceed the API server's size limit)",
    ),
    already: fc.option(fc.nat({ max: 50 }), { nil: undefined }),
  })
  .map(({ results, inventory, message, already }) => ({
    sync: { status: 'Synced' },
    resources: Array.from({ length: inventory }, (_, i) => ({ version: 'v1', kind: 'ConfigMap', name: `cm-${i}` })),
    operationState: {
      phase: 'Succeeded',
      startedAt: '2024-01-01T00:00:00Z',
      operation: { sync: {} },
      ...(message === undefined ? {} : { message }),
      syncResult: {
        revision: 'abc',
        resources: results,
        ...(already === undefined ? {} : { resourcesOmitted: already }),
      },
    },
  }));
const size = (x: unknown) => Buffer.byteLength(JSON.stringify(x));
type Fitted = {
  resources: unknown[];
  operationState: { message?: string; syncResult: { resources: unknown[]; resourcesOmitted?: number } };
};
const isFine = (r: { status: string; hookPhase: string }) =>
  ['Synced', 'Pruned', 'PruneSkipped'].includes(r.status) && r.hookPhase === 'Succeeded';

test('fuzz: near and over the budget the status fits, keeps every failure it can, and says once how many results it left out', () => {
  fc.assert(
    fc.property(statusArb, fc.double({ min: 0.3, max: 1.2, noNaN: true }), (s, ratio) => {
      const budget = Math.max(1, Math.floor(size(s) * ratio));
      const out = fitStatus(s, budget) as unknown as Fitted;
      if (size(s) <= budget) return assert.equal(out, s, 'within the budget: written as it is');
      const results = s.operationState.syncResult.resources;
      if (results.length === 0) return assert.equal(out, s);
      const kept = out.operationState.syncResult.resources;
      const omitted = (s.operationState.syncResult.resourcesOmitted ?? 0) + results.length - kept.length;
      assert.equal(out.operationState.syncResult.resourcesOmitted, omitted);
      const notes = [...(out.operationState.message ?? '').matchAll(NOTES)];
      assert.equal(notes.length, 1, `one note in ${JSON.stringify(out.operationState.message)}`);
      assert.equal(Number(notes[0]?.[1]), omitted, 'the note says how many');
      assert.ok(
        kept.every((r) => !isFine(r as never)),
        'only failures are kept',
      );
      const bare = {
        ...s,
        operationState: { ...s.operationState, syncResult: { ...s.operationState.syncResult, resources: [] } },
      };
      // 150 bytes for the note; what is left when every result is out is not this code's to trim.
      if (size(bare) + 150 <= budget) assert.ok(size(out) <= budget, `${size(out)} > ${budget}`);
      const failures = results.filter((r) => !isFine(r));
      if (kept.length === 0 && failures.length > 0 && size(bare) + size(failures) + 150 < budget)
        assert.fail('failures fit and were dropped');
      assert.equal(out.resources.length, s.resources.length, 'the inventory is never trimmed');
    }),
    runs,
  );
});

/** A control cluster that refuses, as etcd does, an object over `limit` bytes. */
function sizeLimitedControl(limit: number, written: unknown[]): ControlClient {
  return {
    request: async (req: { body?: unknown }) => {
      // Discovery (is there a status subresource?): impersync's CRD as the API server lists it.
      if (req.body === undefined)
        return {
          ok: true,
          value: { resources: [{ name: 'applications' }, { name: 'applications/status' }] },
          warnings: [],
        };
      if (size(req.body) > limit)
        return {
          ok: false,
          error: { code: 500, reason: 'InternalError', message: 'etcdserver: request is too large' },
        };
      written.push(req.body);
      return { ok: true, value: req.body, warnings: [] };
    },
  } as unknown as ControlClient;
}

test('fuzz: writeStatus against a size limit under the budget writes a status under the limit that says what it left out', async () => {
  await fc.assert(
    fc.asyncProperty(statusArb, fc.double({ min: 0.2, max: 1.1, noNaN: true }), async (s, ratio) => {
      const raw = {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Application',
        metadata: { name: 'big', namespace: 'argocd' },
        spec: {},
      };
      const limit = Math.floor(size({ ...raw, status: s }) * ratio);
      const bare = {
        ...s,
        operationState: { ...s.operationState, syncResult: { ...s.operationState.syncResult, resources: [] } },
      };
      const written: unknown[] = [];
      const control = sizeLimitedControl(limit, written);
      const fits = size({ ...raw, status: bare }) + 150 <= limit;
      try {
        await writeStatus(control, raw, s as unknown as ApplicationStatus);
      } catch (err) {
        assert.ok(!fits, `refused though it fits without results: ${(err as Error).message}`);
        assert.match((err as Error).message, /^Application argocd\/big: writing status failed: 500 /);
        return;
      }
      const body = written[0] as { status: Fitted };
      assert.ok(size(body) <= limit);
      const n = s.operationState.syncResult.resources.length - body.status.operationState.syncResult.resources.length;
      if (n > 0) assert.match(body.status.operationState.message ?? '', NOTE);
    }),
    { numRuns: 100 },
  );
});
