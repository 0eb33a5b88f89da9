// Binds the reconciler's ports (ports.ts) to the real modules: the renderer process renders (never
// this process: ARCHITECTURE.md, the credential rule), project/ limits, sync/ compares and syncs.
// Each adapter only translates shapes; the identity's client passes through.
import os from 'node:os';
import type { Logger } from 'pino';
import path from 'node:path';
import type { Application, KubeObject } from '../api/index.ts';
import { ChildRenderer } from '../renderer/child.ts';
import type { Renderer } from '../renderer/client.ts';
import { renderInputFor } from '../renderer/request.ts';
import { appInstanceName, compare, sync } from '../sync/index.ts';
import type { InventoryEntry, ResourceComparison } from '../sync/index.ts';
import { deleteAppResources } from './delete.ts';
import { projectLimits } from './limits.ts';
import type { Ports } from './ports.ts';
import type { ResourceStatus } from './status.ts';

export interface DefaultPortsOptions {
  controllerNamespace: string;
  /**
   * Where sources are rendered: the install's renderer (a RendererClient), or by default a child
   * renderer process (renderer/child.ts) that these ports start and close.
   */
  renderer?: Renderer;
  /** The child renderer's Git clones and checkouts (default: $XDG_CACHE_HOME or ~/.cache, impersync/source). */
  cacheDir?: string;
  /** The child renderer accepts file:// and local repoURLs (the local demo and tests). Default false. */
  allowLocalRepositories?: boolean;
  /** Where the child renderer's log lines go. */
  logger?: Logger;
  /** The child renderer's helm and kustomize folder (default: $IMPERSYNC_TOOLS_DIR, then PATH). */
  toolsDir?: string;
  /** How long one sync wave may wait for health (sync/ default 5 min). */
  waitTimeoutMs?: number;
}

function inventoryOf(app: Application): InventoryEntry[] {
  const resources = (app.status?.['resources'] ?? []) as ResourceStatus[];
  return resources
    .filter((r) => r.kind && r.name)
    .map((r) => ({
      kind: r.kind,
      name: r.name,
      ...(r.group ? { group: r.group } : {}),
      ...(r.namespace ? { namespace: r.namespace } : {}),
      ...(r.version ? { version: r.version } : {}),
    }));
}

/** Argo CD's status.resources entry of one compared object (no diff, no live object: status stays small). */
export function resourceStatus(r: ResourceComparison): ResourceStatus {
  return {
    group: r.group,
    version: r.version,
    kind: r.kind,
    ...(r.namespace ? { namespace: r.namespace } : {}),
    name: r.name,
    status: r.status,
    ...(r.health
      ? { health: { status: r.health.status, ...(r.health.message ? { message: r.health.message } : {}) } }
      : {}),
    ...(r.requiresPruning ? { requiresPruning: true } : {}),
  };
}

export function defaultPorts(opts: DefaultPortsOptions): Ports {
  const cacheDir =
    opts.cacheDir ??
    path.join(process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'), 'impersync', 'source');
  const renderer =
    opts.renderer ??
    new ChildRenderer({
      cacheDir,
      ...(opts.allowLocalRepositories ? { allowLocalRepositories: true } : {}),
      ...(opts.logger ? { logger: opts.logger } : {}),
      ...(opts.toolsDir ? { toolsDir: opts.toolsDir } : {}),
    });
  const ns = opts.controllerNamespace;
  const common = (app: Application) => ({
    appName: appInstanceName(app, ns),
    namespace: app.spec.destination?.namespace ?? '',
  });
  return {
    close: async () => {
      if (!opts.renderer) await renderer.close();
    },
    render: {
      render: async (app, o) => {
        const input = { ...renderInputFor(app, { revision: o.revision }), sourceRepos: o.sourceRepos };
        const r = await renderer.render(input, { noCache: o.hard === true });
        return {
          revision: r.revision,
          sourceType: r.sourceType,
          objects: r.objects.map((p) => p.object as KubeObject),
        };
      },
    },
    limits: projectLimits(),
    compare: {
      compare: async (client, app, objects, health) => {
        const c = await compare(client, objects, inventoryOf(app), { ...common(app), ...(health ? { health } : {}) });
        return {
          syncStatus: c.syncStatus,
          resources: c.resources.map(resourceStatus),
          health: { status: c.health.status, ...(c.health.message ? { message: c.health.message } : {}) },
          errors: c.errors,
          ...(c.healthError ? { healthError: c.healthError } : {}),
        };
      },
    },
    sync: {
      sync: async (client, app, objects, op, signal, beforeWave, health) => {
        const r = await sync(client, objects, inventoryOf(app), {
          ...common(app),
          ...(op.revision !== undefined ? { revision: op.revision } : {}),
          prune: op.prune === true,
          dryRun: op.dryRun === true,
          syncOptions: [...(app.spec.syncPolicy?.syncOptions ?? []), ...(op.syncOptions ?? [])],
          ...(op.resources ? { resources: op.resources } : {}),
          ...(opts.waitTimeoutMs !== undefined ? { waitTimeoutMs: opts.waitTimeoutMs } : {}),
          ...(signal ? { signal } : {}),
          ...(beforeWave ? { beforeWave } : {}),
          ...(health ? { health } : {}),
        });
        return {
          phase: r.phase,
          message: r.message,
          resources: r.resources as unknown as Array<Record<string, unknown>>,
        };
      },
      deleteResources: (client, app) => deleteAppResources(client, app, ns),
    },
  };
}
