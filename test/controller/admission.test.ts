// The admission gate (src/controller/admission.ts) as a table: control-namespace state and an
// Application in, the admitted identity or the refusing condition out. The controller, `impersync
// explain` and `impersync diff` all ask this one function, so each row holds for the three.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admit, identityConditions } from '../../src/controller/admission.ts';
import type { Admission, ControlState } from '../../src/controller/admission.ts';
import type { AppProject } from '../../src/api/index.ts';
import { readImpersonationSettings } from '../../src/impersonation/index.ts';
import { APPLICATION_RULES, ruleFor } from '../../src/controller/field-support.ts';
import { readFileSync } from 'node:fs';

const IN = 'https://kubernetes.default.svc';
const settings = (data: Record<string, string>) =>
  readImpersonationSettings({ metadata: { name: 'argocd-cm', namespace: 'argocd' }, data });
const ENABLED = { 'application.sync.impersonation.enabled': 'true' };

function project(name: string, spec: Partial<AppProject['spec']> = {}, labels?: Record<string, string>): AppProject {
  return {
    metadata: { name, namespace: 'argocd', ...(labels ? { labels } : {}) },
    spec: {
      sourceRepos: ['*'],
      destinations: [{ server: '*', namespace: '*' }],
      destinationServiceAccounts: [{ server: IN, namespace: 'team-*', defaultServiceAccount: 'deployer' }],
      ...spec,
    },
  };
}

function state(over: Partial<ControlState> = {}): ControlState {
  return {
    namespace: 'argocd',
    settings: settings(ENABLED),
    clusters: [],
    clusterErrors: [],
    projects: [project('team')],
    projectErrors: new Map(),
    ...over,
  };
}

function app(over: { namespace?: string; project?: string; destination?: Record<string, string>; repo?: string } = {}) {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'web', namespace: over.namespace ?? 'argocd' },
    spec: {
      project: over.project ?? 'team',
      source: { repoURL: over.repo ?? 'https://git.example/web.git', path: 'app' },
      destination: over.destination ?? { server: IN, namespace: 'team-a' },
    },
  };
}

/** What a row expects: admitted as someone, or refused by the spec or the identity decision with a message. */
type Outcome = { actsAs: string } | { refused: 'spec' | 'identity'; message: string | RegExp };

function outcome(a: Admission): Outcome {
  if (a.admitted) return { actsAs: 'impersonate' in a.actsAs ? a.actsAs.impersonate : 'controller' };
  return { refused: a.by, message: a.condition.message };
}

