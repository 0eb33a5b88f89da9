// Benchmark: how fast the controller reacts. Over N synced, self-healing Applications:
//   1. a live edit of a managed ConfigMap until it is corrected (self-heal), with no trigger: the
//      controller's watch of the managed objects (src/kube/live-cache.ts) has to see it;
//   2. the same edit followed by the refresh annotation (argocd.argoproj.io/refresh: normal), as a
//      webhook or a user would send: whichever comes first, the annotation or the watch;
//   3. a new commit until the ConfigMap holds the new value, with the refresh annotation (a Git webhook);
//   4. a new commit with the periodic refresh only (polling).
// Each trial uses the next Application, so self-heal's 5 s pause after a sync never applies.
//   node bench/react/main.ts [--apps 20] [--trials 20] [--reconciliation 10]
import { Agent, request } from 'undici';
import { NS } from '../common/impersync.ts';
import { fixed, intFlags, percentile, sleep, table } from '../common/report.ts';
import { syncedEnvironment } from '../common/synced.ts';
import { manifestFiles } from '../common/tenants.ts';

const USAGE =
  'usage: node bench/react/main.ts [--apps N (default 20)] [--trials T per scenario (default 20)] [--reconciliation SECONDS for timeout.reconciliation (default 10)]';
const flags = intFlags(USAGE, { apps: 20, trials: 20, reconciliation: 10 });

console.log(
  `react: ${flags.apps} Applications (selfHeal), ${flags.trials} trials per scenario, timeout.reconciliation ${flags.reconciliation}s; node ${process.version}`,
);
const env = await syncedEnvironment(flags.apps, {
  selfHeal: true,
  settings: { 'timeout.reconciliation': `${flags.reconciliation}s` },
});
const agent = new Agent({ connect: { ca: env.cp.caPem }, connections: 4 });
try {
  const token = await env.cp.tokenFor('admin');
  const call = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
    const res = await request(`${env.cp.server}${path}`, {
      method,
      dispatcher: agent,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(body ? { 'content-type': 'application/merge-patch+json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${path}: HTTP ${res.statusCode} ${text.slice(0, 300)}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const cmPath = (app: string) => `/api/v1/namespaces/${app}/configmaps/settings`;
  const version = async (app: string) =>
    ((await call('GET', cmPath(app)))['data'] as Record<string, string> | undefined)?.['version'];
  const refresh = (app: string) =>
    call('PATCH', `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/${app}`, {
      metadata: { annotations: { 'argocd.argoproj.io/refresh': 'normal' } },
    });
  /** Polls every 50 ms until the ConfigMap's version is `want`; the milliseconds since `since`. */
  const until = async (app: string, want: string, since: number): Promise<number> => {
    const deadline = since + (3 * flags.reconciliation + 60) * 1000;
    while ((await version(app)) !== want) {
      if (Date.now() > deadline) throw new Error(`${app}: ConfigMap 'settings' version never became '${want}'`);
      await sleep(50);
    }
    return Date.now() - since;
  };

  const versions = new Map(env.apps.map((a) => [a, 'v1']));
  let commits = 0;
  const scenarios: Array<{ label: string; trial: (app: string) => Promise<number> }> = [
    {
      label: 'live edit → corrected (no trigger: the watch of managed objects)',
      trial: async (app) => {
        const t = Date.now();
        await call('PATCH', cmPath(app), { data: { version: 'tampered' } });
        return until(app, versions.get(app) as string, t);
      },
    },
    {
      label: 'live edit → corrected (refresh annotation)',
      trial: async (app) => {
        const t = Date.now();
        await call('PATCH', cmPath(app), { data: { version: 'tampered' } });
        await refresh(app);
        return until(app, versions.get(app) as string, t);
      },
    },
    ...(['refresh annotation, like a webhook', 'periodic refresh'] as const).map((how) => ({
      label: `new commit → applied (${how})`,
      trial: async (app: string) => {
        const next = `v${++commits + 1}`;
        versions.set(app, next);
        const files = Object.fromEntries(
          Object.entries(manifestFiles(app, next)).map(([f, text]) => [`${app}/${f}`, text]),
        );
        const t = Date.now();
        await env.repo.commit(files, `${app} ${next}`);
        if (how !== 'periodic refresh') await refresh(app);
        return until(app, next, t);
      },
    })),
  ];

  const rows: string[][] = [];
  let n = 0;
  for (const s of scenarios) {
    const samples: number[] = [];
    for (let i = 0; i < flags.trials; i++) {
      const app = env.apps[n++ % env.apps.length] as string;
      samples.push(await s.trial(app));
      await sleep(300);
    }
    console.log(`${s.label}: ${samples.map((ms) => fixed(ms / 1000, 2)).join(' ')}`);
    rows.push([
      s.label,
      fixed(percentile(samples, 50) / 1000, 2),
      fixed(percentile(samples, 95) / 1000, 2),
      fixed(Math.min(...samples) / 1000, 2),
      fixed(Math.max(...samples) / 1000, 2),
    ]);
  }
  table(
    `react: seconds from the change to the corrected/updated ConfigMap, ${flags.trials} trials each, timeout.reconciliation ${flags.reconciliation}s, ${flags.apps} Applications`,
    ['scenario', 'p50 s', 'p95 s', 'min s', 'max s'],
    rows,
  );
} finally {
  await agent.close();
  await env.stop();
}
