// spec §5 (the decision table), with §7 inheritance and the §10 warning through decideIdentity.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  decide,
  decideIdentity,
  readImpersonationSettings,
  impersonationDisabledWarning,
  projectImpersonationWarning,
  type DecisionInput,
} from '../../src/impersonation/index.ts';
import type { AppProject, Application } from '../../src/api/index.ts';

const IN = 'https://kubernetes.default.svc';
const base = (over: Partial<DecisionInput> = {}): DecisionInput => ({
  settings: { enabled: true, enforced: true },
  project: 'my-project',
  entries: [
    { server: IN, namespace: 'guestbook', defaultServiceAccount: 'guestbook-deployer', fromProject: 'my-project' },
  ],
  resolvedServer: IN,
  destinationNamespace: 'guestbook',
  applicationNamespace: 'argocd',
  ...over,
});

describe('spec §5: the decision', () => {
  test('"When impersonation is disabled, everything runs with the controller\'s own credential"', () => {
    for (const enforced of [true, false]) {
      const d = decide(base({ settings: { enabled: false, enforced } }));
      assert.deepEqual(d, { decision: 'disabled', serviceAccount: null, matched: null, message: '', trace: [] });
    }
    // Disabled: not even an invalid pattern is looked at.
    assert.equal(
      decide(
        base({
          settings: { enabled: false, enforced: true },
          entries: [{ server: '[', namespace: '', defaultServiceAccount: 'x', fromProject: 'p' }],
        }),
      ).decision,
      'disabled',
    );
  });

  test('"ServiceAccount found | any → Impersonate-User: system:serviceaccount:<ns>:<name>"', () => {
    for (const enforced of [true, false]) {
      const d = decide(base({ settings: { enabled: true, enforced } }));
      assert.equal(d.decision, 'impersonate');
      assert.equal(d.serviceAccount, 'system:serviceaccount:guestbook:guestbook-deployer');
      assert.deepEqual(d.matched, {
        index: 0,
        server: IN,
        namespace: 'guestbook',
        defaultServiceAccount: 'guestbook-deployer',
        fromProject: 'my-project',
      });
      assert.equal(d.message, '');
    }
  });

  test('"error | any → message failed to derive service account to impersonate: <error>"', () => {
    for (const enforced of [true, false]) {
      const d = decide(
        base({
          settings: { enabled: true, enforced },
          entries: [{ server: '[', namespace: '*', defaultServiceAccount: 'x', fromProject: 'p' }],
        }),
      );
      assert.equal(d.decision, 'error');
      assert.equal(d.serviceAccount, null);
      assert.equal(d.matched, null);
      assert.equal(
        d.message,
        'failed to derive service account to impersonate: invalid glob pattern for destination server: unexpected end of input',
      );
    }
    const bad = decide(
      base({ entries: [{ server: IN, namespace: '*', defaultServiceAccount: 'a/b', fromProject: 'p' }] }),
    );
    assert.equal(bad.decision, 'error');
    assert.equal(
      bad.message,
      "failed to derive service account to impersonate: default service account contains invalid chars 'a/b'",
    );
    assert.equal(
      bad.matched?.defaultServiceAccount,
      'a/b',
      'the matched entry is named even when its ServiceAccount is invalid',
    );
  });

  test('"none | on → message no matching service account found for destination server <resolved server> and namespace <raw destination namespace>"', () => {
    const d = decide(base({ destinationNamespace: 'other' }));
    assert.equal(d.decision, 'deny');
    assert.equal(d.serviceAccount, null);
    assert.equal(d.message, `no matching service account found for destination server ${IN} and namespace other`);
    const empty = decide(base({ destinationNamespace: '' }));
    assert.equal(
      empty.message,
      `no matching service account found for destination server ${IN} and namespace `,
      'the raw namespace, not the fallback',
    );
  });

  test('"none | off → proceed with the controller\'s own credential; log at info: no matching service account found for impersonation (project: <p>, server: <s>, namespace: <n>), falling back to controller service account"', () => {
    const d = decide(base({ settings: { enabled: true, enforced: false }, destinationNamespace: 'other' }));
    assert.equal(d.decision, 'fallback');
    assert.equal(d.serviceAccount, null);
    assert.equal(
      d.message,
      `no matching service account found for impersonation (project: my-project, server: ${IN}, namespace: other), falling back to controller service account`,
    );
  });
});

