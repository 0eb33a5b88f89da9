// The install manifests and the Helm chart, rendered with the real kustomize and helm and read as
// objects: the strict RBAC grants nothing on tenant resources, impersonation is bound to no tenant
// until the admin lists one (cluster-wide only by an explicit opt-in), AppProjects are read-only,
// fallback adds exactly its broad ClusterRole, the controller and the renderer run locked down (the
// renderer with no credential at all), the chart agrees with the kustomize install, and the copies
// (deploy/install.yaml, the chart's crds/ and admission policy) match their sources.
// Applying them to a real control plane is test/e2e/deploy-*.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXTRA_KEYS } from '../../src/api/index.ts';
import type { KubeObject } from '../support/index.ts';
import {
  chartDir,
  find,
  helmTemplate,
  kustomizeBuild,
  kustomizeBuildText,
  repoRoot,
  rulesOf,
  runTool,
  kubeVersion,
  kustomizeOverlay,
  tenantImpersonationBinding,
} from './render.ts';
import type { Rule } from './render.ts';
import { parseYamlDocuments } from '../support/index.ts';
import {
  PRIVATE_RANGES,
  controllerChecks,
  deploymentOf,
  labelsOf,
  rendererChecks,
  rendererEgressChecks,
  rendererNetworkChecks,
} from './pod-checks.ts';

const crdFiles = (await readdir(join(repoRoot, 'deploy/crds'))).filter((f) => f.endsWith('.yaml')).sort();

/** deploy/install.yaml: the CRDs, then `kustomize build deploy/install`. */
async function renderFlatInstall(): Promise<string> {
  const header =
    '# Generated from deploy/crds and `kustomize build deploy/install` (strict RBAC, the renderer, admission policy).\n' +
    '# The controller may impersonate no ServiceAccount until you bind it per tenant namespace: docs/install.md.\n' +
    '# Do not edit: change the sources and run IMPERSYNC_UPDATE_RENDERED=1 node --test test/deploy/manifests.test.ts\n' +
    '# Install: kubectl apply --server-side -f deploy/install.yaml\n';
  const crds = await Promise.all(crdFiles.map((f) => readFile(join(repoRoot, 'deploy/crds', f), 'utf8')));
  return (
    header +
    [...crds.map((c) => c.replace(/^---\n/, '').trimEnd() + '\n'), kustomizeBuildText('deploy/install')].join('---\n')
  );
}

const tenantFree = (o: { rule: { resources?: string[]; apiGroups?: string[] } }) =>
  // What the strict shape may touch; anything else would be access to tenant resources.
  (o.rule.resources ?? []).every((r) =>
    [
      'applications',
      'appprojects',
      'applications/status',
      'applications/finalizers',
      'configmaps',
      'secrets',
      'leases',
      'events',
      // Read only, in the control namespace: whether Argo CD's application controller runs there.
      'pods',
      'serviceaccounts',
      ...EXTRA_KEYS.map((k) => `userextras/${k}`),
    ].includes(r),
  );

const EXTRAS_RULE: Rule = {
  apiGroups: ['authentication.k8s.io'],
  resources: EXTRA_KEYS.map((k) => `userextras/${k}`),
  verbs: ['impersonate'],
};

/**
 * The user extras naming each request's Application (docs/impersonation.md §11): exactly impersync's
 * three keys, `impersonate` only, any value, bound cluster-wide (the API server checks them at cluster
 * scope) to the controller alone; nothing else is granted at cluster scope.
 */
function extrasGrant(objects: KubeObject[], name: string, subject: Record<string, string>): void {
  const rules = rulesOf(objects).filter((r) => r.rule.resources?.some((x) => x.startsWith('userextras')));
  assert.deepEqual(
    rules.map((r) => [r.kind, r.name, r.rule]),
    [['ClusterRole', name, EXTRAS_RULE]],
  );
  const bindings = objects.filter((o) => o.kind === 'ClusterRoleBinding');
  assert.deepEqual(
    bindings.map((b) => [b.metadata.name, b['roleRef'], b['subjects']]),
    [[name, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, [subject]]],
  );
}

