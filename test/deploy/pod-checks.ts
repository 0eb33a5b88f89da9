// Static checks of the two Pods the install runs, shared by the kustomize install and the chart: the
// controller (its token mounted into its container only, no Git cache) and the renderer (no
// Kubernetes credential at all, its own uid, its own cache), and the NetworkPolicy between them.
import assert from 'node:assert/strict';
import type { KubeObject } from '../support/index.ts';

type Env = { name: string; value?: string };
type Mount = { name: string; mountPath: string; readOnly?: boolean };
export type Container = {
  name: string;
  args: string[];
  env?: Env[];
  securityContext: Record<string, unknown>;
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  ports: { name: string; containerPort: number }[];
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts: Mount[];
};
export type Volume = {
  name: string;
  emptyDir?: { sizeLimit?: string };
  projected?: { sources: Record<string, unknown>[] };
  secret?: { secretName: string; optional?: boolean; items?: { key: string; path: string }[]; defaultMode?: number };
  [other: string]: unknown;
};
export type PodSpec = {
  serviceAccountName: string;
  automountServiceAccountToken?: boolean;
  securityContext: Record<string, unknown>;
  containers: Container[];
  initContainers?: Container[];
  volumes: Volume[];
};

const componentOf = (o: KubeObject) =>
  ((o.metadata['labels'] ?? {}) as Record<string, string>)['app.kubernetes.io/component'];

/** The Deployment of a component (`controller`, `renderer`) and its Pod template's spec. */
export function deploymentOf(
  objects: KubeObject[],
  component: string,
): { deployment: KubeObject; pod: PodSpec; labels: Record<string, string> } {
  const deployment = objects.find((o) => o.kind === 'Deployment' && componentOf(o) === component);
  assert.ok(deployment, `a Deployment labelled app.kubernetes.io/component=${component}`);
  const template = (deployment['spec'] as { template: { metadata: { labels: Record<string, string> }; spec: PodSpec } })
    .template;
  return { deployment, pod: template.spec, labels: template.metadata.labels };
}

/** An object's labels ({} without). */
export function labelsOf(o: KubeObject): Record<string, string> {
  return ((o.metadata as { labels?: Record<string, string> }).labels ?? {}) as Record<string, string>;
}

const TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Volumes that carry a Kubernetes credential: a projected ServiceAccount token, or any Secret but `allowedSecret`. */
function credentialVolumes(pod: PodSpec, allowedSecret?: string): string[] {
  return pod.volumes
    .filter(
      (v) =>
        (v.projected?.sources ?? []).some((s) => 'serviceAccountToken' in s) ||
        (v.secret !== undefined && v.secret.secretName !== allowedSecret) ||
        // Any other kind of volume (hostPath, csi, ...) could reach a node's credentials.
        (v.emptyDir === undefined && v.projected === undefined && v.secret === undefined),
    )
    .map((v) => v.name);
}

const lockedDown = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
};

