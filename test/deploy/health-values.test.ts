// The chart's health values (docs/health.md): a folder of Lua checks mounted into the controller
// and named in argocd-cm, as impersync.health.customizationsDir.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../support/index.ts';
import { helmTemplate } from './render.ts';

type Pod = {
  spec: {
    template: {
      spec: {
        containers: Array<{
          name: string;
          volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
        }>;
        volumes: Array<Record<string, unknown>>;
      };
    };
  };
};

const find = (objects: KubeObject[], kind: string, name?: string) => {
  const o = objects.find((x) => x.kind === kind && (name === undefined || x.metadata.name === name));
  assert.ok(o, `${kind} ${name ?? ''} rendered`);
  return o;
};

test('health.customizationsDir and health.volume: the folder is mounted read-only and named in argocd-cm', () => {
  const objects = helmTemplate({
    set: ['health.customizationsDir=/etc/impersync/health'],
    setJson: [
      'health.volume={"configMap":{"name":"checks","items":[{"key":"w.lua","path":"example.com/Widget/health.lua"}]}}',
    ],
  });
  const data = find(objects, 'ConfigMap', 'argocd-cm')['data'] as Record<string, string>;
  assert.equal(data['impersync.health.customizationsDir'], '/etc/impersync/health');
  const pod = (find(objects, 'Deployment', 'impersync') as unknown as Pod).spec.template.spec;
  const controller = pod.containers.find((c) => c.name === 'controller');
  assert.deepEqual(
    controller?.volumeMounts.find((m) => m.name === 'health-customizations'),
    { name: 'health-customizations', mountPath: '/etc/impersync/health', readOnly: true },
  );
  assert.deepEqual(
    pod.volumes.find((v) => v['name'] === 'health-customizations'),
    {
      name: 'health-customizations',
      configMap: { name: 'checks', items: [{ key: 'w.lua', path: 'example.com/Widget/health.lua' }] },
    },
  );
});

test('by default no folder: argocd-cm has no customizationsDir key and nothing is mounted', () => {
  const objects = helmTemplate();
  const data = find(objects, 'ConfigMap', 'argocd-cm')['data'] as Record<string, string>;
  assert.equal(data['impersync.health.customizationsDir'], undefined);
  const pod = (find(objects, 'Deployment', 'impersync') as unknown as Pod).spec.template.spec;
  assert.equal(
    pod.volumes.find((v) => v['name'] === 'health-customizations'),
    undefined,
  );
});