/** AppProjects choose the identity: the controller may only read them, in every shape. */
function appProjectsReadOnly(rules: { rule: Rule }[]): void {
  const touching = rules.filter((r) => (r.rule.resources ?? []).some((x) => x.startsWith('appprojects')));
  assert.ok(touching.length > 0, 'AppProjects are read');
  for (const r of touching) {
    assert.deepEqual(r.rule.resources, ['appprojects'], 'no appprojects/status or other subresource');
    assert.deepEqual(r.rule.verbs, ['get', 'list', 'watch'], `verbs on appprojects: ${r.rule.verbs.join(', ')}`);
  }
}

/** Secrets in the control namespace: read (cluster Secrets), and create (the renderer token) without a name, nothing else. */
function secretRules(rules: { kind: string; namespace?: string | undefined; rule: Rule }[]): void {
  const secrets = rules.filter((r) => r.rule.resources?.includes('secrets'));
  assert.ok(secrets.every((r) => r.kind === 'Role' && r.namespace === 'argocd'));
  assert.deepEqual(secrets.flatMap((r) => r.rule.verbs).sort(), ['create', 'get', 'list', 'watch']);
}

/** Who may impersonate ServiceAccounts: rules with the verb on them and the bindings that grant them. */
function impersonationBindings(objects: KubeObject[]): string[] {
  const impersonating = new Set(
    rulesOf(objects)
      .filter((r) => r.rule.verbs.includes('impersonate') && (r.rule.resources ?? []).includes('serviceaccounts'))
      .map((r) => `${r.kind}/${r.name}`),
  );
  return objects
    .filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')
    .filter((b) => {
      const ref = b['roleRef'] as { kind: string; name: string };
      return impersonating.has(`${ref.kind}/${ref.name}`);
    })
    .map((b) => `${b.kind} ${b.metadata.namespace ?? ''}/${b.metadata.name}`)
    .sort();
}

const installNames = {
  controller: { renderer: 'dns+http://impersync-renderer-headless:8081', tokenSecret: 'impersync-renderer-token' },
  renderer: { serviceAccount: 'impersync-renderer', tokenSecret: 'impersync-renderer-token' },
  network: { service: 'impersync-renderer', policy: 'impersync-renderer' },
};

test('kustomize: the strict install has the documented objects and no right on tenant resources', () => {
  const objects = kustomizeBuild('deploy/install');
  assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
    'ClusterRole/impersync-impersonate',
    'ClusterRole/impersync-impersonate-extras',
    'ClusterRoleBinding/impersync-impersonate-extras',
    'ConfigMap/argocd-cm',
    'Deployment/impersync-controller',
    'Deployment/impersync-renderer',
    'Namespace/argocd',
    'NetworkPolicy/impersync-renderer',
    'Role/impersync-controller',
    'RoleBinding/impersync-controller',
    'Service/impersync-metrics',
    'Service/impersync-renderer',
    'Service/impersync-renderer-headless',
    'Service/impersync-renderer-metrics',
    'ServiceAccount/impersync-controller',
    'ServiceAccount/impersync-renderer',
    'ValidatingAdmissionPolicy/impersync-appproject-destination-service-accounts',
    'ValidatingAdmissionPolicyBinding/impersync-appproject-destination-service-accounts',
  ]);
  // Impersonation is bound nowhere until the admin lists tenants (deploy/install/tenants).
  assert.deepEqual(impersonationBindings(objects), []);
  // The one ClusterRoleBinding: the user extras, which grant nothing by themselves.
  extrasGrant(objects, 'impersync-impersonate-extras', {
    kind: 'ServiceAccount',
    name: 'impersync-controller',
    namespace: 'argocd',
  });
  const rules = rulesOf(objects);
  assert.ok(rules.every(tenantFree), JSON.stringify(rules.filter((r) => !tenantFree(r))));
  assert.ok(rules.every((r) => !(r.rule.verbs.includes('*') || (r.rule.resources ?? []).includes('*'))));
  // Pods of the control namespace are only read (is Argo CD's application controller running?).
  const pods = rules.filter((r) => (r.rule.resources ?? []).includes('pods'));
  assert.deepEqual(
    pods.map((r) => [r.kind, r.rule.verbs]),
    [['Role', ['get', 'list', 'watch']]],
  );
  // Outside its namespace: impersonating ServiceAccounts, and reading them to check they still exist,
  // as a ClusterRole that only RoleBindings in tenant namespaces (deploy/install/tenants) use.
  assert.deepEqual(
    rules.filter((r) => r.kind === 'ClusterRole' && r.name === 'impersync-impersonate').map((r) => r.rule),
    [{ apiGroups: [''], resources: ['serviceaccounts'], verbs: ['impersonate', 'get'] }],
  );
  assert.ok(rules.filter((r) => r.kind === 'Role').every((r) => r.namespace === 'argocd'));
  const cm = rules.find((r) => r.rule.resources?.includes('configmaps'));
  assert.deepEqual(cm?.rule.resourceNames, [
    'argocd-cm',
    'argocd-cmd-params-cm',
    'argocd-ssh-known-hosts-cm',
    'argocd-tls-certs-cm',
    'argocd-gpg-keys-cm',
  ]);
  // Two shards: the shard and member Leases of this namespace (member names follow the Pods).
  const leaseUpdate = rules.find((r) => r.rule.resources?.includes('leases') && r.rule.verbs.includes('update'));
  assert.equal(leaseUpdate?.kind, 'Role');
  assert.deepEqual(leaseUpdate?.rule.verbs, ['get', 'list', 'create', 'update', 'delete']);
  const controllerArgs = (
    objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'impersync-controller') as unknown as {
      spec: { replicas: number; template: { spec: { containers: { args: string[] }[] } } };
    }
  ).spec;
  assert.equal(controllerArgs.replicas, 2);
  assert.ok(controllerArgs.template.spec.containers[0]?.args.includes('--shards=2'));
  appProjectsReadOnly(rules);
  secretRules(rules);
  // The renderer's ServiceAccount is bound to nothing.
  for (const b of objects.filter((o) => o.kind.endsWith('Binding')))
    assert.ok(!JSON.stringify(b['subjects'] ?? []).includes('impersync-renderer'), `${b.kind} ${b.metadata.name}`);
  assert.ok(objects.filter((o) => o.kind === 'Deployment').every((d) => d.metadata.namespace === 'argocd'));
  controllerChecks(objects, installNames.controller);
  rendererChecks(objects, installNames.renderer);
  rendererNetworkChecks(objects, installNames.network);
  const data = find(objects, 'ConfigMap', 'argocd-cm')['data'] as Record<string, string>;
  assert.equal(data['application.sync.impersonation.enabled'], 'true');
  assert.equal(data['application.sync.impersonation.enforced'], 'true');
});