/** The controller: the explicit token volume in its container only, no Git cache, the renderer flags. */
export function controllerChecks(objects: KubeObject[], opts: { renderer: string; tokenSecret: string }): void {
  const { pod } = deploymentOf(objects, 'controller');
  assert.equal(pod.automountServiceAccountToken, false, 'controller Pod: spec.automountServiceAccountToken');
  assert.equal(pod.securityContext['runAsNonRoot'], true);
  assert.equal(pod.securityContext['runAsUser'], 65532);
  assert.deepEqual(pod.securityContext['seccompProfile'], { type: 'RuntimeDefault' });
  assert.equal(pod.containers.length, 1, 'one container: nothing else shares the Pod');
  const c = pod.containers[0] as Container;
  assert.equal(c.args[0], 'run');
  assert.ok(c.args.includes('--namespace=$(POD_NAMESPACE)'));
  assert.ok(c.args.includes(`--renderer=${opts.renderer}`), `controller args: --renderer=${opts.renderer}`);
  assert.ok(c.args.includes(`--renderer-token-secret=${opts.tokenSecret}`), 'controller args: --renderer-token-secret');
  assert.deepEqual(c.securityContext, lockedDown);
  assert.deepEqual([c.livenessProbe.httpGet.path, c.readinessProbe.httpGet.path], ['/healthz', '/readyz']);
  assert.deepEqual(
    c.ports.map((p) => [p.name, p.containerPort]),
    [['http', 8080]],
  );
  assert.ok(c.resources.requests?.['cpu'] && c.resources.requests['memory'], 'resource requests');

  // The token: exactly the projected volume the kubelet would have mounted, read-only, in this container.
  const tokenVolumes = pod.volumes.filter((v) => (v.projected?.sources ?? []).some((s) => 'serviceAccountToken' in s));
  assert.equal(tokenVolumes.length, 1, 'one projected ServiceAccount token volume');
  const token = tokenVolumes[0] as Volume;
  assert.deepEqual(
    token.projected?.sources.map((s) => Object.keys(s)[0]),
    ['serviceAccountToken', 'configMap', 'downwardAPI'],
  );
  assert.deepEqual(token.projected?.sources[1], {
    configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
  });
  assert.deepEqual(token.projected?.sources[2], {
    downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] },
  });
  assert.deepEqual(
    c.volumeMounts.find((m) => m.name === token.name),
    { name: token.name, mountPath: TOKEN_PATH, readOnly: true },
  );
  assert.deepEqual(credentialVolumes(pod), [token.name], 'no other credential volume');

  // No Git cache: the controller renders nothing; only HOME and TMPDIR are writable.
  const env = new Map((c.env ?? []).map((e) => [e.name, e.value]));
  for (const name of ['IMPERSYNC_CACHE_DIR', 'XDG_CACHE_HOME'])
    assert.equal(env.has(name), false, `controller env has no ${name}`);
  assert.deepEqual([env.get('HOME'), env.get('TMPDIR')], ['/home/impersync', '/tmp']);
  const writable = c.volumeMounts.filter((m) => m.name !== token.name).map((m) => m.mountPath);
  assert.deepEqual(writable.sort(), ['/home/impersync', '/tmp']);
  assert.ok(!c.volumeMounts.some((m) => m.mountPath.startsWith('/var/cache')), 'no cache volume in the controller');
  for (const m of c.volumeMounts.filter((x) => x.name !== token.name))
    assert.ok(pod.volumes.find((v) => v.name === m.name)?.emptyDir, `${m.mountPath} is an emptyDir`);
}