const rows: Array<{ name: string; state?: ControlState; app?: unknown; expect: Outcome }> = [
  {
    name: 'spec §5: the first matching entry names the ServiceAccount the client impersonates',
    expect: { actsAs: 'system:serviceaccount:team-a:deployer' },
  },
  {
    name: 'spec §4: impersonation disabled: the controller’s own credential',
    state: state({ settings: settings({}) }),
    expect: { actsAs: 'controller' },
  },
  {
    name: 'spec §5: no entry matches, enforcement off: fallback to the controller’s own credential',
    state: state({ settings: settings({ ...ENABLED, 'application.sync.impersonation.enforced': 'false' }) }),
    app: app({ destination: { server: IN, namespace: 'other' } }),
    expect: { actsAs: 'controller' },
  },
  {
    name: 'spec §5: no entry matches, enforced: refused with the deny message, nothing compared',
    app: app({ destination: { server: IN, namespace: 'other' } }),
    expect: {
      refused: 'identity',
      message: `no matching service account found for destination server ${IN} and namespace other`,
    },
  },
  {
    name: 'spec §7: an invalid pattern inherited from a global project is the decision’s error',
    state: state({
      settings: settings({
        ...ENABLED,
        globalProjects: '- {projectName: global, labelSelector: {matchLabels: {tier: t}}}',
      }),
      projects: [
        project('team', { destinationServiceAccounts: [] }, { tier: 't' }),
        project('global', {
          destinationServiceAccounts: [{ server: '[', namespace: '*', defaultServiceAccount: 'x' }],
        }),
      ],
    }),
    expect: { refused: 'identity', message: /^failed to derive service account to impersonate: invalid glob pattern/ },
  },
  {
    name: 'an Application that does not parse is refused with the field',
    app: {
      kind: 'Application',
      metadata: { name: 'web', namespace: 'argocd' },
      spec: { destination: { namespace: 5 } },
    },
    expect: { refused: 'spec', message: /spec\.destination\.namespace: expected string, got number/ },
  },
  {
    name: 'spec §6: a destination with both name and server',
    app: app({ destination: { server: IN, name: 'in-cluster', namespace: 'team-a' } }),
    expect: { refused: 'spec', message: /^spec\.destination: application destination can't have both name and server/ },
  },
  {
    name: 'spec §6: an unknown server names the cluster Secrets that could not be read',
    state: state({
      clusterErrors: ['Secret argocd/far: data.server: a cluster Secret needs the server URL'],
    }),
    app: app({ destination: { server: 'https://far.example', namespace: 'team-a' } }),
    expect: {
      refused: 'spec',
      message:
        "spec.destination.server: destination cluster server 'https://far.example' not found: no cluster Secret has that server (unreadable cluster Secrets: Secret argocd/far: data.server: a cluster Secret needs the server URL)",
    },
  },
  {
    name: 'a project that does not exist, "default" included (no built-in one stands in)',
    app: app({ project: '' }),
    expect: { refused: 'spec', message: 'Application referencing project default which does not exist' },
  },
  {
    name: 'a project that does not parse is refused with its own message',
    state: state({
      projects: [],
      projectErrors: new Map([['team', 'AppProject argocd/team: spec.sourceRepos: expected array, got string']]),
    }),
    expect: { refused: 'spec', message: 'AppProject argocd/team: spec.sourceRepos: expected array, got string' },
  },
  {
    name: 'apps in any namespace: a namespace the project’s sourceNamespaces do not list',
    app: app({ namespace: 'team-apps' }),
    expect: {
      refused: 'spec',
      message:
        "application 'web' in namespace 'team-apps' is not permitted to use project 'team' (spec.sourceNamespaces)",
    },
  },
  {
    name: 'apps in any namespace: a namespace sourceNamespaces matches',
    state: state({ projects: [project('team', { sourceNamespaces: ['team-*'] })] }),
    app: app({ namespace: 'team-apps' }),
    expect: { actsAs: 'system:serviceaccount:team-a:deployer' },
  },
  {
    name: 'an invalid entry after the match is never read: the earlier entry decides (Argo CD never validates a project)',
    state: state({
      projects: [
        project('team', {
          destinationServiceAccounts: [
            { server: IN, namespace: 'team-*', defaultServiceAccount: 'deployer' },
            { server: '!x', namespace: '[z-a]', defaultServiceAccount: 'bad*sa' },
          ],
        }),
      ],
    }),
    expect: { actsAs: 'system:serviceaccount:team-a:deployer' },
  },
  {
    name: "an invalid defaultServiceAccount in the entry that matches is Argo CD's derive error",
    state: state({
      projects: [
        project('team', {
          destinationServiceAccounts: [{ server: IN, namespace: '*', defaultServiceAccount: 'bad*sa' }],
        }),
      ],
    }),
    expect: {
      refused: 'identity',
      message:
        "failed to derive service account to impersonate: default service account contains invalid chars 'bad*sa'",
    },
  },
  {
    name: 'an invalid server glob in an entry visited before the match is the derive error, whatever follows',
    state: state({
      projects: [
        project('team', {
          destinationServiceAccounts: [
            { server: '[z-a]', namespace: '*', defaultServiceAccount: 'other' },
            { server: IN, namespace: 'team-*', defaultServiceAccount: 'deployer' },
          ],
        }),
      ],
    }),
    expect: {
      refused: 'identity',
      message:
        "failed to derive service account to impersonate: invalid glob pattern for destination server: hi character 'a' should be greater than lo 'z'",
    },
  },
  {
    name: 'spec §9: a source repository the project does not permit',
    state: state({ projects: [project('team', { sourceRepos: ['https://git.example/other.git'] })] }),
    expect: {
      refused: 'spec',
      message: /^application repo https:\/\/git\.example\/web\.git is not permitted in project 'team'/,
    },
  },
  {
    name: 'spec §9: a destination the project does not permit',
    state: state({ projects: [project('team', { destinations: [{ server: IN, namespace: 'team-b' }] })] }),
    expect: {
      refused: 'spec',
      message: new RegExp(
        `^application destination server '${IN}' and namespace 'team-a' do not match any of the allowed destinations in project 'team'`,
      ),
    },
  },
  {
    name: 'a status another writer left in a shape the schema rejects is no reason to refuse: it is replaced',
    app: { ...app(), status: { sync: { status: '' }, health: { status: 'Great' }, conditions: 'none' } },
    expect: { actsAs: 'system:serviceaccount:team-a:deployer' },
  },
  {
    name: 'a bad spec is still refused, whatever the status',
    app: { ...app(), spec: { ...app().spec, source: { repoURL: 7 } }, status: { sync: { status: '' } } },
    expect: { refused: 'spec', message: /^Application argocd\/web: spec\.source\.repoURL: / },
  },
];

for (const row of rows) {
  test(`admission: ${row.name}`, () => {
    const got = outcome(admit(row.state ?? state(), row.app ?? app()));
    if ('refused' in row.expect && row.expect.message instanceof RegExp && 'refused' in got) {
      assert.equal(got.refused, row.expect.refused);
      assert.match(String(got.message), row.expect.message);
    } else assert.deepEqual(got, row.expect);
  });
}

test('an admitted or identity-refused Application carries its project, cluster and identity conditions', () => {
  const a = admit(state(), app());
  assert.ok(a.admitted);
  assert.equal(a.project.metadata.name, 'team');
  assert.equal(a.cluster.server, IN);
  assert.deepEqual(
    a.conditions.map((c) => c.type),
    ['ImpersonationInfo'],
  );
  const denied = admit(state(), app({ destination: { server: IN, namespace: 'other' } }));
  assert.ok(!denied.admitted && denied.by === 'identity');
  assert.equal(denied.condition.type, 'ComparisonError');
  assert.equal(denied.identity.decision, 'deny');
  const invalid = admit(state(), app({ project: 'nope' }));
  assert.ok(!invalid.admitted && invalid.by === 'spec');
  assert.equal(invalid.condition.type, 'InvalidSpecError');
  assert.equal(invalid.app?.metadata.name, 'web');
});

test('every invalid entry of the project and of its global projects is an ImpersonationWarning naming it', () => {
  const a = admit(
    state({
      settings: settings({
        ...ENABLED,
        globalProjects: '- projectName: shared\n  labelSelector: {matchLabels: {tenant: "true"}}\n',
      }),
      projects: [
        project(
          'team',
          {
            destinationServiceAccounts: [
              { server: IN, namespace: 'team-*', defaultServiceAccount: 'deployer' },
              { server: IN, namespace: '*', defaultServiceAccount: 'bad*sa' },
            ],
          },
          { tenant: 'true' },
        ),
        project('shared', {
          destinationServiceAccounts: [{ server: '!x', namespace: '*', defaultServiceAccount: 'sa' }],
        }),
      ],
    }),
    app(),
  );
  assert.ok(a.admitted, 'the first entry decides');
  assert.deepEqual(
    a.conditions.find((c) => c.type === 'ImpersonationWarning')?.message,
    [
      "AppProject team: spec.destinationServiceAccounts[1].defaultServiceAccount: defaultServiceAccount has an invalid format, 'bad*sa' (Argo CD's API server would refuse this project; a sync whose walk reaches this entry fails)",
      "AppProject shared: spec.destinationServiceAccounts[0].server: server has an invalid format, '!x' (Argo CD's API server would refuse this project; a sync whose walk reaches this entry fails)",
    ].join('; '),
  );
});

test('the identity condition names the decision and the ServiceAccount; warnings become their own condition', () => {
  const common = { trace: [], entries: [], globalProjects: [] };
  const impersonate = identityConditions({
    ...common,
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:g:sa',
    matched: { index: 1, server: '*', namespace: 'g', defaultServiceAccount: 'sa', fromProject: 'p' },
    message: '',
    warnings: [],
  });
  assert.deepEqual(impersonate, [
    {
      type: 'ImpersonationInfo',
      message:
        "comparison and sync run as system:serviceaccount:g:sa (destinationServiceAccounts[1] of AppProject 'p': server '*', namespace 'g')",
    },
  ]);
  const deny = identityConditions({
    ...common,
    decision: 'deny',
    serviceAccount: null,
    matched: null,
    message: 'no matching service account found for destination server s and namespace n',
    warnings: ['w1', 'w2'],
  });
  assert.deepEqual(deny, [
    {
      type: 'ImpersonationInfo',
      message: 'refused: no matching service account found for destination server s and namespace n',
    },
    { type: 'ImpersonationWarning', message: 'w1; w2' },
  ]);
});

test('cluster tenancy: inClusterEnabled "false", project-scoped clusters and permitOnlyProjectScopedClusters', () => {
  const off = admit(state({ inClusterEnabled: false }), app());
  assert.deepEqual(outcome(off), {
    refused: 'spec',
    message: `spec.destination.server: error getting cluster by server "${IN}": rpc error: code = NotFound desc = cluster "${IN}" is disabled`,
  });
  const far = { name: 'far', server: 'https://far.example', config: {}, secret: 'argocd/far', project: 'own' };
  const dsa = [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }];
  const own = project('own', { destinations: [], destinationServiceAccounts: dsa });
  const strict = project('strict', { permitOnlyProjectScopedClusters: true, destinationServiceAccounts: dsa });
  const s = state({ clusters: [far], projects: [own, strict] });
  const to = (p: string, server: string) => admit(s, app({ project: p, destination: { server, namespace: 'web' } }));
  // The project's own cluster is its destination though it lists none.
  assert.deepEqual(outcome(to('own', far.server)), { actsAs: 'system:serviceaccount:web:deployer' });
  const ownAdmitted = to('own', far.server);
  assert.ok(ownAdmitted.admitted);
  assert.deepEqual(ownAdmitted.projectClusters, [far]);
  // permitOnlyProjectScopedClusters: another project's cluster and the in-cluster one are refused.
  for (const server of [far.server, IN]) {
    const refused = to('strict', server);
    assert.ok(!refused.admitted && refused.by === 'spec');
    assert.ok(
      refused.condition.message.startsWith(
        `application destination server '${server}' and namespace 'web' do not match any of the allowed destinations in project 'strict'`,
      ),
      refused.condition.message,
    );
  }
});