test('kustomize: fallback is strict plus one broad ClusterRole, and strict/ alone is the default without admission', () => {
  const strict = kustomizeBuild('deploy/install/strict');
  const fallback = kustomizeBuild('deploy/install/fallback');
  const key = (o: KubeObject) => `${o.kind}/${o.metadata.name}`;
  const extra = fallback
    .filter((o) => !strict.some((s) => key(s) === key(o)))
    .map(key)
    .sort();
  assert.deepEqual(extra, ['ClusterRole/impersync-fallback', 'ClusterRoleBinding/impersync-fallback']);
  const broad = rulesOf(fallback)
    .filter((r) => r.name === 'impersync-fallback')
    .map((r) => r.rule);
  assert.ok(broad.some((r) => r.resources?.includes('*') && r.verbs.includes('create') && r.verbs.includes('delete')));
  const binding = find(fallback, 'ClusterRoleBinding', 'impersync-fallback') as KubeObject & { subjects: unknown[] };
  assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'impersync-controller', namespace: 'argocd' }]);
});

test('kustomize: the tenants file documents the RoleBinding the tests apply, and binds nothing as shipped', async () => {
  assert.deepEqual(kustomizeBuild('deploy/install/tenants'), []);
  const text = await readFile(join(repoRoot, 'deploy/install/tenants/impersonate.yaml'), 'utf8');
  // The commented examples, uncommented, are what an admin writes.
  const examples = parseYamlDocuments(
    text
      .split('\n')
      .filter((l) => l.startsWith('#   '))
      .map((l) => l.slice(4))
      .join('\n'),
    'the examples of deploy/install/tenants/impersonate.yaml',
  );
  assert.deepEqual(examples[0], tenantImpersonationBinding('guestbook'));
  const named = examples.find((o) => o.kind === 'Role');
  assert.deepEqual(
    rulesOf(named ? [named] : []).map((r) => r.rule),
    [
      {
        apiGroups: [''],
        resources: ['serviceaccounts'],
        verbs: ['impersonate', 'get'],
        resourceNames: ['team-a-deployer'],
      },
    ],
  );
});

