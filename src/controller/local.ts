// `impersync run` with no cluster: the README's first command. Starts the local control plane of
// `impersync cluster` (without kube-controller-manager), grants the controller identity exactly the rights of deploy/install/base
// (its namespace, and impersonate on the ServiceAccounts of the examples' namespaces, bound as
// deploy/install/tenants documents), serves the examples' Git source from a local repository, installs examples 1, 6 and 7 (renamed so they can live side by side) with automated
// sync, runs the controller, and prints who synced as whom and who was refused, and why.
import { spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { EVENT_REASON, IN_CLUSTER } from '../api/index.ts';
import type { KubeObject } from '../api/index.ts';
import { startControlPlane } from '../controlplane/controlplane.ts';
import type { ControlPlane } from '../controlplane/controlplane.ts';
import { DestinationClientFactory } from '../kube/factory.ts';
import { credentialFromKubeConfig, loadKubeConfig } from '../kube/credentials.ts';
import { createLogger } from '../observability/logger.ts';
import { startController } from './controller.ts';
import type { EventSink } from './events.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The guestbook of argocd-example-apps (without nodes its Deployment stays Progressing). */
const GUESTBOOK: Record<string, string> = {
  'guestbook/guestbook-ui-deployment.yaml': [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata:',
    '  name: guestbook-ui',
    'spec:',
    '  replicas: 1',
    '  revisionHistoryLimit: 3',
    '  selector:',
    '    matchLabels:',
    '      app: guestbook-ui',
    '  template:',
    '    metadata:',
    '      labels:',
    '        app: guestbook-ui',
    '    spec:',
    '      containers:',
    '      - image: gcr.io/heptio-images/ks-guestbook-demo:0.2',
    '        name: guestbook-ui',
    '        ports:',
    '        - containerPort: 80',
    '',
  ].join('\n'),
  'guestbook/guestbook-ui-svc.yaml':
    'apiVersion: v1\nkind: Service\nmetadata:\n  name: guestbook-ui\nspec:\n  ports:\n  - port: 80\n    targetPort: 80\n  selector:\n    app: guestbook-ui\n',
};

function gitRepo(dir: string): void {
  const env = {
    ...process.env,
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'impersync',
    GIT_AUTHOR_EMAIL: 'impersync@localhost',
    GIT_COMMITTER_NAME: 'impersync',
    GIT_COMMITTER_EMAIL: 'impersync@localhost',
  };
  for (const args of [
    ['init', '--quiet', '--initial-branch=main'],
    ['add', '--all'],
    ['commit', '--quiet', '-m', 'guestbook'],
  ]) {
    const r = spawnSync('git', args, { cwd: dir, env, encoding: 'utf8' });
    if (r.error || r.status !== 0)
      throw new Error(`git ${args.join(' ')}: ${r.error?.message ?? r.stderr} (git is needed: apt-get install git)`);
  }
}

async function examples(file: string): Promise<KubeObject[]> {
  const text = await readFile(path.join(root, 'examples', file), 'utf8');
  return parseAllDocuments(text, { version: '1.1' })
    .map((d) => d.toJS() as KubeObject)
    .filter(Boolean);
}

/** Example objects pointed at the local repository, with automated sync, the project renamed. */
function adapt(objects: KubeObject[], repoURL: string, projectRename: string | undefined): KubeObject[] {
  return objects.map((o) => {
    const c = structuredClone(o) as KubeObject & { spec?: Record<string, unknown> };
    if (c.kind === 'Application' && c.spec) {
      (c.spec['source'] as Record<string, unknown>)['repoURL'] = repoURL;
      c.spec['syncPolicy'] = { automated: { prune: true } };
      if (projectRename) c.spec['project'] = projectRename;
    }
    if (c.kind === 'AppProject' && projectRename) c.metadata.name = projectRename;
    return c;
  });
}

export async function runLocal(opts: { write: (line: string) => void }): Promise<number> {
  const say = opts.write;
  say('impersync: no cluster given: starting a local control plane (etcd, kube-apiserver)...');
  // No kube-controller-manager: what the demo shows (who syncs as whom, who is refused and why) is
  // decided by the API server's authorization and the controller; none of the manager's controllers
  // (ReplicaSets for the guestbook Deployment, namespace deletion, garbage collection) is needed for
  // it, and not building it saves a first run minutes. `impersync cluster` and the tests run one.
  const cp = await startControlPlane({ dir: path.resolve('.state/run'), keepDir: true, controllerManager: false });
  say(
    `impersync: control plane up at ${cp.server} in ${(cp.startupMs / 1000).toFixed(1)} s; admin kubeconfig: ${cp.adminKubeconfigPath}`,
  );
  const repoDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-examples-'));
  try {
    return await runOn(cp, repoDir, say);
  } finally {
    await cp.stop();
    await rm(repoDir, { recursive: true, force: true });
  }
}

async function runOn(cp: ControlPlane, repoDir: string, say: (line: string) => void): Promise<number> {
  const admin = new DestinationClientFactory(
    await credentialFromKubeConfig(loadKubeConfig({ kubeconfig: cp.adminKubeconfigPath })),
  );
  const client = admin.forIdentity(IN_CLUSTER, { controller: true });
  const apply = async (o: KubeObject) => {
    const r = await client.apply(o, { fieldManager: 'impersync-run' });
    if (!r.ok)
      throw new Error(
        `applying ${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}: ${r.error.message}`,
      );
  };
  for (const [file, content] of Object.entries(GUESTBOOK)) {
    await mkdir(path.dirname(path.join(repoDir, file)), { recursive: true });
    await writeFile(path.join(repoDir, file), content);
  }
  gitRepo(repoDir);
  const repoURL = pathToFileURL(repoDir).href;
  say(
    `impersync: the examples' Git source is served from ${repoURL}; a child renderer without this process's credentials renders it, with local repositories allowed for this demo only`,
  );

  const setup: KubeObject[] = [];
  for (const f of ['role.yaml', 'impersonate.yaml']) {
    const text = await readFile(path.join(root, 'deploy/install/base', f), 'utf8');
    for (const d of parseAllDocuments(text, { version: '1.1' })) {
      const o = d.toJS() as KubeObject & { subjects?: unknown[] };
      if (!o) continue;
      // The local control plane's controller identity is a static user, not the in-cluster ServiceAccount.
      if (o.subjects)
        o.subjects = [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'impersync-controller' }];
      setup.push(o);
    }
  }
  await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } });
  for (const o of setup) await apply(o);
  for (const o of await examples('argocd-cm.yaml')) await apply(o);
  const objects = [
    ...adapt(await examples('01-all-namespaces.yaml'), repoURL, undefined),
    ...adapt(await examples('06-several-matching-entries.yaml'), repoURL, 'several-entries'),
    ...adapt(await examples('07-no-destination-namespace.yaml'), repoURL, 'no-namespace').map((o) =>
      o.kind === 'Application' ? { ...o, metadata: { ...o.metadata, name: 'guestbook-no-namespace' } } : o,
    ),
  ];
  // The install binds impersonation nowhere by itself (deploy/install/tenants): the admin lists the
  // tenant namespaces. Here they are the namespaces the examples' Applications deploy to.
  const tenants = new Set<string>();
  for (const o of objects)
    if (o.kind === 'Application') {
      const dest = (o['spec'] as { destination?: { namespace?: string } }).destination;
      tenants.add(dest?.namespace || o.metadata.namespace || 'argocd');
    }
  for (const namespace of tenants) {
    objects.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    objects.push({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'impersync-impersonate', namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'impersync-impersonate' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'impersync-controller' }],
    });
  }
  // Namespaces, then RBAC, then projects, then Applications.
  const rank = (o: KubeObject) =>
    o.kind === 'Namespace' ? 0 : o.kind === 'Application' ? 3 : o.kind === 'AppProject' ? 2 : 1;
  for (const o of objects.sort((a, b) => rank(a) - rank(b))) await apply(o);
  say(
    'impersync: installed examples 1 (guestbook), 6 (guestbook-myns, guestbook-dev, guestbook-prod; their ServiceAccounts have no rights) and 7 (guestbook-no-namespace) with automated sync',
  );

  const printer: EventSink = {
    record: async (obj, type, reason, message) => {
      const app = `${obj.namespace}/${obj.name}`;
      if (reason === EVENT_REASON.OperationCompleted && type === 'Normal') say(`✔ ${app} synced: ${message}`);
      else if (reason === EVENT_REASON.OperationCompleted) say(`✖ ${app} refused: ${message}`);
      else if (reason === EVENT_REASON.ImpersonationFallback) say(`! ${app}: ${message}`);
      else if (
        reason === EVENT_REASON.ComparisonError ||
        reason === EVENT_REASON.InvalidSpecError ||
        reason === EVENT_REASON.MissingRights
      )
        say(`✖ ${app} refused: ${message}`);
    },
  };
  const logFile = path.join(cp.dir, 'controller.log');
  say(`impersync: controller running as impersync-controller; JSON logs in ${logFile}; Ctrl-C stops everything`);
  const { createWriteStream } = await import('node:fs');
  const logger = createLogger({ level: 'info' }, createWriteStream(logFile));
  const controller = await startController({
    kc: loadKubeConfig({ kubeconfig: cp.controllerKubeconfigPath }),
    namespace: 'argocd',
    logger,
    // The demo's repository is a local folder: allowed here only (never in the install).
    childRenderer: { cacheDir: path.join(cp.dir, 'source-cache'), allowLocalRepositories: true, logger },
    waitTimeoutMs: 30_000,
    events: [printer],
    healthPort: 0,
  });
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  say('impersync: stopping');
  await controller.stop();
  await admin.close();
  return 0;
}