const surface = JSON.parse(readFileSync(new URL('./fixtures/argocd-surface.json', import.meta.url), 'utf8')) as {
  application: string[];
};

/** `app()` with `path` (CRD-style, arrays as []) set to "x", the arrays one item long. */
function appSetting(path: string): Record<string, unknown> {
  const root = app() as unknown as Record<string, unknown>;
  let cur = root;
  const steps = path.split('.');
  steps.forEach((step, i) => {
    const key = step.replace(/\[\]$/, '');
    const last = i === steps.length - 1;
    if (step.endsWith('[]')) {
      const list = ((cur[key] as unknown[] | undefined) ??= []);
      if (last) list.push('x');
      else cur = (list[0] ??= { repoURL: 'https://git.example/web.git' }) as Record<string, unknown>;
    } else if (last) cur[key] = 'x';
    else
      cur = (cur[key] ??= key === 'source' ? { repoURL: 'https://git.example/web.git' } : {}) as Record<
        string,
        unknown
      >;
  });
  return root;
}

test('every Application field refused at admission, set alone, refuses it with an InvalidSpecError naming the field', () => {
  const wrong: string[] = [];
  let checked = 0;
  for (const name of surface.application) {
    const rule = ruleFor(APPLICATION_RULES, name);
    if (rule?.support !== 'refused' || !rule.note.includes('controller/refused-fields.ts')) continue;
    checked++;
    const a = admit(state(), appSetting(name));
    const field = rule.pattern.replace(/\.\*\*$/, '');
    const message = a.admitted ? '' : a.condition.message.replace(/\[\d+\]/g, '[]');
    if (a.admitted || a.by !== 'spec' || a.condition.type !== 'InvalidSpecError' || !message.includes(field))
      wrong.push(`${name}: ${a.admitted ? 'admitted' : a.condition.message}`);
  }
  assert.deepEqual(wrong, []);
  // spec.sourceHydrator's fields, and tagPrefix on each of the four kinds of source.
  assert.ok(checked > 4, `checked ${checked}`);
});