test('kustomize components: cluster-wide impersonation adds exactly one ClusterRoleBinding; renderer egress one policy', () => {
  const key = (o: KubeObject) => `${o.kind}/${o.metadata.name}`;
  const base = kustomizeBuild('deploy/install').map(key);
  const wide = kustomizeOverlay(['deploy/install'], ['deploy/install/components/impersonate-cluster-wide']);
  assert.deepEqual(
    wide.map(key).filter((k) => !base.includes(k)),
    ['ClusterRoleBinding/impersync-impersonate'],
  );
  assert.deepEqual(impersonationBindings(wide), ['ClusterRoleBinding /impersync-impersonate']);
  assert.deepEqual(find(wide, 'ClusterRoleBinding', 'impersync-impersonate')['subjects'], [
    { kind: 'ServiceAccount', name: 'impersync-controller', namespace: 'argocd' },
  ]);
  const egress = kustomizeOverlay(['deploy/install'], ['deploy/install/components/renderer-egress']);
  assert.deepEqual(
    egress.map(key).filter((k) => !base.includes(k)),
    ['NetworkPolicy/impersync-renderer-egress'],
  );
  rendererEgressChecks(
    find(egress, 'NetworkPolicy', 'impersync-renderer-egress'),
    deploymentOf(egress, 'renderer').labels,
    {
      dnsNamespace: 'kube-system',
      ports: [443, 22, 80, 9418],
      except: PRIVATE_RANGES,
    },
  );
});

/** The two ServiceMonitors: each selects exactly its component's metrics Service, on its metrics port. */
function serviceMonitorChecks(objects: KubeObject[], controllerJob: string | undefined): void {
  const monitors = objects.filter((o) => o.kind === 'ServiceMonitor');
  assert.equal(monitors.length, 2, monitors.map((m) => m.metadata.name).join(', '));
  const services = objects.filter((o) => o.kind === 'Service');
  const selected = monitors.map((m) => {
    const spec = m['spec'] as {
      selector: { matchLabels: Record<string, string> };
      endpoints: { port: string; path: string }[];
      jobLabel?: string;
    };
    assert.deepEqual(
      spec.endpoints.map((e) => [e.port, e.path]),
      [['metrics', '/metrics']],
    );
    const picked = services.filter((svc) =>
      Object.entries(spec.selector.matchLabels).every(([k, v]) => labelsOf(svc)[k] === v),
    );
    assert.equal(picked.length, 1, `${m.metadata.name} selects one Service`);
    const svc = picked[0] as KubeObject;
    const ports = (svc['spec'] as { ports: { name: string }[] }).ports.map((p) => p.name);
    assert.deepEqual(ports, ['metrics'], `${svc.metadata.name} has only the metrics port`);
    if (spec.jobLabel) assert.equal(labelsOf(svc)[spec.jobLabel], controllerJob, 'the job name');
    return { component: labelsOf(svc)['app.kubernetes.io/component'], job: spec.jobLabel !== undefined };
  });
  assert.deepEqual(
    selected.sort((a, b) => String(a.component).localeCompare(String(b.component))),
    [
      { component: 'controller', job: controllerJob !== undefined },
      { component: 'renderer', job: false },
    ],
  );
}

test('kustomize component servicemonitor: two ServiceMonitors, each on its own metrics Service', () => {
  const key = (o: KubeObject) => `${o.kind}/${o.metadata.name}`;
  const base = kustomizeBuild('deploy/install').map(key);
  const withMonitors = kustomizeOverlay(['deploy/install'], ['deploy/install/components/servicemonitor']);
  assert.deepEqual(
    withMonitors.map(key).filter((k) => !base.includes(k)),
    ['ServiceMonitor/impersync-controller', 'ServiceMonitor/impersync-renderer'],
  );
  serviceMonitorChecks(withMonitors, 'argocd-application-controller-metrics');
});

