// argocd-cm's resource.compareoptions end to end, with Argo CD's YAML (util/settings/settings.go
// ArgoCDDiffOptions, GetResourceOverrides; util/argo/normalizers; controller/appcontroller.go):
// ignoreAggregatedRoles, ignoreResourceStatusField and ignoreDifferencesOnResourceUpdates. The
// tests run in order: each sets the compare options it needs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, getRaw, grantRole, requestOk, WIDGET_CRD } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import {
  application,
  operationPhase,
  setSettings,
  startFixture,
  waitForApp,
  startDeployersPlane,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

const BASE = {
  'application.sync.impersonation.enabled': 'true',
  'resource.customizations.ignoreDifferences.ConfigMap': 'jsonPointers:\n- /data/ignored\n',
};
const compareOptions = (yaml: string) => setSettings(cp, { ...BASE, 'resource.compareoptions': yaml });

const AGGREGATE_LABEL = 'example.com/aggregate-to-e2e-agg';
const RBAC = 'rbac.authorization.k8s.io/v1';

const synced = (a: { status?: Record<string, unknown> }) =>
  (a.status?.['sync'] as { status?: string } | undefined)?.status;

function app(name: string) {
  const base = application(name, fx.repo.url, {
    project: 'cmp',
    path: name,
    destination: { server: 'https://kubernetes.default.svc', namespace: name },
  });
  // Automated without self-heal: the first sync applies Git, later drift is only reported.
  return { ...base, spec: { ...(base['spec'] as Record<string, unknown>), syncPolicy: { automated: {} } } };
}

/** The controller's JSON log lines with this message, as objects. */
function logLines(msg: string): Array<Record<string, unknown>> {
  return fx.logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter((l) => l.includes(msg))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['msg'] === msg);
}

const settingsRequeues = () => logLines('requeue').filter((l) => l['why'] === 'argocd-cm changed').length;

/** New compare options, and the controller has seen them (its argocd-cm watch requeued the Applications). */
async function compareOptionsSeen(yaml: string): Promise<void> {
  const before = settingsRequeues();
  await compareOptions(yaml);
  await until('argocd-cm change seen', () => settingsRequeues() > before, 30_000);
}

before(async () => {
  cp = await startDeployersPlane({
    settings: BASE,
    project: 'cmp',
    namespaces: ['roles', 'status', 'updates'],
  });
  // A ClusterRole with an aggregationRule needs `escalate` (the API server's RBAC storage: "must have
  // cluster-admin privileges to use the aggregationRule" otherwise).
  await grantRole(cp.admin, {
    name: 'roles-deployer-clusterroles',
    to: { serviceAccount: 'deployer', namespace: 'roles' },
    rules: [
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterroles'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'escalate'],
      },
    ],
  });
  // What kube-controller-manager's clusterrole-aggregation controller copies into the aggregated role.
  await applyRaw(cp.admin, {
    apiVersion: RBAC,
    kind: 'ClusterRole',
    metadata: { name: 'e2e-agg-part', labels: { [AGGREGATE_LABEL]: 'true' } },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
  });
  // A custom resource whose status is an ordinary field: no status subresource.
  await applyRaw(cp.admin, WIDGET_CRD);
  await until(
    'Widget CRD Established',
    async () => {
      const crd = (await getRaw(cp.admin, {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        name: 'widgets.example.com',
      })) as { status?: { conditions?: Array<{ type: string; status: string }> } } | undefined;
      return crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true;
    },
    30_000,
  );
  fx = await startFixture(cp, {
    'roles/agg.yaml':
      `apiVersion: ${RBAC}\nkind: ClusterRole\nmetadata:\n  name: e2e-agg\naggregationRule:\n  clusterRoleSelectors:\n` +
      `  - matchLabels:\n      ${AGGREGATE_LABEL}: "true"\nrules: []\n`,
    'status/widget.yaml':
      'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\nstatus:\n  phase: git\n',
    'updates/cm.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched\ndata:\n  ignored: git\n  kept: git\n',
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

// As gitops-engine's TestDiffOptionIgnoreAggregateRoles (pkg/diff/diff_test.go): with the option an
// aggregated ClusterRole's rules are left out of the diff, without it aggregation is a difference.
test('ignoreAggregatedRoles: the rules the aggregation controller fills in are OutOfSync without it, Synced with it', async () => {
  await applyRaw(cp.admin, app('roles'));
  // Git says `rules: []`; kube-controller-manager's clusterrole-aggregation controller writes the
  // part's rule into the live role, so the server-side dry-run of Git (rules: []) differs from it.
  await until('e2e-agg aggregated', async () => {
    const role = (await getRaw(cp.admin, { apiVersion: RBAC, kind: 'ClusterRole', name: 'e2e-agg' })) as
      { rules?: unknown[] } | undefined;
    return (role?.rules?.length ?? 0) > 0;
  });
  await waitForApp(
    cp,
    'roles',
    'OutOfSync after aggregation',
    (a) => operationPhase(a) === 'Succeeded' && synced(a) === 'OutOfSync',
  );
  await compareOptionsSeen('ignoreAggregatedRoles: true\n');
  const a = await waitForApp(cp, 'roles', 'Synced with ignoreAggregatedRoles', (x) => synced(x) === 'Synced');
  assert.equal(synced(a), 'Synced');
  const role = (await getRaw(cp.admin, { apiVersion: RBAC, kind: 'ClusterRole', name: 'e2e-agg' })) as {
    rules?: unknown[];
  };
  assert.deepEqual(role.rules, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }]);
});

// A status that differs from Git can only show in a server-side diff where the dry-run keeps Git's
// status: a custom resource without a status subresource. With a status subresource (and for a
// CustomResourceDefinition, whose status always is one) the dry-run answers the live status, so no
// value of ignoreResourceStatusField changes a result there, and `crd` (status of CRDs only)
// compares like `none`: the values that change a result are `all` against `crd`, `none` and `off`.
// (Argo CD 2.x read an unset value as `crd`; 3.x, like impersync, as `all`.)
test('ignoreResourceStatusField: a custom resource status changed live is Synced under all, OutOfSync under crd, none and off', async () => {
  await compareOptionsSeen('ignoreResourceStatusField: none\n');
  await applyRaw(cp.admin, app('status'));
  await waitForApp(cp, 'status', 'synced', (a) => operationPhase(a) === 'Succeeded' && synced(a) === 'Synced');
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: '/apis/example.com/v1/namespaces/status/widgets/w',
    body: { status: { phase: 'live' } },
    contentType: 'application/merge-patch+json',
  });
  await waitForApp(cp, 'status', 'OutOfSync under none', (a) => synced(a) === 'OutOfSync');
  await compareOptionsSeen('ignoreResourceStatusField: all\n');
  await waitForApp(cp, 'status', 'Synced under all', (a) => synced(a) === 'Synced');
  await compareOptionsSeen('ignoreResourceStatusField: crd\n');
  await waitForApp(cp, 'status', 'OutOfSync under crd', (a) => synced(a) === 'OutOfSync');
  await compareOptionsSeen('ignoreResourceStatusField: all\n');
  await waitForApp(cp, 'status', 'Synced under all again', (a) => synced(a) === 'Synced');
  // Unquoted, YAML reads `off` as false; Argo CD takes it as "none" all the same.
  await compareOptionsSeen('ignoreResourceStatusField: off\n');
  const a = await waitForApp(cp, 'status', 'OutOfSync under off', (x) => synced(x) === 'OutOfSync');
  assert.equal(synced(a), 'OutOfSync');
  const w = (await getRaw(cp.admin, {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    name: 'w',
    namespace: 'status',
  })) as {
    status?: { phase?: string };
  };
  assert.equal(w.status?.phase, 'live');
});

