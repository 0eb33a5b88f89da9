// Each destination's API server shared between tenants by the time their requests take
// (src/kube/tenant-share.ts), against the real kube-apiserver: once a tenant's requests are known
// to be slow (server-side dry-runs of 40,000-key ConfigMaps), its requests reach the API server one
// at a time while another tenant is about, as the audit log's timestamps show; the same requests
// from a client without the share overlap there, which is what the share is for.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { IN_CLUSTER } from '../../src/api/index.ts';
import { DestinationClientFactory } from '../../src/kube/factory.ts';
import type { DestinationClient } from '../../src/kube/types.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  createNamespace,
  createServiceAccount,
  grantImpersonation,
  grantRole,
  startControlPlane,
  userNameOf,
} from '../support/index.ts';

let cp: TestControlPlane;
const factories: DestinationClientFactory[] = [];

const TENANTS = ['share-noisy', 'share-quiet'] as const;

const bigConfigMap = (namespace: string, name: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data: Object.fromEntries(Array.from({ length: 40_000 }, (_, i) => [`key-${i}`, `value-${i}`])),
});

const smallConfigMap = (namespace: string, name: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data: { a: '1' },
});

before(async () => {
  cp = await startControlPlane();
  for (const ns of TENANTS) {
    await createNamespace(cp.admin, ns);
    await createServiceAccount(cp.admin, ns, 'deployer');
    await grantRole(cp.admin, {
      name: 'deployer',
      namespace: ns,
      to: { serviceAccount: 'deployer', namespace: ns },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'patch', 'update'] }],
    });
  }
  await grantImpersonation(cp.admin, {
    name: 'impersync-impersonate',
    serviceAccounts: TENANTS.map((ns) => ({ namespace: ns, name: 'deployer' })),
  });
});

after(async () => {
  for (const f of factories) await f.close();
  await cp?.stop();
});

/** The two tenants' clients, from a factory with the share (`inFlightMs` > 0) or without it. */
async function clients(inFlightMs: number): Promise<Record<(typeof TENANTS)[number], DestinationClient>> {
  const factory = await DestinationClientFactory.fromKubeConfig(
    { kubeconfig: cp.controllerKubeconfigPath },
    inFlightMs > 0 ? { tenantShare: { inFlightMs } } : {},
  );
  factories.push(factory);
  const client = (ns: string) =>
    factory.forIdentity(
      IN_CLUSTER,
      { impersonate: userNameOf({ serviceAccount: 'deployer', namespace: ns }) },
      { application: `argocd/${ns}`, project: ns, revision: 'r1' },
    );
  return { 'share-noisy': client('share-noisy'), 'share-quiet': client('share-quiet') };
}

/** The most requests for ConfigMaps named `prefix`* that the API server had at once, from the audit log. */
async function mostAtOnce(prefix: string): Promise<number> {
  await cp.waitForAudit((r) => r.name === `${prefix}3` && r.verb === 'patch');
  const spans: Array<[number, number]> = [];
  const named = new RegExp(`"name":"${prefix}[0-3]"`);
  for (const line of (await readFile(cp.auditLogPath, 'utf8')).split('\n')) {
    if (!line.includes('"ResponseComplete"') || !named.test(line)) continue;
    const e = JSON.parse(line) as { requestReceivedTimestamp: string; stageTimestamp: string };
    spans.push([Date.parse(e.requestReceivedTimestamp), Date.parse(e.stageTimestamp)]);
  }
  assert.equal(spans.length, 4, `four requests for ${prefix}* in the audit log`);
  let most = 0;
  for (const [start] of spans) most = Math.max(most, spans.filter(([s, e]) => s <= start && start < e).length);
  return most;
}

/** The quiet tenant and one slow request of the noisy one first, then four slow noisy dry-runs at once beside quiet applies. */
async function noisyBeside(c: Record<(typeof TENANTS)[number], DestinationClient>, prefix: string): Promise<void> {
  const learn = await Promise.all([
    c['share-quiet'].apply(smallConfigMap('share-quiet', `${prefix}quiet`), { dryRun: true }),
    c['share-noisy'].apply(bigConfigMap('share-noisy', `${prefix}learn`), { dryRun: true }),
  ]);
  for (const r of learn) assert.ok(r.ok, r.ok ? '' : r.error.message);
  let quietDone = false;
  const quiet = (async () => {
    for (let i = 0; !quietDone; i++) {
      const r = await c['share-quiet'].apply(smallConfigMap('share-quiet', `${prefix}q${i % 5}`));
      assert.ok(r.ok, r.ok ? '' : r.error.message);
    }
  })();
  const noisy = await Promise.all(
    [0, 1, 2, 3].map((i) => c['share-noisy'].apply(bigConfigMap('share-noisy', `${prefix}${i}`), { dryRun: true })),
  );
  quietDone = true;
  await quiet;
  for (const r of noisy) assert.ok(r.ok, r.ok ? '' : r.error.message);
}

test("without the share, a tenant's four slow dry-runs overlap at the API server", async () => {
  await noisyBeside(await clients(0), 'free-');
  assert.ok((await mostAtOnce('free-')) >= 2, 'the requests went together');
});

test('with the share, once its requests are known to be slow, they reach the API server one at a time while another tenant is about', async () => {
  // 50 ms: a dry-run of 40,000 keys takes longer than that on any machine, a small apply less.
  await noisyBeside(await clients(50), 'shared-');
  assert.equal(await mostAtOnce('shared-'), 1);
});
