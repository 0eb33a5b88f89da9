// Shared set-up of the controller end-to-end tests: a control plane, the controller's RBAC as
// deploy/install/base grants it (its namespace, plus impersonate and get on ServiceAccounts), a Git
// repository served from disk, and the controller running in-process with the real modules.
import type { RedisFlags } from '../../src/argocd-cache/options.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { startController } from '../../src/controller/controller.ts';
import type { RunningController } from '../../src/controller/controller.ts';
import { MemoryEvents } from '../../src/controller/events.ts';
import type { EventSink } from '../../src/controller/events.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import {
  applyRaw,
  createNamespace,
  getRaw,
  grantInstalledControllerRights,
  grantRole,
  requestOk,
  startControlPlane,
} from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import { TestRepo } from '../support/git.ts';
import { toolsDir } from '../source/tools.ts';

export const NS = 'argocd';
export const IN_CLUSTER = 'https://kubernetes.default.svc';

/** The controller's installed rights in `namespace` (test/support/rbac.ts `grantInstalledControllerRights`). */
export function grantControllerRights(
  cp: TestControlPlane,
  namespace = NS,
  opts: { getServiceAccounts?: boolean } = {},
): Promise<void> {
  return grantInstalledControllerRights(cp.admin, namespace, opts);
}

/** The Lease rules of the strict Role (deploy/install/base/role.yaml), for a controller that elects a leader. */
export function grantControllerLease(cp: TestControlPlane): Promise<void> {
  return grantRole(cp.admin, {
    name: 'impersync-controller-lease',
    namespace: NS,
    to: 'controller',
    rules: [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['impersync-controller'],
        verbs: ['get', 'update'],
      },
    ],
  });
}

/** A ServiceAccount with full rights in its namespace (a tenant deployer). */
export async function deployer(cp: TestControlPlane, namespace: string, name: string): Promise<void> {
  await createNamespace(cp.admin, namespace);
  await applyRaw(cp.admin, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  await grantRole(cp.admin, {
    name: `${name}-all`,
    namespace,
    to: { serviceAccount: name, namespace },
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
}

export async function setSettings(cp: TestControlPlane, data: Record<string, string>): Promise<void> {
  await applyRaw(
    cp.admin,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-cm', namespace: NS }, data },
    { force: true },
  );
}

/** Every destination synced as the `deployer` ServiceAccount of its namespace. */
export const EVERY_DESTINATION_AS_DEPLOYER = {
  destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }],
};

/**
 * A control plane the controller may run on, argocd-cm set to `settings`, one AppProject named
 * `project` (every destination as its namespace's deployer, unless `projectSpec` says otherwise),
 * and a `deployer` in each of `namespaces`, with `nodes` kwok nodes. The control plane is stopped when a step fails.
 */
export async function startDeployersPlane(opts: {
  settings: Record<string, string>;
  project: string;
  projectSpec?: Record<string, unknown>;
  namespaces: readonly string[];
  /** Simulated nodes that run pods (kwok), for Jobs and Deployments. */
  nodes?: number;
}): Promise<TestControlPlane> {
  const cp = await startControlPlane(opts.nodes ? { nodes: opts.nodes } : {});
  try {
    await grantControllerRights(cp);
    await setSettings(cp, opts.settings);
    await applyRaw(cp.admin, project(opts.project, opts.projectSpec ?? EVERY_DESTINATION_AS_DEPLOYER));
    for (const ns of opts.namespaces) await deployer(cp, ns, 'deployer');
    return cp;
  } catch (err) {
    await cp.stop();
    throw err;
  }
}

export function project(name: string, spec: Record<string, unknown>, labels?: Record<string, string>): KubeObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name, namespace: NS, ...(labels ? { labels } : {}) },
    spec: {
      sourceRepos: ['*'],
      destinations: [{ server: '*', namespace: '*' }],
      clusterResourceWhitelist: [{ group: '*', kind: '*' }],
      ...spec,
    },
  };
}