/** Changes `data` of the live ConfigMap and returns the new resourceVersion. */
async function patchWatched(data: Record<string, string>): Promise<string> {
  const o = (await requestOk(cp.admin, {
    method: 'PATCH',
    path: '/api/v1/namespaces/updates/configmaps/watched',
    body: { data },
    contentType: 'application/merge-patch+json',
  })) as { metadata: { resourceVersion: string } };
  return o.metadata.resourceVersion;
}

const REFRESH = 'Requesting app refresh caused by object update';
const IGNORED = 'Ignoring change of object because none of the watched resource fields have changed';
/** What the controller decided about the update that produced `rv` of the watched ConfigMap. */
const decisions = (rv: string) =>
  [REFRESH, IGNORED].flatMap((msg) =>
    logLines(msg)
      .filter((l) => l['name'] === 'watched' && l['resourceVersion'] === rv)
      .map(() => msg),
  );

// Argo CD logs both decisions at debug (controller/appcontroller.go, controller/cache/cache.go,
// docs/operator-manual/reconcile.md): the log line of each update is the proof that it was weighed.
test('ignoreDifferencesOnResourceUpdates: an update only to an ignored difference is no refresh when true, is one when false', async () => {
  await compareOptionsSeen('ignoreDifferencesOnResourceUpdates: true\n');
  await applyRaw(cp.admin, app('updates'));
  await waitForApp(cp, 'updates', 'synced', (a) => operationPhase(a) === 'Succeeded' && synced(a) === 'Synced');
  const ignored = await patchWatched({ ignored: 'one' });
  await until('update weighed', () => decisions(ignored).length > 0);
  assert.deepEqual(decisions(ignored), [IGNORED]);
  // A change outside the ignored difference, after it on the same watch: a refresh, and OutOfSync.
  const kept = await patchWatched({ kept: 'drift' });
  await until('second update weighed', () => decisions(kept).length > 0);
  assert.deepEqual(decisions(kept), [REFRESH]);
  await waitForApp(cp, 'updates', 'OutOfSync', (a) => synced(a) === 'OutOfSync');
  assert.deepEqual(decisions(ignored), [IGNORED]);

  await compareOptionsSeen('ignoreDifferencesOnResourceUpdates: false\n');
  const refreshed = await patchWatched({ ignored: 'two' });
  await until('update weighed with the option off', () => decisions(refreshed).length > 0);
  assert.deepEqual(decisions(refreshed), [REFRESH]);
});
