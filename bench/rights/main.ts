// Benchmark: what naming every missing right costs (docs/impersonation.md §12). N Applications
// whose ServiceAccounts hold every right they need, side by side with N whose ServiceAccounts may
// not get or patch Services, on one control plane and one controller: requests made as each
// ServiceAccount per Application, and the SelfSubjectAccessReviews among them, from creation until
// every granted Application is Synced and every refused one names its missing rights, then over
// R normal refreshes of every Application (answers are remembered a minute, so they ask nothing
// new). Not a test: it asserts nothing.
//   node bench/rights/main.ts [--apps 20] [--refreshes 3] [--timeout 600]
import type { AuditRecord } from '../../test/support/index.ts';
import { listRaw, requestOk, startControlPlane } from '../../test/support/index.ts';
import { mapLimit } from '../../src/sync/util.ts';
import { REFRESH_ANNOTATION } from '../../src/controller/triggers.ts';
import { breakdown, byUserWithin, readAllAudit, type Window } from '../common/audit.ts';
import { NS, createApplications, createRepo, isDone, prepareControlNamespace } from '../common/impersync.ts';
import { startControllerProcess } from '../common/process.ts';
import { fixed, intFlags, seconds, sleep, table } from '../common/report.ts';
import { TENANT_RULES, appName, createTenant } from '../common/tenants.ts';

const USAGE =
  'usage: node bench/rights/main.ts [--apps N per group (default 20)] [--refreshes R (default 3)] [--timeout SECONDS (default 600)]';
const flags = intFlags(USAGE, { apps: 20, refreshes: 3, timeout: 600 });
const N = flags.apps;
const granted = Array.from({ length: N }, (_, i) => appName('app-ok-', i));
const refused = Array.from({ length: N }, (_, i) => appName('app-no-', i));
// As the five kinds of TENANT_RULES, but Services only listed, watched and created: a comparison's
// dry-run of the Service is refused, and the message names get and patch of services.
const REFUSED_RULES = [
  { apiGroups: [''], resources: ['configmaps', 'secrets', 'serviceaccounts'], verbs: TENANT_RULES[0]!.verbs },
  { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch', 'create'] },
  TENANT_RULES[1]!,
];
const missingMessage = (ns: string) => `ServiceAccount ${ns}:deployer may not: get, patch services in ${ns}`;

type Status = {
  conditions?: Array<{ type?: string; message?: string }>;
  sync?: { status?: string };
  operationState?: { phase?: string };
};
type App = { metadata: { name: string; annotations?: Record<string, string> }; status?: Status };

async function apps(): Promise<App[]> {
  return (await listRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    namespace: NS,
  })) as unknown as App[];
}

async function waitUntil(what: string, done: (all: App[]) => boolean): Promise<number> {
  const deadline = Date.now() + flags.timeout * 1000;
  for (;;) {
    if (done(await apps())) return Date.now();
    if (Date.now() > deadline) throw new Error(`not ${what} after ${flags.timeout} s`);
    await sleep(500);
  }
}

const refusedNamed = (a: App) =>
  (a.status?.conditions ?? []).some(
    (c) => c.type === 'ComparisonError' && c.message === missingMessage(a.metadata.name),
  );

/** Per group: requests made as its ServiceAccounts, and the reviews among them, per Application. */
function perApp(records: AuditRecord[], prefix: string): { asSA: number; reviews: number } {
  const mine = records.filter((r) => r.impersonatedUser?.startsWith(`system:serviceaccount:${prefix}`));
  return {
    asSA: mine.length / N,
    reviews: mine.filter((r) => r.resource === 'selfsubjectaccessreviews').length / N,
  };
}

