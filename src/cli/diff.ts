// `impersync diff`: what a sync of one Application would change, compared live and as the identity
// that would make the change (spec §5). The first line names that identity. Exit 0 in sync, 1 out
// of sync, 2 on error (as `kubectl diff`).
import { toolSettingsOf } from '../api/tool-settings.ts';
import type { KubeObject } from '../api/index.ts';
import { DestinationClientFactory } from '../kube/factory.ts';
import { describeIdentity } from '../kube/types.ts';
import { readApplicationLimits } from '../controller/app-limits.ts';
import { HealthAssessors } from '../controller/health.ts';
import { madeFor } from '../controller/admission.ts';
import { Semantics } from '../controller/semantics.ts';
import { objectLimitViolations } from '../controller/limits.ts';
import { ChildRenderer, defaultSourceCacheDir } from '../renderer/child.ts';
import { renderApplication } from '../controller/render.ts';
import type { ComparisonResult } from '../sync/index.ts';
import { compare, inventoryOf, refusedComparison, trackingTarget } from '../sync/index.ts';
import { startCommand, stringFlag } from './args.ts';
import { explain } from './explain-core.ts';
import { extrasRefusedWarning } from './extras.ts';
import { processIO, type CommandIO } from './io.ts';
import { loadLiveInventory, loadLiveRepositories } from './live.ts';
import { DEFAULT_CONTROL_NAMESPACE } from './load.ts';

export const DIFF_USAGE = `usage: impersync diff NAME|NAMESPACE/NAME [-n NAMESPACE] [--kubeconfig FILE] [--context NAME] [-o json|text]

Compares an Application's desired state (rendered from Git) with the live objects, by server-side
dry-run, as the identity a sync would use: the ServiceAccount its AppProject assigns, or the
controller's own credential when impersonation is off or falls back. The first line names it. An
Application the controller refuses is refused here with the controller's message, and not compared.

  -n, --namespace NS    the control namespace: argocd-cm, AppProjects, cluster Secrets, and the
                        Application unless NAME says NAMESPACE/NAME (default argocd)
      --kubeconfig FILE, --context NAME   the controller's credential and cluster
  -o, --output FORMAT   text (default) or json
      --cache-dir DIR   where Git clones are kept (default ~/.cache/impersync/source)
      --allow-local-repositories   render file:// and local repoURLs too (never for tenants' Applications)

The source is rendered by a child renderer process that has none of this command's credentials or
environment (ARCHITECTURE.md, the credential rule).

Exit status: 0 when in sync, 1 when not, 2 on error.
`;

