// argocd-cm resource.customizations.knownTypeFields end to end, with Argo CD's YAML
// (util/settings/settings.go, util/argo/normalizers/knowntypes_normalizer.go): a custom resource
// whose spec.pod is a PodSpec, Git saying `cpu: 1000m`, and another field manager (as a controller
// would) rewriting it to `cpu: "1"`. Without the setting the server-side dry-run of Git (1000m)
// differs from the live object (1): OutOfSync. With spec.pod declared a core/v1/PodSpec both sides
// are read through the type, both are `1`: Synced.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, getRaw, WIDGET_CRD } from '../support/index.ts';
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

const BASE = { 'application.sync.impersonation.enabled': 'true' };
const KNOWN = 'resource.customizations.knownTypeFields.example.com_Widget';

const synced = (a: { status?: Record<string, unknown> }) =>
  (a.status?.['sync'] as { status?: string } | undefined)?.status;

const widget = (cpu: string) => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'known' },
  spec: { pod: { containers: [{ name: 'app', image: 'example/app:1', resources: { limits: { cpu } } }] } },
});

before(async () => {
  cp = await startDeployersPlane({ settings: BASE, project: 'kt', namespaces: ['known'] });
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
    'known/widget.yaml':
      'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  pod:\n    containers:\n' +
      '    - name: app\n      image: example/app:1\n      resources:\n        limits:\n          cpu: 1000m\n',
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('knownTypeFields: a PodSpec field whose cpu a controller rewrote from 1000m to 1 is OutOfSync without it, Synced with it', async () => {
  const base = application('known', fx.repo.url, {
    project: 'kt',
    path: 'known',
    destination: { server: 'https://kubernetes.default.svc', namespace: 'known' },
  });
  // Automated without self-heal: the first sync applies Git, later drift is only reported.
  await applyRaw(cp.admin, {
    ...base,
    spec: { ...(base['spec'] as Record<string, unknown>), syncPolicy: { automated: {} } },
  });
  await waitForApp(cp, 'known', 'synced once', (a) => operationPhase(a) === 'Succeeded' && synced(a) === 'Synced');
  // The controller's rewrite: the same quantity in another spelling, under its own field manager.
  await applyRaw(cp.admin, widget('1'), { fieldManager: 'widget-controller' });
  const live = (await getRaw(cp.admin, {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    name: 'w',
    namespace: 'known',
  })) as ReturnType<typeof widget> | undefined;
  assert.equal(live?.spec.pod.containers[0]?.resources.limits.cpu, '1', 'the live object says 1');
  await waitForApp(cp, 'known', 'OutOfSync without knownTypeFields', (a) => synced(a) === 'OutOfSync');

  await setSettings(cp, { ...BASE, [KNOWN]: '- field: spec.pod\n  type: core/v1/PodSpec\n' });
  const a = await waitForApp(cp, 'known', 'Synced with knownTypeFields', (x) => synced(x) === 'Synced');
  assert.equal(synced(a), 'Synced');
  const after = (await getRaw(cp.admin, {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    name: 'w',
    namespace: 'known',
  })) as ReturnType<typeof widget> | undefined;
  assert.equal(
    after?.spec.pod.containers[0]?.resources.limits.cpu,
    '1',
    'nothing was applied: still the controller’s spelling',
  );

  // Another type for the same field (a quantity is no PodSpec): Argo CD's normalizer fails, logs it
  // and compares what it has, so the difference is back.
  await setSettings(cp, { ...BASE, [KNOWN]: '- field: spec.pod\n  type: core/Quantity\n' });
  await waitForApp(cp, 'known', 'OutOfSync when the field is not that type', (x) => synced(x) === 'OutOfSync');
});
