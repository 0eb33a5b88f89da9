// Kubernetes-shaped cases for the structured-merge-diff port: a dry-run answer (predicted), the
// live object and their managedFields, as a webhook-mutated Deployment and a custom resource give
// them. Shared by the golden tests and the comparison with the Go library.
import { DEPLOYMENT, WIDGET } from './fixtures.ts';

const MANAGER = 'impersync';

const mf = (manager: string, operation: string, fieldsV1: unknown) => ({
  manager,
  operation,
  apiVersion: 'apps/v1',
  fieldsType: 'FieldsV1',
  fieldsV1,
});

/** What impersync's apply of the manifest owns (the config: labels, replicas, one container). */
const owned = {
  'f:metadata': { 'f:labels': { 'f:app': {} }, 'f:annotations': { 'f:config': {} } },
  'f:spec': {
    'f:replicas': {},
    'f:selector': {},
    'f:template': {
      'f:metadata': { 'f:labels': { 'f:app': {} } },
      'f:spec': {
        'f:containers': {
          'k:{"name":"web"}': {
            '.': {},
            'f:name': {},
            'f:image': {},
            'f:args': {},
            'f:ports': {
              'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:protocol': {} },
            },
            'f:env': { 'k:{"name":"A"}': { '.': {}, 'f:name': {}, 'f:value': {} } },
          },
        },
      },
    },
  },
};

const controllerOwned = {
  'f:metadata': { 'f:annotations': { '.': {}, 'f:deployment.kubernetes.io/revision': {} } },
  'f:status': { 'f:replicas': {} },
};

function deployment(
  annotations: Record<string, string>,
  extra: {
    image?: string;
    env?: unknown[];
    containers?: unknown[];
    finalizers?: string[];
    tolerations?: unknown[];
    nodeSelector?: Record<string, string>;
    labels?: Record<string, string>;
  },
) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'team',
      labels: extra.labels ?? { app: 'web' },
      annotations,
      ...(extra.finalizers ? { finalizers: extra.finalizers } : {}),
      managedFields: [mf(MANAGER, 'Apply', owned), mf('kube-controller-manager', 'Update', controllerOwned)],
    },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: extra.containers ?? [
            {
              name: 'web',
              image: extra.image ?? 'nginx:1',
              args: ['--port', '80'],
              ports: [{ containerPort: 80, protocol: 'TCP' }],
              env: extra.env ?? [{ name: 'A', value: 'a' }],
              imagePullPolicy: 'IfNotPresent',
            },
          ],
          ...(extra.tolerations ? { tolerations: extra.tolerations } : {}),
          ...(extra.nodeSelector ? { nodeSelector: extra.nodeSelector } : {}),
          dnsPolicy: 'ClusterFirst',
        },
      },
    },
    status: { replicas: 2 },
  };
}

export interface Case {
  name: string;
  typeName: string;
  predicted: Record<string, unknown>;
  live: Record<string, unknown>;
  manager: string;
  remove?: unknown;
  /**
   * Where the Go pipeline leaves a null the removal made, which gitops-engine's remarshal then
   * drops (a built-in kind's omitempty field): dotted paths into the result.
   */
  remarshalDrops?: string[];
}