export function application(
  name: string,
  repoURL: string,
  opts: {
    project?: string;
    destination?: Record<string, string>;
    path?: string;
    automated?: boolean;
    finalizer?: boolean;
    syncOptions?: string[];
  } = {},
): KubeObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: {
      name,
      namespace: NS,
      ...(opts.finalizer ? { finalizers: ['resources-finalizer.argocd.argoproj.io'] } : {}),
    },
    spec: {
      project: opts.project ?? 'default',
      source: { repoURL, targetRevision: 'HEAD', path: opts.path ?? 'app' },
      destination: opts.destination ?? { server: IN_CLUSTER, namespace: 'guestbook' },
      ...(opts.automated !== false
        ? { syncPolicy: { automated: { prune: true }, ...(opts.syncOptions ? { syncOptions: opts.syncOptions } : {}) } }
        : {}),
    },
  };
}

/** Objects that are healthy without a kubelet: a ConfigMap and a ClusterIP Service. */
/**
 * A sync held between waves: wave 0 is a LoadBalancer Service, Progressing until a test writes its
 * ingress address; wave 1 is a ConfigMap that is applied only after that. Path `held`.
 */
export function heldWaveFiles(): Record<string, string> {
  return {
    'held/lb.yaml':
      'apiVersion: v1\nkind: Service\nmetadata:\n  name: lb\nspec:\n  type: LoadBalancer\n  ports:\n  - port: 80\n  selector:\n    app: lb\n',
    'held/later.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: later\n  annotations:\n    argocd.argoproj.io/sync-wave: "1"\ndata:\n  a: "1"\n',
  };
}

export function guestbookFiles(extra: Record<string, string> = {}): Record<string, string> {
  return {
    'app/configmap.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guestbook-config\ndata:\n  greeting: hello\n',
    'app/service.yaml':
      'apiVersion: v1\nkind: Service\nmetadata:\n  name: guestbook-ui\nspec:\n  ports:\n  - port: 80\n    targetPort: 80\n  selector:\n    app: guestbook-ui\n',
    ...extra,
  };
}

