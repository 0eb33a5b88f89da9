// `impersync explain --check-rights`: before anything is synced, ask the API server, as the
// Application's identity, about every right a sync of its rendered objects needs (the controller's
// RightsCheck, controller/rights.ts), and name those it lacks in the words the controller's
// condition would use. Live only: the source is rendered by a child renderer process, the objects
// are read and the reviews made through the destination client of that identity, naming the
// Application and the commit as the controller does.
import { toolSettingsOf } from '../api/tool-settings.ts';
import type { ConfigMap, KubeObject } from '../api/index.ts';
import { madeFor } from '../controller/admission.ts';
import { RightsCheck, missingRightsMessage } from '../controller/rights.ts';
import type { MissingRights } from '../controller/rights.ts';
import { liveFrom, syncNeeds } from '../controller/rights-needs.ts';
import type { LiveLookup } from '../controller/rights-needs.ts';
import { DestinationClientFactory } from '../kube/factory.ts';
import type { DestinationClient } from '../kube/types.ts';
import { ChildRenderer } from '../renderer/child.ts';
import { readApplicationLimits } from '../controller/app-limits.ts';
import { renderApplication } from '../controller/render.ts';
import { loadLiveRepositories } from './live.ts';
import { parseSyncOptions } from '../sync/index.ts';
import type { Explanation } from './explain-core.ts';

/** The `rights` field of `explain --check-rights -o json`. */
export interface RightsSection {
  /** `ServiceAccount <ns>:<name>` or the controller's own credential. */
  subject: string;
  /** The commit the rendered objects come from. */
  revision: string;
  /** How many distinct rights (verb, resource, namespace) a sync needs. */
  needed: number;
  missing: MissingRights[];
  /** The controller's message naming them all; null when nothing is missing. */
  message: string | null;
  /** Kinds the server does not serve yet (their rights could not be asked). */
  unknownKinds: string[];
}

export interface CheckRightsOptions {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  /** The controller's namespace: its repository Secrets render private repositories. */
  namespace: string;
  /** Its argocd-cm: the render is held to the limits the controller holds this Application's to. */
  settings?: ConfigMap | Error | undefined;
  cacheDir: string;
  allowLocalRepositories: boolean;
  /** Told once per destination when its user may not impersonate the extras (requests go without them). */
  onExtrasRefused?: ((server: string) => void) | undefined;
}

/** Whether each object exists, read as the identity: a refused read leaves it unknown. */
async function liveObjects(client: DestinationClient, objects: readonly KubeObject[], destination: string) {
  const seen = new Map<KubeObject, boolean | undefined>();
  for (const o of objects) {
    const info = await client.resolve(o.apiVersion, o.kind);
    if (!info.ok) continue;
    const namespace = info.value.namespaced ? (o.metadata.namespace ?? destination) : undefined;
    const got = await client.get({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, namespace });
    seen.set(o, got.ok ? got.value !== null : undefined);
  }
  const lookup: LiveLookup = (ref) => {
    for (const [o, exists] of seen)
      if (o.kind === ref.kind && o.metadata.name === ref.name && (o.metadata.namespace ?? undefined) === ref.namespace)
        return exists;
    return undefined;
  };
  return lookup;
}

export async function checkRights(
  explanation: Explanation,
  opts: CheckRightsOptions,
): Promise<{ ok: true; rights: RightsSection } | { ok: false; error: string }> {
  const { admission } = explanation;
  if (!admission.admitted) return { ok: false, error: `not checked: ${admission.condition.message}` };
  const { app } = admission;
  let objects: KubeObject[];
  let revision: string;
  const renderer = new ChildRenderer({ cacheDir: opts.cacheDir, allowLocalRepositories: opts.allowLocalRepositories });
  try {
    const repositories = await loadLiveRepositories({
      kubeconfig: opts.kubeconfig,
      context: opts.context,
      namespace: opts.namespace,
    });
    const rendered = await renderApplication(renderer, app, {
      project: admission.project,
      controllerNamespace: opts.namespace,
      repositories,
      limits: readApplicationLimits(opts.settings).limits,
      tools: toolSettingsOf(opts.settings),
    });
    objects = rendered.objects.map((o) => o.object);
    revision = rendered.revisions.join(', ');
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  } finally {
    await renderer.close();
  }
  const onRefused = opts.onExtrasRefused;
  const factory = await DestinationClientFactory.fromKubeConfig(
    { kubeconfig: opts.kubeconfig, context: opts.context },
    { onExtrasRefused: onRefused ? (server) => onRefused(server) : undefined },
  );
  try {
    const client = factory.forIdentity(admission.cluster, admission.actsAs, madeFor(admission, revision));
    const destination = app.spec.destination?.namespace ?? '';
    const syncOptions = parseSyncOptions(app.spec.syncPolicy?.syncOptions);
    const read = await liveObjects(client, objects, destination);
    // A refused read: what the last comparison recorded, as the controller does.
    const recorded = liveFrom([], destination, app.status?.resources);
    const needs = syncNeeds(objects, {
      live: (ref) => read(ref) ?? recorded(ref),
      // What an automated sync with prune would delete: what the last comparison found to prune.
      prune:
        app.spec.syncPolicy?.automated?.prune === true
          ? (app.status?.resources ?? []).filter((r) => r.requiresPruning === true)
          : [],
      createNamespace: syncOptions.createNamespace ? destination : undefined,
    });
    const result = await new RightsCheck().check(client, needs, { defaultNamespace: destination, fresh: true });
    if (!result.ok) return { ok: false, error: result.error };
    const { report } = result;
    return {
      ok: true,
      rights: {
        subject: report.subject,
        revision,
        needed: report.needed,
        missing: report.missing,
        message: missingRightsMessage(report) ?? null,
        unknownKinds: report.unknownKinds,
      },
    };
  } finally {
    await factory.close();
  }
}

/** The text lines of the rights check. */
export function formatRights(r: RightsSection): string[] {
  const lines = [
    '',
    `Rights a sync of revision ${r.revision} needs, asked live as ${r.subject} (${r.needed} distinct verb, resource and namespace):`,
  ];
  lines.push(r.message ? `MISSING RIGHTS: ${r.message}` : `  all ${r.needed} granted`);
  if (r.unknownKinds.length > 0)
    lines.push(`  not asked (kinds the server does not serve yet): ${r.unknownKinds.join(', ')}`);
  return lines;
}