export const CASES: Case[] = [
  {
    name: 'a webhook that sets an annotation, an env var, a sidecar, a finalizer, tolerations and a node selector',
    typeName: DEPLOYMENT,
    live: deployment(
      { config: 'x', 'webhook/counter': '1', 'deployment.kubernetes.io/revision': '1' },
      {
        env: [
          { name: 'A', value: 'a' },
          { name: 'INJECTED', value: '1' },
        ],
        finalizers: ['example.com/a'],
        tolerations: [{ key: 'k', operator: 'Exists' }],
        nodeSelector: { zone: 'a' },
      },
    ),
    predicted: deployment(
      { config: 'x', 'webhook/counter': '2', 'deployment.kubernetes.io/revision': '1' },
      {
        image: 'nginx:2',
        env: [
          { name: 'A', value: 'a' },
          { name: 'INJECTED', value: '2' },
        ],
        finalizers: ['example.com/a', 'example.com/webhook'],
        tolerations: [{ key: 'k', operator: 'Exists' }, { key: 'webhook' }],
        nodeSelector: { zone: 'b' },
      },
    ),
    manager: MANAGER,
    remove: {
      'f:metadata': { 'f:annotations': { 'f:webhook/counter': {} } },
      'f:spec': {
        'f:template': {
          'f:spec': { 'f:containers': { 'k:{"name":"web"}': { 'f:env': { 'k:{"name":"INJECTED"}': {} } } } },
        },
      },
    },
  },
  {
    name: 'a sidecar container the webhook adds that live does not have',
    typeName: DEPLOYMENT,
    live: deployment({ config: 'x' }, {}),
    predicted: deployment(
      { config: 'x' },
      {
        containers: [
          {
            name: 'web',
            image: 'nginx:1',
            args: ['--port', '80'],
            ports: [{ containerPort: 80, protocol: 'TCP' }],
            env: [{ name: 'A', value: 'a' }],
            imagePullPolicy: 'IfNotPresent',
          },
          { name: 'sidecar', image: 'proxy:1', ports: [{ containerPort: 15001 }] },
        ],
      },
    ),
    manager: MANAGER,
  },
  {
    name: 'a field the manifest sets and the webhook changes: the answer keeps the owned field',
    typeName: DEPLOYMENT,
    live: deployment({ config: 'webhook-7' }, {}),
    predicted: deployment({ config: 'webhook-8' }, {}),
    manager: MANAGER,
  },
  {
    name: 'a label the apply removes (owned in live) and one another actor removed after live was read',
    typeName: DEPLOYMENT,
    live: {
      ...deployment({ config: 'x' }, { labels: { app: 'web', old: 'yes', other: 'theirs' } }),
      metadata: {
        ...deployment({ config: 'x' }, { labels: { app: 'web', old: 'yes', other: 'theirs' } }).metadata,
        managedFields: [
          mf(MANAGER, 'Apply', {
            ...owned,
            'f:metadata': { 'f:labels': { 'f:app': {}, 'f:old': {} }, 'f:annotations': { 'f:config': {} } },
          }),
          mf('someone', 'Update', { 'f:metadata': { 'f:labels': { 'f:other': {} } } }),
        ],
      },
    },
    predicted: deployment({ config: 'x' }, { labels: { app: 'web' } }),
    manager: MANAGER,
  },
  {
    name: 'a custom resource whose spec preserves unknown fields',
    typeName: WIDGET,
    live: {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: {
        name: 'w',
        namespace: 'team',
        managedFields: [mf(MANAGER, 'Apply', { 'f:spec': { 'f:size': {}, 'f:extra': { 'f:a': {} }, 'f:items': {} } })],
      },
      spec: { size: 1, extra: { a: 1, b: 'live' }, items: ['x'] },
    },
    predicted: {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: {
        name: 'w',
        namespace: 'team',
        managedFields: [mf(MANAGER, 'Apply', { 'f:spec': { 'f:size': {}, 'f:extra': { 'f:a': {} }, 'f:items': {} } })],
      },
      spec: { size: 2, extra: { a: 2, b: 'webhook', c: { deep: true } }, items: ['x', 'webhook'] },
    },
    manager: MANAGER,
    remove: { 'f:spec': { 'f:extra': {} } },
  },
  {
    name: 'a port with its protocol defaulted in the key, and one the webhook adds',
    typeName: DEPLOYMENT,
    live: deployment({ config: 'x' }, {}),
    predicted: deployment(
      { config: 'x' },
      {
        containers: [
          {
            name: 'web',
            image: 'nginx:1',
            args: ['--port', '80'],
            ports: [{ containerPort: 80 }, { containerPort: 9090, protocol: 'UDP', name: 'metrics' }],
            env: [{ name: 'A', value: 'a' }],
          },
        ],
      },
    ),
    manager: MANAGER,
  },
  {
    name: 'annotations only the webhook sets, on an object live has without them',
    typeName: DEPLOYMENT,
    live: (() => {
      const d = deployment({}, {});
      delete (d.metadata as { annotations?: unknown }).annotations;
      return d;
    })(),
    predicted: deployment({ 'webhook/counter': '9' }, {}),
    manager: MANAGER,
    remarshalDrops: ['metadata.annotations'],
  },
  {
    name: 'the manager owns nothing there',
    typeName: DEPLOYMENT,
    live: deployment({ config: 'x' }, {}),
    predicted: deployment({ config: 'x' }, {}),
    manager: 'argocd-controller',
  },
  {
    name: 'live has two env entries of one name',
    typeName: DEPLOYMENT,
    live: deployment(
      { config: 'x' },
      {
        env: [
          { name: 'A', value: 'a' },
          { name: 'A', value: 'b' },
        ],
      },
    ),
    predicted: deployment({ config: 'x' }, {}),
    manager: MANAGER,
  },
];