test('helm: serviceMonitor.enabled makes the same two ServiceMonitors; no renderer metrics with renderer.metricsPort 0', () => {
  const on = helmTemplate({ set: ['serviceMonitor.enabled=true', 'serviceMonitor.labels.release=prom'] });
  serviceMonitorChecks(on, 'argocd-application-controller-metrics');
  for (const m of on.filter((o) => o.kind === 'ServiceMonitor')) {
    assert.equal(labelsOf(m)['release'], 'prom');
    assert.equal((m['spec'] as { endpoints: { interval: string }[] }).endpoints[0]?.interval, '30s');
  }
  const noJob = helmTemplate({ set: ['serviceMonitor.enabled=true', 'serviceMonitor.controllerJob='] });
  serviceMonitorChecks(noJob, undefined);
  const off = helmTemplate({ set: ['serviceMonitor.enabled=true', 'renderer.metricsPort=0'] });
  assert.deepEqual(
    off.filter((o) => o.kind === 'ServiceMonitor').map((o) => o.metadata.name),
    ['impersync'],
  );
  assert.ok(!off.some((o) => o.kind === 'Service' && o.metadata.name.endsWith('renderer-metrics')));
  const renderer = deploymentOf(off, 'renderer').pod.containers[0] as { args: string[]; ports: { name: string }[] };
  assert.ok(!renderer.args.some((a) => a.startsWith('--metrics-listen')));
  assert.deepEqual(
    renderer.ports.map((p) => p.name),
    ['http'],
  );
  const policy = off.find((o) => o.kind === 'NetworkPolicy' && !o.metadata.name.endsWith('-egress'));
  assert.equal((policy?.['spec'] as { ingress: unknown[] }).ingress.length, 1, 'no metrics rule without the port');
});

test('the example policies are not installed and read only the extras impersync names each request with', () => {
  const examples = kustomizeBuild('deploy/admission/examples');
  assert.deepEqual(examples.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
    'ValidatingAdmissionPolicy/impersync-application-owns-namespace',
    'ValidatingAdmissionPolicyBinding/impersync-application-owns-namespace',
  ]);
  const installed = kustomizeBuild('deploy/install').map((o) => `${o.kind}/${o.metadata.name}`);
  for (const o of examples) assert.ok(!installed.includes(`${o.kind}/${o.metadata.name}`), 'an example, not installed');
  const text = JSON.stringify(examples);
  const keys = [...text.matchAll(/impersync\.io\/[a-z]+/g)].map((m) => m[0]);
  assert.ok(keys.length > 0 && keys.every((k) => EXTRA_KEYS.includes(k)), keys.join(', '));
  assert.deepEqual(find(examples, 'ValidatingAdmissionPolicyBinding')['spec'], {
    policyName: 'impersync-application-owns-namespace',
    validationActions: ['Deny'],
  });
});

test('deploy/install.yaml is the CRDs plus the kustomize install, regenerated', async () => {
  const want = await renderFlatInstall();
  const path = join(repoRoot, 'deploy/install.yaml');
  if (process.env['IMPERSYNC_UPDATE_RENDERED'] === '1') await writeFile(path, want);
  const have = await readFile(path, 'utf8').catch(() => '');
  assert.equal(
    have,
    want,
    'deploy/install.yaml is stale: run IMPERSYNC_UPDATE_RENDERED=1 node --test test/deploy/manifests.test.ts',
  );
});

test("the chart's crds/ and admission policy are copies of deploy/crds and deploy/admission", async () => {
  assert.deepEqual((await readdir(join(chartDir, 'crds'))).sort(), crdFiles);
  for (const f of crdFiles) {
    assert.equal(
      await readFile(join(chartDir, 'crds', f), 'utf8'),
      await readFile(join(repoRoot, 'deploy/crds', f), 'utf8'),
      `crds/${f}`,
    );
  }
  assert.equal(
    await readFile(join(chartDir, 'files/admission-policy.yaml'), 'utf8'),
    await readFile(join(repoRoot, 'deploy/admission/policy.yaml'), 'utf8'),
  );
});