/** The renderer: no credential, uid 65533, its cache, the optional token Secret read-only, probes. */
export function rendererChecks(
  objects: KubeObject[],
  opts: { serviceAccount: string; tokenSecret: string; cacheSizeLimit?: string },
): void {
  const { pod } = deploymentOf(objects, 'renderer');
  const controller = deploymentOf(objects, 'controller').pod;
  assert.equal(pod.serviceAccountName, opts.serviceAccount, 'the renderer has its own ServiceAccount');
  assert.notEqual(pod.serviceAccountName, controller.serviceAccountName);
  const sa = objects.find((o) => o.kind === 'ServiceAccount' && o.metadata.name === opts.serviceAccount);
  assert.equal(sa?.['automountServiceAccountToken'], false, `ServiceAccount ${opts.serviceAccount}: no token mounted`);
  assert.equal(pod.automountServiceAccountToken, false, 'renderer Pod: spec.automountServiceAccountToken');
  assert.equal(pod.initContainers, undefined);
  assert.equal(pod.containers.length, 1);
  assert.deepEqual(credentialVolumes(pod, opts.tokenSecret), [], 'renderer Pod: no credential volume');
  assert.equal(pod.securityContext['runAsNonRoot'], true);
  assert.equal(pod.securityContext['runAsUser'], 65533);
  assert.equal(pod.securityContext['runAsGroup'], 65533);
  assert.notEqual(pod.securityContext['runAsUser'], controller.securityContext['runAsUser'], 'a uid of its own');
  assert.notEqual(pod.securityContext['runAsGroup'], controller.securityContext['runAsGroup'], 'a gid of its own');
  assert.deepEqual(pod.securityContext['seccompProfile'], { type: 'RuntimeDefault' });

  const c = pod.containers[0] as Container;
  assert.deepEqual(c.args, [
    'renderer',
    '--listen=0.0.0.0:8081',
    '--cache-dir=/var/cache/impersync-renderer',
    '--token-file=/etc/impersync/renderer-token/token',
    '--max-renders=4',
    '--render-memory=384Mi',
    '--render-timeout=180s',
    '--checkout-max-size=512Mi',
    '--checkout-cache-max-size=1Gi',
    '--clone-cache-max-size=1Gi',
    '--metrics-listen=0.0.0.0:8084',
  ]);
  assert.deepEqual(c.securityContext, lockedDown);
  assert.deepEqual(
    c.ports.map((p) => [p.name, p.containerPort]),
    [
      ['http', 8081],
      ['metrics', 8084],
    ],
  );
  assert.deepEqual(
    [c.livenessProbe.httpGet, c.readinessProbe.httpGet],
    [
      { path: '/healthz', port: 'http' },
      { path: '/readyz', port: 'http' },
    ],
  );
  assert.ok(c.resources.requests?.['cpu'] && c.resources.requests['memory'], 'renderer resource requests');
  assert.ok(c.resources.limits?.['memory'], 'renderer memory limit');

  const mount = (path: string) => c.volumeMounts.find((m) => m.mountPath === path);
  const volume = (m: Mount | undefined) => pod.volumes.find((v) => v.name === m?.name);
  assert.deepEqual(volume(mount('/var/cache/impersync-renderer'))?.emptyDir, {
    sizeLimit: opts.cacheSizeLimit ?? '4Gi',
  });
  const env = new Map((c.env ?? []).map((e) => [e.name, e.value]));
  for (const [name, path] of [
    ['HOME', '/home/impersync-renderer'],
    ['TMPDIR', '/tmp'],
  ] as const) {
    assert.equal(env.get(name), path, `renderer ${name}`);
    assert.ok(volume(mount(path))?.emptyDir, `renderer ${path} is an emptyDir`);
  }
  // Every cache the tools use is on the renderer's volume (the image points them at the controller's path).
  for (const name of ['IMPERSYNC_CACHE_DIR', 'XDG_CACHE_HOME', 'HELM_CACHE_HOME', 'HELM_CONFIG_HOME', 'HELM_DATA_HOME'])
    assert.match(env.get(name) ?? '', /^\/var\/cache\/impersync-renderer(\/|$)/, `renderer ${name}`);

  const tokenMount = mount('/etc/impersync/renderer-token');
  assert.equal(tokenMount?.readOnly, true, 'the renderer token is mounted read-only');
  assert.deepEqual(volume(tokenMount)?.secret, {
    secretName: opts.tokenSecret,
    optional: true,
    items: [{ key: 'token', path: 'token' }],
    defaultMode: 0o440,
  });
  const writable = c.volumeMounts.filter((m) => m !== tokenMount);
  for (const m of writable) assert.ok(volume(m)?.emptyDir, `${m.mountPath} is an emptyDir`);
  assert.ok(!c.volumeMounts.some((m) => m.mountPath.startsWith(TOKEN_PATH)), 'nothing at the token path');

  // The controller mounts none of the renderer's volumes (they are different Pods: this is the names).
  const controllerMounts = (controller.containers[0] as Container).volumeMounts.map((m) => m.mountPath);
  assert.ok(!controllerMounts.includes('/var/cache/impersync-renderer'));
}

type Selector = { matchLabels: Record<string, string> };
const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/**
 * The renderer's Service and ingress policy: controller Pods only, port 8081, nothing else selected;
 * and its metrics Service and rule: port 8084 only, from anyone (it takes no token and renders nothing).
 */