console.log(`rights: ${N} granted and ${N} refused Applications × 5 resources; ${flags.refreshes} refreshes after`);
const cp = await startControlPlane();
try {
  await prepareControlNamespace(cp);
  await mapLimit(granted, 8, (ns) => createTenant(cp, ns));
  await mapLimit(refused, 8, (ns) => createTenant(cp, ns, REFUSED_RULES));
  const repo = await createRepo([...granted, ...refused]);
  const ctl = await startControllerProcess(cp.controllerKubeconfigPath);
  const first: Window = { from: 0, to: 0 };
  const later: Window = { from: 0, to: 0 };
  try {
    first.from = Date.now();
    await createApplications(cp, [...granted, ...refused], repo.url);
    const ok = new Set(granted);
    const no = new Set(refused);
    first.to = await waitUntil('every granted one Synced and every refused one naming its rights', (all) => {
      const g = all.filter((a) => ok.has(a.metadata.name) && isDone(a.status)).length;
      const r = all.filter((a) => no.has(a.metadata.name) && refusedNamed(a)).length;
      return g === N && r === N;
    });
    console.log(`first comparisons and syncs: ${seconds(first.to - first.from)} s`);
    later.from = Date.now();
    for (let i = 0; i < flags.refreshes; i++) {
      await mapLimit([...granted, ...refused], 16, (name) =>
        requestOk(cp.admin, {
          method: 'PATCH',
          path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/${name}`,
          body: { metadata: { annotations: { [REFRESH_ANNOTATION]: 'normal' } } },
          contentType: 'application/merge-patch+json',
        }),
      );
      await waitUntil(`refresh ${i + 1} done`, (all) =>
        all.every((a) => a.metadata.annotations?.[REFRESH_ANNOTATION] === undefined),
      );
    }
    later.to = Date.now();
    console.log(`${flags.refreshes} refreshes of every Application: ${seconds(later.to - later.from)} s`);
  } finally {
    await ctl.stop();
    await repo.remove();
  }
  await sleep(1500); // the audit log is written a moment after the answer
  const records = await readAllAudit(cp);
  const a = byUserWithin(records, cp.controllerUserName, first);
  const b = byUserWithin(records, cp.controllerUserName, later);
  const [ga, ra, gb, rb] = [perApp(a, 'app-ok-'), perApp(a, 'app-no-'), perApp(b, 'app-ok-'), perApp(b, 'app-no-')];
  const per = flags.refreshes;
  table(
    `rights: requests made as each Application's ServiceAccount, per Application (${N} per group)`,
    ['', 'to Synced / named: as SA', 'of them reviews', `per refresh: as SA`, 'of them reviews'],
    [
      [
        'all rights granted',
        fixed(ga.asSA, 1),
        fixed(ga.reviews, 1),
        fixed(gb.asSA / per, 2),
        fixed(gb.reviews / per, 2),
      ],
      [
        'get, patch services missing',
        fixed(ra.asSA, 1),
        fixed(ra.reviews, 1),
        fixed(rb.asSA / per, 2),
        fixed(rb.reviews / per, 2),
      ],
    ],
  );
  table(
    'ratios (requests as the ServiceAccount, refused / granted)',
    ['', 'ratio'],
    [
      ['to Synced / named', `${fixed(ra.asSA / ga.asSA, 2)}×`],
      ['per refresh', gb.asSA > 0 ? `${fixed(rb.asSA / gb.asSA, 2)}×` : `${fixed(rb.asSA / per, 2)} against 0`],
    ],
  );
  const asRefused = (records: AuditRecord[]) =>
    new Map(breakdown(records.filter((r) => r.impersonatedUser?.startsWith('system:serviceaccount:app-no-'))));
  const [toNamed, refreshed] = [asRefused(a), asRefused(b)];
  table(
    "where the refused Applications' requests went (as their ServiceAccounts, per Application)",
    ['request', 'to named', 'per refresh'],
    [...new Set([...toNamed.keys(), ...refreshed.keys()])].map((what) => [
      what,
      fixed((toNamed.get(what) ?? 0) / N, 2),
      fixed((refreshed.get(what) ?? 0) / N / per, 2),
    ]),
  );
} finally {
  await cp.stop();
}