test('helm lint passes for the default values and every documented variant', () => {
  const variants: string[][] = [
    [],
    ['--set', 'rbac.shape=fallback', '--set', 'argocdCm.impersonation.enforced=false'],
    ['--set', 'serviceMonitor.enabled=true', '--set', 'replicas=1', '--set', 'leaderElection.enabled=false'],
    [
      '--set',
      'rbac.impersonate.serviceAccounts[0].namespace=guestbook',
      '--set',
      'rbac.impersonate.serviceAccounts[0].name=guestbook-deployer',
      '--set',
      'argocdCm.create=false',
      '--set',
      'admission.enabled=false',
    ],
    ['--set', 'rbac.impersonate.namespaces={guestbook,team-a}', '--set', 'networkPolicy.rendererEgress.enabled=true'],
    ['--set', 'rbac.impersonate.clusterWide=true', '--set', 'networkPolicy.rendererIngress.enabled=false'],
  ];
  for (const v of variants) {
    const res = runTool('helm', ['lint', '--strict', chartDir, '--kube-version', kubeVersion, ...v]);
    assert.equal(res.status, 0, `helm lint ${v.join(' ')}:\n${res.stdout}${res.stderr}`);
    assert.match(res.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  }
});

test('helm template: the default render matches the kustomize strict install', () => {
  const chart = helmTemplate();
  const kust = kustomizeBuild('deploy/install');
  assert.deepEqual(
    chart.map((o) => o.kind).sort(),
    [
      ...kust.filter((o) => o.kind !== 'Namespace').map((o) => o.kind),
      'CustomResourceDefinition',
      'CustomResourceDefinition',
    ].sort(),
  );
  // Same rules, whatever the names.
  const norm = (objects: KubeObject[]) =>
    rulesOf(objects)
      .map((r) =>
        JSON.stringify([
          r.kind,
          r.rule.apiGroups,
          r.rule.resources,
          r.rule.resourceNames,
          r.rule.verbs,
          r.rule.nonResourceURLs,
        ]),
      )
      .sort();
  assert.deepEqual(norm(chart), norm(kust));
  assert.deepEqual(impersonationBindings(chart), [], 'no tenant listed: impersonation bound nowhere');
  extrasGrant(chart, 'impersync-impersonate-extras', {
    kind: 'ServiceAccount',
    name: 'impersync',
    namespace: 'argocd',
  });
  appProjectsReadOnly(rulesOf(chart));
  secretRules(rulesOf(chart));
  // The default release is named like the kustomize install: the same Service and Secret names.
  controllerChecks(chart, installNames.controller);
  rendererChecks(chart, installNames.renderer);
  rendererNetworkChecks(chart, installNames.network);
  assert.ok(!chart.some((o) => o.kind === 'NetworkPolicy' && o.metadata.name.endsWith('-egress')), 'egress off');
  assert.ok(!chart.some((o) => o.kind === 'ServiceMonitor'), 'no ServiceMonitor unless asked');
  const data = find(chart, 'ConfigMap', 'argocd-cm')['data'] as Record<string, string>;
  assert.deepEqual(data, {
    'application.sync.impersonation.enabled': 'true',
    'application.sync.impersonation.enforced': 'true',
    'timeout.reconciliation': '120s',
  });
});

test('helm template: values reach the objects', () => {
  const objects = helmTemplate({
    release: 'ops',
    set: [
      'image.repository=registry.example/impersync',
      'image.tag=1.2.3',
      'replicas=3',
      'leaderElection.leaseName=ops-lease',
      'logLevel=debug',
      'rbac.shape=fallback',
      'argocdCm.impersonation.enforced=false',
      'argocdCm.reconciliationTimeout=3m',
      'serviceMonitor.enabled=true',
      'rbac.impersonate.serviceAccounts[0].namespace=a',
      'rbac.impersonate.serviceAccounts[0].name=x',
      'rbac.impersonate.serviceAccounts[1].namespace=a',
      'rbac.impersonate.serviceAccounts[1].name=y',
      'rbac.impersonate.serviceAccounts[2].namespace=b',
      'rbac.impersonate.serviceAccounts[2].name=z',
      'nodeSelector.pool=system',
      'tolerations[0].key=dedicated',
      'tolerations[0].operator=Exists',
      'rbac.impersonate.namespaces[0]=whole',
      'argocdCm.impersonation.allowSystemNamespaces=true',
      'argocdCm.impersonation.requireExtras=true',
      'rbac.impersonate.extras=false',
      'renderer.replicas=4',
      'renderer.cache.sizeLimit=5Gi',
      'renderer.resources.limits.memory=3Gi',
      'renderer.nodeSelector.pool=render',
      'networkPolicy.rendererEgress.enabled=true',
      'networkPolicy.rendererEgress.dnsNamespace=dns',
      'networkPolicy.rendererEgress.ports={443,8443}',
      'networkPolicy.rendererEgress.exceptCidrs={10.0.0.0/8,fd00::/8}',
    ],
    setJson: ['argocdCm.globalProjects=[{"projectName":"defaults","labelSelector":{"matchLabels":{"inherit":"yes"}}}]'],
  });
  const dep = find(objects, 'Deployment', 'ops-impersync') as KubeObject & {
    spec: {
      replicas: number;
      template: {
        spec: { nodeSelector: unknown; tolerations: unknown; containers: { image: string; args: string[] }[] };
      };
    };
  };
  assert.equal(dep.spec.replicas, 3);
  const c = dep.spec.template.spec.containers[0];
  assert.equal(c?.image, 'registry.example/impersync:1.2.3');
  assert.ok(
    c?.args.includes('--leader-election-lease=ops-lease') &&
      c.args.includes('--log-level=debug') &&
      c.args.includes('--shards=3') &&
      !c.args.includes('--leader-elect'),
    c?.args.join(' '),
  );
  assert.deepEqual(dep.spec.template.spec.nodeSelector, { pool: 'system' });
  assert.deepEqual(dep.spec.template.spec.tolerations, [{ key: 'dedicated', operator: 'Exists' }]);
  const data = find(objects, 'ConfigMap', 'argocd-cm')['data'] as Record<string, string>;
  assert.equal(data['application.sync.impersonation.enforced'], 'false');
  assert.equal(data['timeout.reconciliation'], '3m');
  assert.equal(
    data['globalProjects'],
    '- labelSelector:\n    matchLabels:\n      inherit: "yes"\n  projectName: defaults\n',
  );
  assert.ok(find(objects, 'ClusterRole', 'ops-impersync-fallback'));
  assert.ok(find(objects, 'ServiceMonitor'));
  // resourceNames-limited impersonation: one Role per namespace; a whole namespace binds the ClusterRole there.
  const impersonation = rulesOf(objects).filter(
    (r) => r.rule.verbs.includes('impersonate') && r.rule.resources?.includes('serviceaccounts'),
  );
  assert.deepEqual(
    impersonation.map((r) => [r.kind, r.namespace, r.rule.resourceNames]),
    [
      ['ClusterRole', undefined, undefined],
      ['Role', 'a', ['x', 'y']],
      ['Role', 'b', ['z']],
    ],
  );
  assert.deepEqual(impersonationBindings(objects), [
    'RoleBinding a/ops-impersync-impersonate',
    'RoleBinding b/ops-impersync-impersonate',
    'RoleBinding whole/ops-impersync-impersonate',
  ]);
  assert.deepEqual(find(objects, 'RoleBinding', 'ops-impersync-impersonate')['subjects'], [
    { kind: 'ServiceAccount', name: 'ops-impersync', namespace: 'argocd' },
  ]);
  assert.ok(!objects.some((o) => o.kind === 'ClusterRoleBinding' && o.metadata.name.endsWith('-impersonate')));
  assert.equal(data['impersync.impersonation.allowSystemNamespaces'], 'true');
  assert.equal(data['impersync.impersonation.requireExtras'], 'true');
  assert.ok(!objects.some((o) => o.metadata.name.endsWith('-impersonate-extras')), 'rbac.impersonate.extras=false');
  // The renderer's values, and the names the controller is given for it.
  controllerChecks(objects, {
    renderer: 'dns+http://ops-impersync-renderer-headless:8081',
    tokenSecret: 'ops-impersync-renderer-token',
  });
  rendererChecks(objects, {
    serviceAccount: 'ops-impersync-renderer',
    tokenSecret: 'ops-impersync-renderer-token',
    cacheSizeLimit: '5Gi',
  });
  rendererNetworkChecks(objects, { service: 'ops-impersync-renderer', policy: 'ops-impersync-renderer' });
  const renderer = deploymentOf(objects, 'renderer');
  assert.equal((renderer.deployment['spec'] as { replicas: number }).replicas, 4);
  assert.deepEqual((renderer.pod as unknown as { nodeSelector: unknown }).nodeSelector, { pool: 'render' });
  assert.equal(renderer.pod.containers[0]?.resources.limits?.['memory'], '3Gi');
  rendererEgressChecks(find(objects, 'NetworkPolicy', 'ops-impersync-renderer-egress'), renderer.labels, {
    dnsNamespace: 'dns',
    ports: [443, 8443],
    except: { v4: ['10.0.0.0/8'], v6: ['fd00::/8'] },
  });
  // The existence check before a sync reads the same ServiceAccounts, with the same narrowing.
  for (const r of impersonation) assert.deepEqual(r.rule.verbs, ['impersonate', 'get']);
  // Three replicas, three shards: the shard and member Leases of the release namespace.
  const lease = rulesOf(objects).find((r) => r.rule.resources?.includes('leases') && r.rule.verbs.includes('update'));
  assert.equal(lease?.rule.resourceNames, undefined);
  assert.deepEqual(lease?.rule.verbs, ['get', 'list', 'create', 'update', 'delete']);
});

test('helm template: sharding.shards=1 is leader election on one Lease, as before shards', () => {
  const objects = helmTemplate({
    release: 'ops',
    set: ['replicas=3', 'sharding.shards=1', 'leaderElection.leaseName=ops-lease'],
  });
  const dep = find(objects, 'Deployment', 'ops-impersync') as KubeObject & {
    spec: { template: { spec: { containers: { args: string[] }[] } } };
  };
  const args = dep.spec.template.spec.containers[0]?.args ?? [];
  assert.ok(args.includes('--leader-elect') && !args.some((a) => a.startsWith('--shards')), args.join(' '));
  const lease = rulesOf(objects).find((r) => r.rule.resources?.includes('leases') && r.rule.verbs.includes('update'));
  assert.deepEqual(lease?.rule.resourceNames, ['ops-lease']);
  const five = find(
    helmTemplate({ set: ['replicas=2', 'sharding.shards=5'] }),
    'Deployment',
    'impersync',
  ) as KubeObject & {
    spec: { template: { spec: { containers: { args: string[] }[] } } };
  };
  assert.ok(five.spec.template.spec.containers[0]?.args.includes('--shards=5'));
});

test('helm template refuses strict RBAC with impersonation not enforced, values off the schema, and old clusters', () => {
  const strictUnenforced = runTool('helm', [
    'template',
    'x',
    chartDir,
    '--kube-version',
    kubeVersion,
    '--set',
    'argocdCm.impersonation.enforced=false',
  ]);
  assert.notEqual(strictUnenforced.status, 0);
  assert.match(strictUnenforced.stderr, /rbac.shape strict needs argocdCm.impersonation.enabled and enforced/);
  const unknown = runTool('helm', [
    'template',
    'x',
    chartDir,
    '--kube-version',
    kubeVersion,
    '--set',
    'rbac.shape=loose',
  ]);
  assert.notEqual(unknown.status, 0);
  assert.match(unknown.stderr, /at '\/rbac\/shape': value must be one of 'strict', 'fallback'/);
  const badEntry = runTool('helm', [
    'template',
    'x',
    chartDir,
    '--kube-version',
    kubeVersion,
    '--set',
    'rbac.impersonate.serviceAccounts[0].name=x',
  ]);
  assert.match(badEntry.stderr, /serviceAccounts\/0.*missing property 'namespace'|missing properties?:? 'namespace'/);
  const template = (...set: string[]) =>
    runTool('helm', ['template', 'x', chartDir, '--kube-version', kubeVersion, ...set.flatMap((v) => ['--set', v])]);
  for (const ns of ['kube-system', 'kube-public', 'kube-node-lease']) {
    const system = template(`rbac.impersonate.namespaces={${ns}}`);
    assert.notEqual(system.status, 0, ns);
    assert.match(
      system.stderr,
      new RegExp(`rbac\\.impersonate\\.namespaces: "${ns}" would let the controller impersonate every name in it`),
    );
  }
  const both = template(
    'rbac.impersonate.namespaces={a}',
    'rbac.impersonate.serviceAccounts[0].namespace=a',
    'rbac.impersonate.serviceAccounts[0].name=x',
  );
  assert.match(both.stderr, /rbac\.impersonate: namespace "a" is in namespaces .* and in serviceAccounts \(x only\)/);
  // A typo in a security setting is an error, not a silent default.
  assert.match(
    template('rbac.impersonate.clusterwide=true').stderr,
    /at '\/rbac\/impersonate': additional properties 'clusterwide' not allowed/,
  );
  assert.match(
    template('rbac.impersonate.namespaces={Not_A_Namespace}').stderr,
    /at '\/rbac\/impersonate\/namespaces\/0'/,
  );
  const old = runTool('helm', ['template', 'x', chartDir, '--kube-version', '1.29.0']);
  assert.match(old.stderr, /chart requires kubeVersion: >=1.30.0-0/);
});
