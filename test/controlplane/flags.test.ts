import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apiserverArgs } from '../../src/controlplane/flags.ts';
import type { Layout } from '../../src/controlplane/layout.ts';

const layout = new Proxy({}, { get: (_, k) => `/cp/${String(k)}` }) as Layout;
const ports = { etcdClient: 1, etcdPeer: 2, apiserver: 3, controllerManager: 4 };

test('kube-apiserver serves no profiles unless a benchmark asks for them', () => {
  assert.ok(apiserverArgs(layout, ports).includes('--profiling=false'));
  assert.ok(apiserverArgs(layout, ports, { profiling: false }).includes('--profiling=false'));
  const asked = apiserverArgs(layout, ports, { profiling: true });
  assert.ok(asked.includes('--profiling=true'));
  assert.ok(!asked.includes('--profiling=false'));
});
