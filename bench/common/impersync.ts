// impersync's side of a benchmark: the control namespace `argocd` with the controller's installed
// rights, argocd-cm with impersonation enabled and enforced, one AppProject mapping `app-*` to the
// `deployer` ServiceAccount, a local Git repository with one folder per Application, and the
// Applications themselves (automated sync).
import {
  applyRaw,
  deleteRaw,
  grantInstalledControllerRights,
  type KubeObject,
  type TestControlPlane,
} from '../../test/support/index.ts';
import { TestRepo } from '../../test/support/git.ts';
import { connectControlCluster } from '../../src/kube/control.ts';
import { Watch } from '../../src/kube/watch.ts';
import { mapLimit } from '../../src/sync/util.ts';
import { DEPLOYER, writeManifests } from './tenants.ts';

export const NS = 'argocd';
export const PROJECT = 'bench';
const IN_CLUSTER = 'https://kubernetes.default.svc';

/** Rights as deploy/install/base grants them, argocd-cm and the AppProject. */
export async function prepareControlNamespace(
  cp: TestControlPlane,
  settings: Record<string, string> = {},
): Promise<void> {
  await grantInstalledControllerRights(cp.admin, NS);
  await applyRaw(
    cp.admin,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-cm', namespace: NS },
      data: {
        'application.sync.impersonation.enabled': 'true',
        'application.sync.impersonation.enforced': 'true',
        ...settings,
      },
    },
    { force: true },
  );
  await applyRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name: PROJECT, namespace: NS },
    spec: {
      sourceRepos: ['*'],
      destinations: [{ server: IN_CLUSTER, namespace: 'app-*' }],
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'app-*', defaultServiceAccount: DEPLOYER }],
    },
  });
}

/** One repository, one folder per Application (plain Directory source). */
export async function createRepo(names: string[]): Promise<TestRepo> {
  const repo = await TestRepo.create();
  await writeManifests(repo.dir, names);
  await repo.commit({}, `${names.length} applications`);
  return repo;
}

export function application(name: string, repoURL: string, opts: { selfHeal?: boolean } = {}): KubeObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: NS },
    spec: {
      project: PROJECT,
      source: { repoURL, targetRevision: 'HEAD', path: name },
      destination: { server: IN_CLUSTER, namespace: name },
      syncPolicy: { automated: { prune: true, ...(opts.selfHeal ? { selfHeal: true } : {}) } },
    },
  };
}

export async function createApplications(
  cp: TestControlPlane,
  names: string[],
  repoURL: string,
  opts: { selfHeal?: boolean } = {},
): Promise<void> {
  await mapLimit(names, 16, (name) => applyRaw(cp.admin, application(name, repoURL, opts), { fieldManager: 'bench' }));
}

/**
 * Deletes the Applications (none has a finalizer: their objects stay), so that a controller started
 * after does not take them up as well as its own.
 */
export async function deleteApplications(cp: TestControlPlane, names: string[]): Promise<void> {
  await mapLimit(names, 16, (name) =>
    deleteRaw(cp.admin, { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', name, namespace: NS }),
  );
}

type AppStatus = {
  sync?: { status?: string; revision?: string };
  operationState?: { phase?: string; message?: string };
  health?: { status?: string };
};

/**
 * Done means: sync status Synced and the last operation Succeeded. Not Healthy: without kubelets a
 * Deployment stays Progressing forever, so health is reported, not waited for.
 */
export function isDone(status: AppStatus | undefined): boolean {
  return status?.sync?.status === 'Synced' && status.operationState?.phase === 'Succeeded';
}

/**
 * Watches the Applications until all of `names` are done; returns when, and the last state of each.
 * A watch, not a list every second: a poll would round every time up to its next tick (half a
 * second on average) and load the API server with a list of every Application's status each time,
 * which the references it is set against do not pay.
 */
export async function waitAllDone(
  cp: TestControlPlane,
  names: string[],
  timeoutMs: number,
): Promise<{ doneAt: number; apps: KubeObject[] }> {
  const want = new Set(names);
  const done = new Set<string>();
  const client = await connectControlCluster(cp.admin);
  const watch = new Watch(client.watchTransport(), {
    path: `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications`,
    kind: 'Application',
    apiVersion: 'argoproj.io/v1alpha1',
    onError: (err) => console.log(`watching the Applications: ${err.message}; watching again`),
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    const doneAt = await new Promise<number>((resolve, reject) => {
      watch.on((e) => {
        const name = e.object.metadata.name;
        if (!want.has(name)) return;
        if (e.type !== 'DELETED' && isDone(e.object['status'] as AppStatus | undefined)) done.add(name);
        else done.delete(name);
        if (done.size === want.size) resolve(Date.now());
      });
      timer = setTimeout(() => {
        const stuck = watch
          .list()
          .filter((a) => want.has(a.metadata.name) && !done.has(a.metadata.name))
          .slice(0, 3);
        reject(
          new Error(
            `${want.size - done.size} of ${want.size} Applications not Synced+Succeeded after ${timeoutMs / 1000} s; e.g. ${JSON.stringify(
              stuck.map((a) => ({ name: a.metadata.name, status: a['status'] })),
              null,
              1,
            ).slice(0, 3000)}`,
          ),
        );
      }, timeoutMs);
      watch.start();
    });
    return { doneAt, apps: watch.list().filter((a) => want.has(a.metadata.name)) as KubeObject[] };
  } finally {
    clearTimeout(timer);
    await watch.stop();
    await client.close();
  }
}

/** Health of the synced Applications, e.g. { Progressing: 100 } (Deployments without kubelets). */
export function healthCounts(apps: KubeObject[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of apps) {
    const h = (a['status'] as AppStatus | undefined)?.health?.status ?? 'none';
    out[h] = (out[h] ?? 0) + 1;
  }
  return out;
}