test('spec.sourceHydrator and a tagPrefix are refused with why; the same Application without them is admitted', () => {
  const hydrated = app() as unknown as { spec: Record<string, unknown> };
  hydrated.spec['sourceHydrator'] = {
    drySource: { repoURL: 'https://git.example/web.git', path: 'app', targetRevision: 'HEAD' },
    syncSource: { targetBranch: 'env/prod', path: 'app' },
  };
  const h = admit(state(), hydrated);
  assert.equal(h.admitted, false);
  assert.match(
    h.admitted ? '' : h.condition.message,
    /^spec\.sourceHydrator: the source hydrator is not run by impersync .*; nothing is synced$/,
  );
  const tagged = app() as unknown as { spec: { source: Record<string, unknown> } };
  tagged.spec.source['tagPrefix'] = 'component-b/';
  tagged.spec.source['targetRevision'] = '1.0.*';
  const t = admit(state(), tagged);
  assert.equal(t.admitted ? '' : t.condition.message.split(' is not supported')[0], 'spec.source.tagPrefix');
  tagged.spec.source['tagPrefix'] = '';
  assert.equal(admit(state(), tagged).admitted, true, 'an empty tagPrefix is none');
});

test('compare option ServerSideDiff=false is refused naming it and why; ServerSideDiff=true is admitted', () => {
  const a = app() as unknown as { metadata: { annotations?: Record<string, string> } };
  a.metadata.annotations = { 'argocd.argoproj.io/compare-options': 'IgnoreExtraneous, ServerSideDiff=false' };
  const r = admit(state(), a);
  assert.equal(r.admitted, false);
  assert.equal(r.admitted ? '' : r.condition.type, 'InvalidSpecError');
  assert.match(
    r.admitted ? '' : r.condition.message,
    /^metadata\.annotations\[argocd\.argoproj\.io\/compare-options\] ServerSideDiff=false is not supported: Argo CD then compares client-side .*; nothing is synced$/,
  );
  a.metadata.annotations = { 'argocd.argoproj.io/compare-options': 'ServerSideDiff=true,IncludeMutationWebhook=true' };
  assert.equal(admit(state(), a).admitted, true);
});

test("a cluster Secret's config.proxyUrl refuses the Application before the cluster is reached, naming it", () => {
  const far = {
    name: 'far',
    server: 'https://far.example',
    config: { bearerToken: 't', proxyUrl: 'socks5://proxy.internal:1080' },
    secret: 'argocd/far',
  };
  const anywhere = [
    project('team', {
      destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }],
    }),
  ];
  const s = state({ clusters: [far], projects: anywhere });
  const a = admit(s, app({ destination: { server: far.server, namespace: 'team-a' } }));
  assert.deepEqual(outcome(a), {
    refused: 'spec',
    message:
      'cluster Secret argocd/far: config.proxyUrl is not supported by impersync (Argo CD reaches the cluster through that proxy; impersync would connect directly), so the cluster is not reached; nothing is read or applied',
  });
  const direct = state({ clusters: [{ ...far, config: { bearerToken: 't' } }], projects: anywhere });
  assert.equal(admit(direct, app({ destination: { server: far.server, namespace: 'team-a' } })).admitted, true);
});