export interface Fixture {
  repo: TestRepo;
  controller: RunningController;
  events: MemoryEvents;
  logs: string[];
  cacheDir: string;
  /** Stops the controller, runs `meanwhile`, starts a new controller (a restart). */
  restart(meanwhile?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

export async function startFixture(
  cp: TestControlPlane,
  files: Record<string, string>,
  opts: {
    applicationNamespaces?: string[];
    waitTimeoutMs?: number;
    operationProcessors?: number;
    rendererLogs?: boolean;
    /** How long a cluster Secret's credential plugin may run (the controller's default is 30 s). */
    execTimeoutMs?: number;
    /** Further flags of the child renderer (the plugin tests' `--plugin-sockets`). */
    rendererFlags?: readonly string[];
    /** The process metrics in the controller's registry, as `impersync run` has them. */
    defaultMetrics?: boolean;
    /** `impersync run`'s Redis flags: Argo CD's cache is written there. */
    redis?: RedisFlags;
    /** How long a job waits for memory before its Application gets MemoryBudgetWarning (default 30 s). */
    budgetWaitConditionMs?: number;
    /** More event sinks, after the fixture's MemoryEvents. */
    events?: EventSink[];
    /** The container's memory limit the controller sizes its budgets by (`--memory-limit`). */
    memoryLimitBytes?: number;
  } = {},
): Promise<Fixture> {
  const repo = await TestRepo.create();
  await repo.commit(files, 'guestbook');
  const cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-ctl-'));
  const logs: string[] = [];
  const sink = new Writable({
    write(c, _e, cb) {
      logs.push(String(c));
      cb();
    },
  });
  const events = new MemoryEvents();
  const logger = createLogger({ level: 'debug' }, sink);
  const start = () =>
    startController({
      kc: cp.controller,
      namespace: NS,
      logger,
      // The renderer's log lines too, when a test reads them (the repository tests look for secrets there).
      childRenderer: {
        cacheDir,
        toolsDir: toolsDir(),
        ...(opts.rendererLogs ? { logger } : {}),
        ...(opts.rendererFlags ? { flags: opts.rendererFlags } : {}),
      },
      waitTimeoutMs: opts.waitTimeoutMs ?? 20_000,
      events: [events, ...(opts.events ?? [])],
      healthPort: 0,
      ...(opts.defaultMetrics ? { metrics: createMetrics({ defaultMetrics: true }) } : {}),
      ...(opts.applicationNamespaces ? { applicationNamespaces: opts.applicationNamespaces } : {}),
      ...(opts.operationProcessors !== undefined ? { operationProcessors: opts.operationProcessors } : {}),
      ...(opts.execTimeoutMs !== undefined ? { execTimeoutMs: opts.execTimeoutMs } : {}),
      ...(opts.redis ? { redis: opts.redis } : {}),
      ...(opts.budgetWaitConditionMs !== undefined ? { budgetWaitConditionMs: opts.budgetWaitConditionMs } : {}),
      ...(opts.memoryLimitBytes !== undefined ? { memoryLimitBytes: opts.memoryLimitBytes } : {}),
    });
  const fx: Fixture = {
    repo,
    controller: await start(),
    events,
    logs,
    cacheDir,
    restart: async (meanwhile) => {
      await fx.controller.stop();
      await meanwhile?.();
      fx.controller = await start();
    },
    stop: async () => {
      await fx.controller.stop();
      await repo.remove();
      await rm(cacheDir, { recursive: true, force: true });
    },
  };
  return fx;
}

export async function getApp(
  cp: TestControlPlane,
  name: string,
): Promise<Record<string, unknown> & { status?: Record<string, unknown> }> {
  const app = await getRaw(cp.admin, { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', name, namespace: NS });
  if (!app) throw new Error(`Application ${name} not found`);
  return app as Record<string, unknown>;
}

/** Polls the Application until `pred` holds; the error shows the last status seen. */
export async function waitForApp(
  cp: TestControlPlane,
  name: string,
  what: string,
  pred: (app: Record<string, unknown> & { status?: Record<string, unknown> }) => boolean,
  timeoutMs = 60_000,
): Promise<Record<string, unknown> & { status?: Record<string, unknown> }> {
  const end = Date.now() + timeoutMs;
  let last: Record<string, unknown> | undefined;
  while (Date.now() < end) {
    try {
      last = await getApp(cp, name);
      if (pred(last)) return last;
    } catch {
      // not there yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `timed out waiting for Application ${name}: ${what}; last seen: ${JSON.stringify(last?.['status'] ?? last, null, 1).slice(0, 3000)}`,
  );
}

/** Applies `app` and waits for its first sync: operation Succeeded and Synced. */
export async function applySyncedApp(cp: TestControlPlane, app: KubeObject): Promise<void> {
  await applyRaw(cp.admin, app);
  await waitForApp(
    cp,
    app.metadata.name,
    'first sync Succeeded and Synced',
    (a) =>
      operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced',
  );
}

/** Asks for a refresh and waits until it is done (the controller removes the annotation after it). */
export async function refreshApp(
  cp: TestControlPlane,
  name: string,
  kind: 'normal' | 'hard' = 'normal',
): Promise<void> {
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/${name}`,
    body: { metadata: { annotations: { 'argocd.argoproj.io/refresh': kind } } },
    contentType: 'application/merge-patch+json',
  });
  await waitForApp(
    cp,
    name,
    'refresh done',
    (a) =>
      ((a['metadata'] as { annotations?: Record<string, string> }).annotations ?? {})['argocd.argoproj.io/refresh'] ===
      undefined,
  );
}

export function operationPhase(app: { status?: Record<string, unknown> }): string | undefined {
  return (app.status?.['operationState'] as { phase?: string } | undefined)?.phase;
}

export function condition(app: { status?: Record<string, unknown> }, type: string): string | undefined {
  return ((app.status?.['conditions'] ?? []) as Array<{ type: string; message: string }>).find((c) => c.type === type)
    ?.message;
}

export async function deleteApp(cp: TestControlPlane, name: string): Promise<void> {
  await requestOk(cp.admin, {
    method: 'DELETE',
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/${name}`,
  });
}

/** Waits (60 s at most) until the Application is gone from the API server, its finalizers done. */
export async function untilAppGone(cp: TestControlPlane, name: string): Promise<void> {
  await until(
    `the Application ${name} gone`,
    async () =>
      (await getRaw(cp.admin, { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', name, namespace: NS })) ===
      undefined,
    60_000,
  );
}