export function rendererNetworkChecks(objects: KubeObject[], opts: { service: string; policy: string }): void {
  const renderer = deploymentOf(objects, 'renderer').labels;
  const controller = deploymentOf(objects, 'controller').labels;
  const svc = objects.find((o) => o.kind === 'Service' && o.metadata.name === opts.service);
  assert.ok(svc, `Service ${opts.service}`);
  const spec = svc['spec'] as { selector: Record<string, string>; ports: { port: number; targetPort: string }[] };
  assert.ok(
    selects(spec.selector, renderer) && !selects(spec.selector, controller),
    'the Service selects the renderer only',
  );
  assert.deepEqual(
    spec.ports.map((p) => [p.port, p.targetPort]),
    [[8081, 'http']],
  );
  const metrics = objects.find((o) => o.kind === 'Service' && o.metadata.name === `${opts.service}-metrics`);
  assert.ok(metrics, `Service ${opts.service}-metrics`);
  const mspec = metrics['spec'] as { selector: Record<string, string>; ports: { port: number; targetPort: string }[] };
  assert.ok(selects(mspec.selector, renderer) && !selects(mspec.selector, controller));
  assert.deepEqual(
    mspec.ports.map((p) => [p.port, p.targetPort]),
    [[8084, 'metrics']],
  );
  assert.equal(labelsOf(metrics)['impersync.io/metrics'], 'true', 'the renderer ServiceMonitor selects it');
  assert.notEqual(labelsOf(svc)['impersync.io/metrics'], 'true', 'and not the token-guarded Service');
  // The headless Service the controller routes by: one address per ready renderer Pod, the same port.
  const headless = objects.find((o) => o.kind === 'Service' && o.metadata.name === `${opts.service}-headless`);
  assert.ok(headless, `Service ${opts.service}-headless`);
  const hspec = headless['spec'] as {
    clusterIP?: string;
    publishNotReadyAddresses?: boolean;
    selector: Record<string, string>;
    ports: { port: number; targetPort: string }[];
  };
  assert.equal(hspec.clusterIP, 'None', 'headless: DNS answers with the Pods, not one virtual IP');
  assert.notEqual(hspec.publishNotReadyAddresses, true, 'only ready Pods (their token mounted) are routed to');
  assert.ok(selects(hspec.selector, renderer) && !selects(hspec.selector, controller));
  assert.deepEqual(
    hspec.ports.map((p) => [p.port, p.targetPort]),
    [[8081, 'http']],
  );
  assert.notEqual(labelsOf(headless)['impersync.io/metrics'], 'true');
  // The controller's own Services do not select the renderer.
  for (const other of objects.filter((o) => o.kind === 'Service' && ![svc, metrics, headless].includes(o)))
    assert.ok(
      !selects((other['spec'] as { selector: Record<string, string> }).selector, renderer),
      other.metadata.name,
    );

  const policy = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === opts.policy);
  assert.ok(policy, `NetworkPolicy ${opts.policy}`);
  const p = policy['spec'] as {
    podSelector: Selector;
    policyTypes: string[];
    ingress: { from: { podSelector?: Selector; namespaceSelector?: unknown; ipBlock?: unknown }[]; ports: unknown[] }[];
  };
  assert.ok(selects(p.podSelector.matchLabels, renderer) && !selects(p.podSelector.matchLabels, controller));
  assert.deepEqual(p.policyTypes, ['Ingress']);
  assert.equal(p.ingress.length, 2);
  assert.deepEqual(p.ingress[1], { ports: [{ protocol: 'TCP', port: 8084 }] }, 'the metrics port, from anyone');
  const rule = p.ingress[0];
  assert.ok(rule);
  assert.equal(rule.from.length, 1);
  const from = rule.from[0];
  assert.ok(from?.podSelector && from.namespaceSelector === undefined && from.ipBlock === undefined, 'from Pods only');
  assert.ok(selects(from.podSelector.matchLabels, controller), 'from the controller Pods');
  assert.ok(!selects(from.podSelector.matchLabels, renderer), 'and not from the renderer Pods');
  assert.deepEqual(rule.ports, [{ protocol: 'TCP', port: 8081 }]);
}

export const PRIVATE_RANGES = {
  v4: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'],
  v6: ['fc00::/7', 'fe80::/10'],
};

/** The optional egress policy: DNS in `dnsNamespace`, and the Internet minus `except` on `ports`. */
export function rendererEgressChecks(
  policy: KubeObject,
  renderer: Record<string, string>,
  want: { dnsNamespace: string; ports: number[]; except: { v4: string[]; v6: string[] } },
): void {
  const p = policy['spec'] as {
    podSelector: Selector;
    policyTypes: string[];
    egress: { to: Record<string, unknown>[]; ports: { protocol: string; port: number }[] }[];
  };
  assert.ok(selects(p.podSelector.matchLabels, renderer), 'the egress policy selects the renderer');
  assert.deepEqual(p.policyTypes, ['Egress']);
  assert.deepEqual(p.egress, [
    {
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': want.dnsNamespace } } }],
      ports: [
        { protocol: 'UDP', port: 53 },
        { protocol: 'TCP', port: 53 },
      ],
    },
    {
      to: [
        { ipBlock: { cidr: '0.0.0.0/0', except: want.except.v4 } },
        { ipBlock: { cidr: '::/0', except: want.except.v6 } },
      ],
      ports: want.ports.map((port) => ({ protocol: 'TCP', port })),
    },
  ]);
}