const project = (
  name: string,
  entries: { server: string; namespace?: string; defaultServiceAccount: string }[],
  labels?: Record<string, string>,
): AppProject => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'AppProject',
  metadata: { name, namespace: 'argocd', ...(labels ? { labels } : {}) },
  spec: { destinationServiceAccounts: entries },
});
const app = (namespace?: string): Application => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
  metadata: { name: 'guestbook', namespace: 'argocd' },
  spec: { project: 'my-project', destination: { server: IN, ...(namespace !== undefined ? { namespace } : {}) } },
});

describe('decideIdentity: one Application, with global projects and warnings', () => {
  const enabled = readImpersonationSettings({
    metadata: { name: 'argocd-cm' },
    data: { 'application.sync.impersonation.enabled': 'true' },
  });

  test("uses the project's effective list and the Application's destination", () => {
    const d = decideIdentity({
      application: app('guestbook'),
      project: project('my-project', [{ server: IN, namespace: 'guestbook', defaultServiceAccount: 'gd' }]),
      settings: enabled,
      resolvedServer: IN,
    });
    assert.equal(d.decision, 'impersonate');
    assert.equal(d.serviceAccount, 'system:serviceaccount:guestbook:gd');
    assert.deepEqual(d.warnings, []);
  });

  test('an inherited entry decides when no own entry matches, and names its project (spec §7)', () => {
    const settings = {
      ...enabled,
      globalProjects: [{ projectName: 'global', labelSelector: { matchLabels: { tier: 'tenant' } } }],
    };
    const own = project('my-project', [{ server: IN, namespace: 'other', defaultServiceAccount: 'own' }], {
      tier: 'tenant',
    });
    const global = project('global', [{ server: '*', namespace: '*', defaultServiceAccount: 'inherited' }]);
    const d = decideIdentity({
      application: app('guestbook'),
      project: own,
      projects: [own, global],
      settings,
      resolvedServer: IN,
    });
    assert.equal(d.serviceAccount, 'system:serviceaccount:guestbook:inherited');
    assert.equal(d.matched?.fromProject, 'global');
    assert.equal(d.matched?.index, 1);
    assert.deepEqual(d.globalProjects, ['global']);
  });

  test('spec §10: "a warning ... when a project uses destinationServiceAccounts while the feature is off"', () => {
    const off = readImpersonationSettings({ metadata: { name: 'argocd-cm' }, data: {} });
    const d = decideIdentity({
      application: app('guestbook'),
      project: project('my-project', [{ server: IN, namespace: '*', defaultServiceAccount: 'x' }]),
      settings: off,
      resolvedServer: IN,
    });
    assert.equal(d.decision, 'disabled');
    assert.deepEqual(d.warnings, [impersonationDisabledWarning('my-project', 1)]);
    assert.equal(
      impersonationDisabledWarning('my-project', 2),
      `AppProject 'my-project' has 2 destinationServiceAccounts entries, but sync impersonation is disabled (argocd-cm application.sync.impersonation.enabled is not "true"): its Applications sync with the controller's own credential`,
    );
    const none = decideIdentity({
      application: app('guestbook'),
      project: project('my-project', []),
      settings: off,
      resolvedServer: IN,
    });
    assert.deepEqual(none.warnings, [], 'no entries, no warning');
    assert.equal(projectImpersonationWarning('p', 3, { enabled: true }), null, 'feature on, no warning');
  });

  test('settings read errors are carried as warnings, and the defaults apply (spec §4)', () => {
    const broken = readImpersonationSettings(new Error('timeout'));
    const d = decideIdentity({
      application: app('guestbook'),
      project: project('my-project', []),
      settings: broken,
      resolvedServer: IN,
    });
    assert.equal(d.decision, 'disabled');
    assert.deepEqual(d.warnings.slice(0, 2), broken.errors);
  });

  test('does not mutate its inputs', () => {
    const p = project('my-project', [{ server: IN, namespace: 'guestbook', defaultServiceAccount: 'gd' }]);
    const a = app('guestbook');
    const before = JSON.stringify([p, a, enabled]);
    decideIdentity({ application: a, project: p, projects: [p], settings: enabled, resolvedServer: IN });
    assert.equal(JSON.stringify([p, a, enabled]), before);
  });
});