const FLAGS = {
  namespace: { type: 'string', short: 'n' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  output: { type: 'string', short: 'o' },
  'cache-dir': { type: 'string' },
  'allow-local-repositories': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The JSON document of `diff -o json`. */
export interface DiffReport {
  application: string;
  identity: string;
  decision: string;
  revision: string;
  syncStatus: ComparisonResult['syncStatus'];
  health: ComparisonResult['health'];
  resources: Array<Omit<ComparisonResult['resources'][number], 'target' | 'live' | 'normalizedLive' | 'predictedLive'>>;
  errors: string[];
  warnings: string[];
}

function header(r: { group: string; kind: string; namespace: string; name: string }): string {
  return `===== ${r.group}/${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name} ======`;
}

function formatText(report: DiffReport, identityLine: string): string {
  const out = [identityLine];
  if (report.revision) out.push(`revision: ${report.revision}`);
  for (const r of report.resources) {
    if (r.status === 'Synced') continue;
    out.push(header(r) + (r.requiresPruning ? ' (requires pruning)' : ''));
    if (r.message) out.push(`${r.status === 'Unknown' ? 'error' : 'note'}: ${r.message}`);
    if (r.diff) out.push(r.diff.replace(/\n$/, ''));
  }
  const count = (s: string) => report.resources.filter((r) => r.status === s).length;
  out.push(
    `${report.resources.length} resources: ${count('Synced')} Synced, ${count('OutOfSync')} OutOfSync${count('Unknown') ? `, ${count('Unknown')} Unknown` : ''}; sync status ${report.syncStatus}`,
  );
  for (const e of report.errors) out.push(`error: ${e}`);
  return out.join('\n') + '\n';
}

function exitCode(status: ComparisonResult['syncStatus'], errors: readonly string[]): number {
  if (errors.length || status === 'Unknown') return 2;
  return status === 'Synced' ? 0 : 1;
}

interface DiffOptions {
  name: string;
  namespace: string;
  kubeconfig?: string | undefined;
  context?: string | undefined;
  cacheDir: string;
  allowLocalRepositories: boolean;
}

async function compareLive(
  opts: DiffOptions,
  factory: DestinationClientFactory,
): Promise<{ report: DiffReport; identityLine: string } | { error: string }> {
  const appNamespace = opts.name.includes('/') ? opts.name.slice(0, opts.name.indexOf('/')) : opts.namespace;
  const loaded = await loadLiveInventory({
    kubeconfig: opts.kubeconfig,
    context: opts.context,
    namespace: opts.namespace,
    applicationNamespace: appNamespace,
  });
  if (!loaded.ok) return { error: loaded.error };
  const inventory = loaded.value;
  const explained = explain(inventory, {
    app: opts.name.includes('/') ? opts.name : `${appNamespace}/${opts.name}`,
    namespace: opts.namespace,
    source: `namespace ${appNamespace}`,
  });
  if (!explained.ok) return { error: explained.error };
  // explain() asked the controller's admission gate: what it refuses never gets here.
  const { report: why, identity, admission } = explained.value;
  const { app, cluster } = admission;
  const warnings = [...why.warnings];
  const base = { application: why.application, decision: identity.decision, revision: '', warnings };

  if (!admission.admitted) {
    const refused = refusedComparison(admission.condition.message, []);
    return {
      identityLine: `identity: none (${identity.decision}: ${admission.condition.message})`,
      report: {
        ...base,
        identity: 'none',
        syncStatus: refused.syncStatus,
        health: refused.health,
        resources: [],
        errors: refused.errors,
      },
    };
  }
  const who = describeIdentity(admission.actsAs);
  const how =
    identity.decision === 'impersonate'
      ? 'impersonated'
      : identity.decision === 'fallback'
        ? `fallback: ${identity.message}`
        : 'impersonation disabled';
  const identityLine = `identity: ${who} (${how})`;
  const fail = (message: string) => ({
    identityLine,
    report: {
      ...base,
      identity: who,
      syncStatus: 'Unknown' as const,
      health: { status: 'Unknown' as const },
      resources: [],
      errors: [message],
    },
  });

  let objects: KubeObject[];
  let revision = '';
  try {
    const renderer = new ChildRenderer({
      cacheDir: opts.cacheDir,
      allowLocalRepositories: opts.allowLocalRepositories,
    });
    const repositories = await loadLiveRepositories({
      kubeconfig: opts.kubeconfig,
      context: opts.context,
      namespace: opts.namespace,
    });
    // Held to the limits the controller holds this Application's renders to (argocd-cm).
    const limits = readApplicationLimits(inventory.configMap?.value).limits;
    const rendered = await renderApplication(renderer, app, {
      project: admission.project,
      controllerNamespace: opts.namespace,
      repositories,
      limits,
      tools: toolSettingsOf(inventory.configMap?.value),
    }).finally(() => renderer.close());
    objects = rendered.objects.map((o) => o.object);
    revision = rendered.revisions.join(', ');
  } catch (err) {
    return fail((err as Error).message);
  }
  // As the controller compares: naming the Application and the commit in every request.
  const client = factory.forIdentity(cluster, admission.actsAs, madeFor(admission, revision));
  const violations = await objectLimitViolations(client, admission, objects);
  // Health as the controller assesses it: argocd-cm's customizations, Lua checks in a runner of our own.
  const assessors = new HealthAssessors();
  // ignoreDifferences, tracking and the resource filter as the controller applies them.
  const semantics = new Semantics();
  const comparison = await compare(client, objects, inventoryOf(app), {
    ...trackingTarget(app, opts.namespace),
    ...semantics.for(app, inventory.configMap?.value, admission.cluster),
    health: assessors.for(inventory.configMap?.value),
    diffs: true,
  }).finally(() => Promise.all([assessors.close(), semantics.close()]));
  return {
    identityLine,
    report: {
      ...base,
      identity: who,
      revision,
      syncStatus: comparison.syncStatus,
      health: comparison.health,
      resources: comparison.resources.map(
        ({ target: _t, live: _l, normalizedLive: _n, predictedLive: _p, ...rest }) => rest,
      ),
      errors: [...violations, ...comparison.errors, ...(comparison.healthError ? [comparison.healthError] : [])],
      warnings: [...warnings, ...comparison.warnings, ...comparison.excluded, ...comparison.shared],
    },
  };
}

export async function run(argv: string[], io: CommandIO, factory?: DestinationClientFactory): Promise<number> {
  const flags = startCommand('diff', argv, FLAGS, DIFF_USAGE, io, true);
  if (flags.done) return flags.code;
  if (flags.positionals.length !== 1) {
    io.stderr(`impersync diff: give exactly one Application name\n${DIFF_USAGE}`);
    return 2;
  }
  const opts: DiffOptions = {
    name: flags.positionals[0] as string,
    namespace: stringFlag(flags.values, 'namespace', DEFAULT_CONTROL_NAMESPACE),
    kubeconfig: typeof flags.values.kubeconfig === 'string' ? flags.values.kubeconfig : undefined,
    context: typeof flags.values.context === 'string' ? flags.values.context : undefined,
    cacheDir: stringFlag(flags.values, 'cache-dir', defaultSourceCacheDir()),
    allowLocalRepositories: flags.values['allow-local-repositories'] === true,
  };
  let result: Awaited<ReturnType<typeof compareLive>>;
  // The factory holds keep-alive connections: one made here is closed here, or the process lingers.
  let own: DestinationClientFactory | undefined;
  try {
    own = factory
      ? undefined
      : await DestinationClientFactory.fromKubeConfig(
          { kubeconfig: opts.kubeconfig, context: opts.context },
          { onExtrasRefused: (server) => io.stderr(extrasRefusedWarning(server)) },
        );
    result = await compareLive(opts, (factory ?? own) as DestinationClientFactory);
  } catch (err) {
    result = { error: (err as Error).message };
  } finally {
    await own?.close();
  }
  if ('error' in result) {
    io.stderr(`impersync diff: ${result.error.replace(/\s*\n\s*/g, ' ')}\n`);
    return 2;
  }
  const { report, identityLine } = result;
  for (const w of report.warnings) io.stderr(`warning: ${w}\n`);
  io.stdout(flags.format === 'json' ? JSON.stringify(report, null, 2) + '\n' : formatText(report, identityLine));
  return exitCode(report.syncStatus, report.errors);
}

export function main(argv: string[]): Promise<number> {
  return run(argv, processIO);
}
