// An OpenAPI v3 group-version document shaped as kube-apiserver publishes apps/v1 (the parts a
// Deployment uses, with the same list, map and patch extensions and `allOf` references), plus a
// custom resource whose spec preserves unknown fields. Hand-written, not copied from a server.
const ref = (name: string, extra: Record<string, unknown> = {}) => ({
  allOf: [{ $ref: `#/components/schemas/${name}` }],
  ...extra,
});
const str = { type: 'string', default: '' };
const strMap = { type: 'object', additionalProperties: str };

export const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';

export const DOCUMENT = {
  openapi: '3.0.0',
  info: { title: 'Kubernetes', version: 'v1.34.0' },
  paths: {},
  components: {
    schemas: {
      'io.k8s.api.apps.v1.Deployment': {
        type: 'object',
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          metadata: ref(META, { default: {} }),
          spec: ref('io.k8s.api.apps.v1.DeploymentSpec', { default: {} }),
          status: { type: 'object', properties: { replicas: { type: 'integer', format: 'int32' } } },
        },
        'x-kubernetes-group-version-kind': [{ group: 'apps', kind: 'Deployment', version: 'v1' }],
      },
      'io.k8s.api.apps.v1.DeploymentSpec': {
        type: 'object',
        required: ['selector', 'template'],
        properties: {
          replicas: { type: 'integer', format: 'int32' },
          selector: ref('io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector'),
          template: ref('io.k8s.api.core.v1.PodTemplateSpec', { default: {} }),
          strategy: {
            type: 'object',
            properties: {
              type: { type: 'string' },
              rollingUpdate: {
                type: 'object',
                properties: {
                  maxSurge: ref('io.k8s.apimachinery.pkg.util.intstr.IntOrString'),
                  maxUnavailable: ref('io.k8s.apimachinery.pkg.util.intstr.IntOrString'),
                },
              },
            },
          },
        },
      },
      'io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector': {
        type: 'object',
        properties: {
          matchLabels: strMap,
          matchExpressions: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                key: str,
                operator: str,
                values: { type: 'array', items: str, 'x-kubernetes-list-type': 'atomic' },
              },
            },
            'x-kubernetes-list-type': 'atomic',
          },
        },
        'x-kubernetes-map-type': 'atomic',
      },
      'io.k8s.api.core.v1.PodTemplateSpec': {
        type: 'object',
        properties: {
          metadata: ref(META, { default: {} }),
          spec: ref('io.k8s.api.core.v1.PodSpec', { default: {} }),
        },
      },
      'io.k8s.api.core.v1.PodSpec': {
        type: 'object',
        properties: {
          containers: {
            type: 'array',
            items: ref('io.k8s.api.core.v1.Container', { default: {} }),
            'x-kubernetes-list-map-keys': ['name'],
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-patch-merge-key': 'name',
            'x-kubernetes-patch-strategy': 'merge',
          },
          nodeSelector: { ...strMap, 'x-kubernetes-map-type': 'atomic' },
          tolerations: {
            type: 'array',
            items: { type: 'object', properties: { key: str, operator: str, effect: str, value: str } },
            'x-kubernetes-list-type': 'atomic',
          },
          volumes: {
            type: 'array',
            items: {
              type: 'object',
              properties: { name: str, emptyDir: { type: 'object', properties: { medium: str } } },
            },
            'x-kubernetes-patch-merge-key': 'name',
            'x-kubernetes-patch-strategy': 'merge,retainKeys',
          },
          serviceAccountName: { type: 'string' },
          dnsPolicy: { type: 'string' },
          terminationGracePeriodSeconds: { type: 'integer', format: 'int64' },
        },
      },
      'io.k8s.api.core.v1.Container': {
        type: 'object',
        required: ['name'],
        properties: {
          name: str,
          image: { type: 'string' },
          args: { type: 'array', items: str, 'x-kubernetes-list-type': 'atomic' },
          env: {
            type: 'array',
            items: {
              type: 'object',
              required: ['name'],
              properties: { name: str, value: { type: 'string' } },
            },
            'x-kubernetes-list-map-keys': ['name'],
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-patch-merge-key': 'name',
            'x-kubernetes-patch-strategy': 'merge',
          },
          ports: {
            type: 'array',
            items: {
              type: 'object',
              required: ['containerPort'],
              properties: {
                containerPort: { type: 'integer', format: 'int32', default: 0 },
                name: { type: 'string' },
                protocol: { type: 'string', default: 'TCP' },
              },
            },
            'x-kubernetes-list-map-keys': ['containerPort', 'protocol'],
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-patch-merge-key': 'containerPort',
            'x-kubernetes-patch-strategy': 'merge',
          },
          resources: {
            type: 'object',
            properties: {
              limits: { type: 'object', additionalProperties: ref('io.k8s.apimachinery.pkg.api.resource.Quantity') },
            },
          },
          imagePullPolicy: { type: 'string' },
        },
      },
      [META]: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          namespace: { type: 'string' },
          uid: { type: 'string' },
          resourceVersion: { type: 'string' },
          generation: { type: 'integer', format: 'int64' },
          creationTimestamp: ref('io.k8s.apimachinery.pkg.apis.meta.v1.Time'),
          labels: strMap,
          annotations: strMap,
          finalizers: {
            type: 'array',
            items: str,
            'x-kubernetes-list-type': 'set',
            'x-kubernetes-patch-strategy': 'merge',
          },
          ownerReferences: {
            type: 'array',
            items: {
              type: 'object',
              properties: { uid: str, name: str, kind: str, apiVersion: str },
              'x-kubernetes-map-type': 'atomic',
            },
            'x-kubernetes-list-map-keys': ['uid'],
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-patch-merge-key': 'uid',
            'x-kubernetes-patch-strategy': 'merge',
          },
          managedFields: {
            type: 'array',
            items: ref('io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry', { default: {} }),
          },
        },
      },
      'io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry': {
        type: 'object',
        properties: {
          apiVersion: { type: 'string' },
          fieldsType: { type: 'string' },
          fieldsV1: ref('io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1'),
          manager: { type: 'string' },
          operation: { type: 'string' },
          subresource: { type: 'string' },
          time: ref('io.k8s.apimachinery.pkg.apis.meta.v1.Time'),
        },
      },
      'io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1': { type: 'object' },
      'io.k8s.apimachinery.pkg.apis.meta.v1.Time': { type: 'string', format: 'date-time' },
      'io.k8s.apimachinery.pkg.util.intstr.IntOrString': { type: 'string', format: 'int-or-string' },
      'io.k8s.apimachinery.pkg.api.resource.Quantity': { type: 'string' },
      'com.example.v1.Widget': {
        type: 'object',
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          metadata: { $ref: `#/components/schemas/${META}` },
          spec: {
            type: 'object',
            properties: { size: { type: 'integer' }, items: { type: 'array', items: { type: 'string' } } },
            'x-kubernetes-preserve-unknown-fields': true,
          },
        },
        'x-kubernetes-group-version-kind': [{ group: 'example.com', kind: 'Widget', version: 'v1' }],
      },
    },
  },
};

export const DEPLOYMENT = 'io.k8s.api.apps.v1.Deployment';
export const WIDGET = 'com.example.v1.Widget';
