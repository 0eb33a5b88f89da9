// The knownTypeFields round trip (sync/known-types.ts, sync/quantity.ts) against what Go does: each
// expected value is what json.Unmarshal into the k8s.io/api v0.37.0 type and json.Marshal back gave
// (null: Go returned an error), recorded from a Go program run once over these inputs.
import assert from 'node:assert/strict';
import test from 'node:test';
import { knownTypeFieldsOf, normalizeKnownTypes, remarshal } from '../../src/sync/known-types.ts';
import { readSyncSettings } from '../../src/sync/settings.ts';

/** [input, Go's answer or null for an error] */
const QUANTITIES: Array<[unknown, unknown]> = [
  ['1000m', '1'],
  ['1', '1'],
  ['100m', '100m'],
  ['1.5', '1500m'],
  ['0.5Gi', '512Mi'],
  ['1536Mi', '1536Mi'],
  ['1e3', '1e3'],
  ['1000', '1k'],
  ['1Ki', '1Ki'],
  ['1024', '1024'],
  ['2048Ki', '2Mi'],
  ['1.5Gi', '1536Mi'],
  ['0.1Ki', '102400m'],
  ['1n', '1n'],
  ['0.0000000001', '1n'],
  ['-1000m', '-1'],
  ['1E', '1E'],
  ['12e6', '12e6'],
  ['0', '0'],
  ['+1k', '+1k'],
  [123, '123'],
  [0.5, '500m'],
  ['1.0', '1'],
  ['1000000000000000000000', '1'],
  ['9Ei', '9223372036854775807'],
  ['10Ei', '9223372036854775807'],
  ['1.2345678901234567890', '1234567891n'],
  ['-0.5Ki', '-512'],
  ['  2  ', '2'],
  ['1e-12', '1e-9'],
  ['5E3', '5E3'],
  ['007', '007'],
  ['1.', '1.'],
  ['.5', '500m'],
  ['1m5', null],
  ['abc', null],
  ['1KB', null],
  ['0.000001Ki', '1024u'],
  [null, '0'],
  ['1000k', '1M'],
  ['1000000', '1M'],
  ['1e9', '1e9'],
  ['1024Ki', '1Mi'],
  ['1023Ki', '1023Ki'],
  ['3e-3', '3e-3'],
  ['1.5e3', '1500'],
  ['8E', '8E'],
  ['1Pi', '1Pi'],
  ['1024Pi', '1Ei'],
  ['0001000', '1k'],
  ['12345678901234567890', '12345678901234567890'],
  ['1.5Ki', '1536'],
  ['8Ki', '8Ki'],
  ['7Ki', '7Ki'],
  ['1024Mi', '1Gi'],
  ['100Mi', '100Mi'],
  ['1k', '1k'],
  ['1000k', '1M'],
  ['1.000', '1'],
  ['10', '10'],
  ['0.0', '0'],
  ['00', '0'],
  ['-007', '-007'],
  ['1500m', '1500m'],
  ['1.5e3', '1500'],
  ['3Ei', '3Ei'],
  ['1.5E', '1500P'],
  ['150000000000000000000', '150E'],
  ['1Ti', '1Ti'],
  ['1000Ti', '1000Ti'],
  ['1m', '1m'],
  ['1000n', '1u'],
];
const DURATIONS: Array<[string, unknown]> = [
  ['60s', '1m0s'],
  ['1h', '1h0m0s'],
  ['1.5h', '1h30m0s'],
  ['100ms', '100ms'],
  ['1us', '1\u00b5s'],
  ['0', '0s'],
  ['-2m3s', '-2m3s'],
  ['1h0m0s', '1h0m0s'],
  ['1.123456789123s', '1.123456789s'],
  ['', null],
  ['1d', null],
  ['5', null],
  ['2h45m', '2h45m0s'],
  ['.5s', '500ms'],
  ['1.s', '1s'],
  ['+3s', '3s'],
  ['1\u00b5s', '1\u00b5s'],
  ['300000h', '300000h0m0s'],
];
const OBJECTS: Array<[string, unknown, unknown]> = [
  [
    'core/v1/PodSpec',
    {
      containers: [
        {
          name: 'a',
          image: 'x',
          resources: { limits: { cpu: '1000m', memory: null } },
          bogus: 1,
          ports: [{ containerPort: 80, Protocol: 'TCP' }],
        },
      ],
      hostNetwork: false,
      automountServiceAccountToken: false,
      volumes: [],
      nodeSelector: {},
      tolerations: null,
      securityContext: {},
    },
    {
      automountServiceAccountToken: false,
      containers: [
        {
          image: 'x',
          name: 'a',
          ports: [{ containerPort: 80, protocol: 'TCP' }],
          resources: { limits: { cpu: '1', memory: '0' } },
        },
      ],
      securityContext: {},
    },
  ],
  [
    'core/v1/PodSpec',
    {
      containers: [
        {
          name: 'a',
          env: [{ name: 'X', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1000m' } } }],
          livenessProbe: { httpGet: { port: 'http', path: '/' } },
          readinessProbe: { tcpSocket: { port: 8080 } },
        },
      ],
      overhead: { cpu: '0.25' },
    },
    {
      containers: [
        {
          env: [{ name: 'X', valueFrom: { resourceFieldRef: { divisor: '1', resource: 'limits.cpu' } } }],
          livenessProbe: { httpGet: { path: '/', port: 'http' } },
          name: 'a',
          readinessProbe: { tcpSocket: { port: 8080 } },
          resources: {},
        },
      ],
      overhead: { cpu: '250m' },
    },
  ],
  ['core/v1/PodSpec', { containers: [{ name: 'a', resources: { limits: { cpu: 'abc' } } }] }, null],
  [
    'core/v1/PodSpec',
    { containers: [{ name: 'a', livenessProbe: { httpGet: { port: null } } }] },
    { containers: [{ livenessProbe: { httpGet: { port: 0 } }, name: 'a', resources: {} }] },
  ],
  ['core/v1/PodSpec', { containers: [{ name: 5 }] }, null],
  [
    'core/v1/PodSpec',
    { terminationGracePeriodSeconds: 30, activeDeadlineSeconds: 2147483648, priority: 2147483648 },
    null,
  ],
  [
    'core/v1/Event',
    {
      metadata: { name: 'e', creationTimestamp: '2024-01-01T00:00:00Z', labels: {} },
      firstTimestamp: '2024-01-01T01:00:00.5+01:00',
      eventTime: '2024-01-01T00:00:00.123456789Z',
      lastTimestamp: '0001-01-01T00:00:00Z',
    },
    null,
  ],
  [
    'core/v1/ConfigMap',
    { data: { a: 'b' }, binaryData: { x: 'aGVsbG8=' }, immutable: false },
    { binaryData: { x: 'aGVsbG8=' }, data: { a: 'b' }, immutable: false, metadata: {} },
  ],
  ['core/v1/ConfigMap', { binaryData: { x: 'aGVsbG8' } }, null],
  [
    'core/v1/Volume',
    { name: 'v', emptyDir: { sizeLimit: '1024Mi' }, configMap: { name: 'c', defaultMode: 420 } },
    { configMap: { defaultMode: 420, name: 'c' }, emptyDir: { sizeLimit: '1Gi' }, name: 'v' },
  ],
  ['core/v1/ResourceRequirements', 'x', null],
  [
    'core/v1/ResourceRequirements',
    { Limits: { cpu: 1 }, limits: { memory: '1G' } },
    { limits: { cpu: '1', memory: '1G' } },
  ],
  [
    'core/v1/Event',
    { eventTime: '2024-01-01T00:00:00.123456Z' },
    {
      eventTime: '2024-01-01T00:00:00.123456Z',
      firstTimestamp: null,
      involvedObject: {},
      lastTimestamp: null,
      metadata: {},
      reportingComponent: '',
      reportingInstance: '',
      source: {},
    },
  ],
  ['core/v1/Event', { eventTime: '2024-01-01T00:00:00Z' }, null],
  ['core/v1/Event', { eventTime: '2024-01-01T00:00:00.1234567Z' }, null],
  ['core/v1/Event', { eventTime: '2024-02-30T00:00:00.000000Z' }, null],
  [
    'core/v1/Event',
    { eventTime: '2024-01-01T00:00:00.000000+02:00' },
    {
      eventTime: '2023-12-31T22:00:00.000000Z',
      firstTimestamp: null,
      involvedObject: {},
      lastTimestamp: null,
      metadata: {},
      reportingComponent: '',
      reportingInstance: '',
      source: {},
    },
  ],
  [
    'core/v1/Event',
    { firstTimestamp: '2024-01-01T00:00:00.999Z' },
    {
      eventTime: null,
      firstTimestamp: '2024-01-01T00:00:00Z',
      involvedObject: {},
      lastTimestamp: null,
      metadata: {},
      reportingComponent: '',
      reportingInstance: '',
      source: {},
    },
  ],
  [
    'core/v1/Event',
    { firstTimestamp: '2024-01-01T23:59:59-05:30' },
    {
      eventTime: null,
      firstTimestamp: '2024-01-02T05:29:59Z',
      involvedObject: {},
      lastTimestamp: null,
      metadata: {},
      reportingComponent: '',
      reportingInstance: '',
      source: {},
    },
  ],
  [
    'core/v1/Event',
    { firstTimestamp: '0001-01-01T00:00:00Z' },
    {
      eventTime: null,
      firstTimestamp: null,
      involvedObject: {},
      lastTimestamp: null,
      metadata: {},
      reportingComponent: '',
      reportingInstance: '',
      source: {},
    },
  ],
  [
    'core/v1/Event',
    { firstTimestamp: '0001-01-01T00:00:00.5Z' },
    {
      eventTime: null,
      firstTimestamp: '0001-01-01T00:00:00Z',
      involvedObject: {},
      lastTimestamp: null,
      metadata: {},
      reportingComponent: '',
      reportingInstance: '',
      source: {},
    },
  ],
  ['core/v1/Event', { firstTimestamp: '2024-13-01T00:00:00Z' }, null],
  ['core/v1/Event', { firstTimestamp: '2024-01-01 00:00:00Z' }, null],
  ['core/v1/Event', { firstTimestamp: '2024-01-01T00:00:00z' }, null],
];

function answer(type: string, v: unknown): unknown {
  try {
    return remarshal(type, v);
  } catch {
    return null;
  }
}

const sorted = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(sorted)
    : v && typeof v === 'object'
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
        )
      : v;

test('quantities are written as resource.Quantity writes them: 1000m is 1, 0.5Gi is 512Mi, bad ones fail', () => {
  const wrong = QUANTITIES.filter(([q, want]) => JSON.stringify(answer('core/Quantity', q)) !== JSON.stringify(want));
  assert.deepEqual(wrong, []);
  assert.equal(answer('core/Quantity', '1000m'), '1');
});

test('durations are written as metav1.Duration writes them: 60s is 1m0s', () => {
  const wrong = DURATIONS.filter(([d, want]) => JSON.stringify(answer('meta/v1/Duration', d)) !== JSON.stringify(want));
  assert.deepEqual(wrong, []);
});

test('core/v1 types drop unknown fields and write zero values, times, bytes and quantities as Go does', () => {
  const wrong = OBJECTS.filter(
    ([type, v, want]) => JSON.stringify(sorted(answer(type, v))) !== JSON.stringify(sorted(want)),
  );
  assert.deepEqual(wrong, []);
});

test('argocd-cm knownTypeFields: both forms read, an unknown type named, the Rollout default kept unless configured', () => {
  const s = readSyncSettings({
    'resource.customizations.knownTypeFields.example.com_Widget':
      '- field: spec.pod\n  type: core/v1/PodSpec\n- field: spec.items.resources\n  type: core/v1/ResourceRequirements\n',
    'resource.customizations':
      'other.io/Thing:\n  knownTypeFields:\n  - field: spec.size\n    type: core/Quantity\n  - field: spec.bad\n    type: core/v1/Nope\n',
  });
  assert.deepEqual(s.knownTypeFields.map((f) => [f.group, f.kind, f.field, f.type].join(' ')).sort(), [
    'argoproj.io Rollout spec.template.spec core/v1/PodSpec',
    'example.com Widget spec.items.resources core/v1/ResourceRequirements',
    'example.com Widget spec.pod core/v1/PodSpec',
    'other.io Thing spec.size core/Quantity',
  ]);
  assert.ok(
    s.errors.some((e) => e.includes('core/v1/Nope') && e.includes('is not supported')),
    s.errors.join('; '),
  );
  const own = knownTypeFieldsOf([{ group: 'argoproj.io', kind: 'Rollout', field: 'spec.x', type: 'core/Quantity' }]);
  assert.deepEqual(
    own.fields.map((f) => f.field),
    ['spec.x'],
  );
});

type Widget = { spec: { items: unknown[] } };

test('the fields are found as Argo CD finds them: through the first list on the path, each object of it', () => {
  const fields = knownTypeFieldsOf([
    { group: 'example.com', kind: 'Widget', field: 'spec.items.resources', type: 'core/v1/ResourceRequirements' },
  ]).fields;
  const w = {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w' },
    spec: { items: [{ resources: { limits: { cpu: '1000m' }, extra: true } }, 'not an object', { other: 1 }] },
  };
  const n = normalizeKnownTypes(fields, w as never);
  assert.deepEqual((n.object as unknown as Widget).spec.items, [
    { resources: { limits: { cpu: '1' } } },
    'not an object',
    { other: 1 },
  ]);
  assert.equal(n.error, undefined);
  assert.deepEqual(w.spec.items[0], { resources: { limits: { cpu: '1000m' }, extra: true } }, 'a copy');
  // Argo Rollouts: spec.template.spec as a PodSpec, with no configuration.
  const rollout = normalizeKnownTypes(knownTypeFieldsOf([]).fields, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'r' },
    spec: { template: { spec: { containers: [{ name: 'a', resources: { requests: { memory: '1024Mi' } } }] } } },
  } as never);
  assert.deepEqual((rollout.object as unknown as { spec: { template: { spec: unknown } } }).spec.template.spec, {
    containers: [{ name: 'a', resources: { requests: { memory: '1Gi' } } }],
  });
  // A value the type cannot hold: the error, and the object as far as it got.
  const bad = normalizeKnownTypes(fields, {
    ...w,
    spec: { items: [{ resources: { limits: { cpu: '2000m' } } }, { resources: { limits: { cpu: 'x' } } }] },
  } as never);
  assert.match(bad.error ?? '', /spec\.items\.resources as core\/v1\/ResourceRequirements/);
  assert.deepEqual((bad.object as unknown as Widget).spec.items[0], { resources: { limits: { cpu: '2' } } });
});