// Beyond Argo CD (docs/impersonation.md §10): Argo CD impersonates whatever name the entry gives.
describe('impersync: ServiceAccounts in kube-system, kube-public and kube-node-lease', () => {
  const refusal = (user: string) =>
    `refusing to impersonate ${user}: ServiceAccounts in kube-system, kube-public and kube-node-lease are not impersonated unless argocd-cm sets impersync.impersonation.allowSystemNamespaces: "true"`;
  const entry = (namespace: string, defaultServiceAccount: string) => ({
    server: IN,
    namespace,
    defaultServiceAccount,
    fromProject: 'my-project',
  });
  const cases: {
    name: string;
    entry: ReturnType<typeof entry>;
    destinationNamespace: string;
    applicationNamespace?: string;
    refused: string | null;
  }[] = [
    {
      name: '"namespace:name" in kube-system',
      entry: entry('*', 'kube-system:generic-garbage-collector'),
      destinationNamespace: 'guestbook',
      refused: 'system:serviceaccount:kube-system:generic-garbage-collector',
    },
    {
      name: 'a bare name in a destination namespace kube-public',
      entry: entry('*', 'reader'),
      destinationNamespace: 'kube-public',
      refused: 'system:serviceaccount:kube-public:reader',
    },
    {
      name: "a bare name with no destination namespace, in an Application's own namespace kube-node-lease",
      entry: entry('', 'x'),
      destinationNamespace: '',
      applicationNamespace: 'kube-node-lease',
      refused: 'system:serviceaccount:kube-node-lease:x',
    },
    {
      name: 'more colons: the namespace is still kube-system',
      entry: entry('*', 'kube-system:a:b'),
      destinationNamespace: 'guestbook',
      refused: 'system:serviceaccount:kube-system:a:b',
    },
    {
      name: 'a namespace that only starts like one (kube-systems) is a tenant namespace',
      entry: entry('*', 'kube-systems:deployer'),
      destinationNamespace: 'guestbook',
      refused: null,
    },
    {
      name: 'spaces are kept verbatim (spec §3.4): " kube-system" is another namespace for the API server too',
      entry: entry('*', ' kube-system:deployer'),
      destinationNamespace: 'guestbook',
      refused: null,
    },
    {
      name: 'kube-system as the name, not the namespace',
      entry: entry('*', 'tenants:kube-system'),
      destinationNamespace: 'guestbook',
      refused: null,
    },
  ];

  for (const c of cases) {
    test(`${c.name}: ${c.refused ? 'error naming the ServiceAccount' : 'impersonated'}, whatever enforced says`, () => {
      for (const enforced of [true, false]) {
        const d = decide(
          base({
            settings: { enabled: true, enforced },
            entries: [c.entry],
            destinationNamespace: c.destinationNamespace,
            applicationNamespace: c.applicationNamespace ?? 'argocd',
          }),
        );
        if (c.refused === null) {
          assert.equal(d.decision, 'impersonate');
          continue;
        }
        assert.equal(d.decision, 'error');
        assert.equal(d.serviceAccount, null, 'nothing is impersonated');
        assert.equal(d.message, refusal(c.refused));
        assert.equal(d.matched?.defaultServiceAccount, c.entry.defaultServiceAccount, 'the deciding entry is named');
      }
    });
  }

  test('allowSystemNamespaces true: impersonated as written', () => {
    const d = decide(
      base({
        settings: { enabled: true, enforced: true, allowSystemNamespaces: true },
        entries: [entry('*', 'kube-system:generic-garbage-collector')],
      }),
    );
    assert.equal(d.decision, 'impersonate');
    assert.equal(d.serviceAccount, 'system:serviceaccount:kube-system:generic-garbage-collector');
  });

  test('only an impersonation is refused: disabled and fallback use no ServiceAccount', () => {
    const sys = [entry('kube-system', 'x')];
    assert.equal(
      decide(base({ settings: { enabled: false, enforced: true }, entries: sys, destinationNamespace: 'kube-system' }))
        .decision,
      'disabled',
    );
    assert.equal(
      decide(base({ settings: { enabled: true, enforced: false }, entries: sys, destinationNamespace: 'other' }))
        .decision,
      'fallback',
    );
  });

  test('decideIdentity reads the key from argocd-cm: exactly "true" allows', () => {
    const sysProject = project('my-project', [{ server: IN, namespace: '*', defaultServiceAccount: 'kube-system:x' }]);
    const settingsWith = (value?: string) =>
      readImpersonationSettings({
        metadata: { name: 'argocd-cm' },
        data: {
          'application.sync.impersonation.enabled': 'true',
          ...(value !== undefined ? { 'impersync.impersonation.allowSystemNamespaces': value } : {}),
        },
      });
    const decision = (value?: string) =>
      decideIdentity({
        application: app('guestbook'),
        project: sysProject,
        settings: settingsWith(value),
        resolvedServer: IN,
      });
    for (const v of [undefined, 'True', 'yes', ' true', 'false', '']) {
      const d = decision(v);
      assert.equal(d.decision, 'error', JSON.stringify(v));
      assert.equal(d.message, refusal('system:serviceaccount:kube-system:x'));
    }
    assert.equal(decision('true').decision, 'impersonate');
  });
});
