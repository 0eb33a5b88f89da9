// The renderer's egress NetworkPolicy, on with one value in the Helm chart
// (networkPolicy.rendererEgress.enabled) and one component in the kustomize install
// (deploy/install/components/renderer-egress), judged by what it admits (egress.ts): DNS, Git and
// Helm hosts on the Internet and the internal hosts listed in `allow` on their ports; never the
// cloud metadata service, the API server, a Pod or a Service, nor another port. Rendered with the
// real helm and kustomize; nothing is sent anywhere.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../support/index.ts';
import { egressAdmits } from './egress.ts';
import { PRIVATE_RANGES, deploymentOf } from './pod-checks.ts';
import { find, helmTemplate, kustomizeOverlay } from './render.ts';

/** Where a render must be able to go: GitHub's https, ssh and git://, a public IPv6 registry. */
const PUBLIC = [
  ['140.82.112.3', 443],
  ['140.82.112.3', 22],
  ['140.82.112.3', 9418],
  ['2606:50c0:8000::153', 443],
] as const;
/** Where it must never go, whatever a chart or kustomization names. */
const FORBIDDEN = [
  ['169.254.169.254', 80], // cloud metadata (AWS, GCP, Azure)
  ['169.254.169.254', 443],
  ['fd00:ec2::254', 80], // AWS's IPv6 metadata address
  ['10.96.0.1', 443], // the API server's Service (kubernetes.default)
  ['172.18.0.2', 6443], // an API server on the node network
  ['10.244.3.7', 8080], // a Pod
  ['10.100.20.30', 80], // a Service
  ['192.168.1.10', 443],
  ['100.64.0.1', 443],
  ['140.82.112.3', 6443], // a public host, on a port that is not Git's or Helm's
] as const;

function checkReach(
  policy: KubeObject,
  also: { reach?: Array<readonly [string, number]>; not?: Array<readonly [string, number]> },
) {
  for (const [ip, port] of [...PUBLIC, ...(also.reach ?? [])])
    assert.ok(egressAdmits(policy, ip, port), `the renderer reaches ${ip}:${port}`);
  for (const [ip, port] of [...FORBIDDEN, ...(also.not ?? [])])
    assert.ok(!egressAdmits(policy, ip, port), `the renderer never reaches ${ip}:${port}`);
  const dns = (policy['spec'] as { egress: Array<{ to: unknown[]; ports: unknown[] }> }).egress[0];
  assert.deepEqual(dns?.ports, [
    { protocol: 'UDP', port: 53 },
    { protocol: 'TCP', port: 53 },
  ]);
}

const selects = (policy: KubeObject, labels: Record<string, string>) =>
  Object.entries(
    (policy['spec'] as { podSelector: { matchLabels: Record<string, string> } }).podSelector.matchLabels,
  ).every(([k, v]) => labels[k] === v);

test('chart: networkPolicy.rendererEgress.enabled alone admits DNS and the Internet on Git and Helm ports, nothing internal', () => {
  const off = helmTemplate();
  assert.ok(!off.some((o) => o.kind === 'NetworkPolicy' && o.metadata.name.endsWith('-egress')), 'off by default');
  const objects = helmTemplate({ set: ['networkPolicy.rendererEgress.enabled=true'] });
  const policy = find(objects, 'NetworkPolicy', 'impersync-renderer-egress');
  assert.ok(selects(policy, deploymentOf(objects, 'renderer').labels), 'it selects the renderer');
  assert.ok(!selects(policy, deploymentOf(objects, 'controller').labels), 'and not the controller');
  checkReach(policy, {});
});

test('chart: allow opens an internal proxy or Git server on its own ports; exceptCidrs closes a public API server', () => {
  const objects = helmTemplate({
    set: ['networkPolicy.rendererEgress.enabled=true'],
    setJson: [
      'networkPolicy.rendererEgress.allow=[{"cidr":"10.20.0.15/32","ports":[3128]},{"cidr":"10.30.0.0/24","ports":[443,22]}]',
      `networkPolicy.rendererEgress.exceptCidrs=${JSON.stringify([...PRIVATE_RANGES.v4, '203.0.113.10/32', ...PRIVATE_RANGES.v6])}`,
    ],
  });
  checkReach(find(objects, 'NetworkPolicy', 'impersync-renderer-egress'), {
    reach: [
      ['10.20.0.15', 3128],
      ['10.30.0.9', 22],
    ],
    not: [
      ['10.20.0.15', 443], // the proxy, on another port
      ['10.20.0.16', 3128], // its neighbour
      ['203.0.113.10', 443], // a managed cluster's public API server endpoint
    ],
  });
});

test('kustomize: the renderer-egress component admits what the chart does, and only for the renderer', () => {
  const objects = kustomizeOverlay(['deploy/install'], ['deploy/install/components/renderer-egress']);
  const policy = find(objects, 'NetworkPolicy', 'impersync-renderer-egress');
  assert.ok(selects(policy, deploymentOf(objects, 'renderer').labels));
  assert.ok(!selects(policy, deploymentOf(objects, 'controller').labels));
  checkReach(policy, {});
});
