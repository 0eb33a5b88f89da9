// `impersync run`: the controller against a cluster (a kubeconfig, or in-cluster in a Pod). With no
// flag and no in-cluster environment it is the README's first command: a local control plane, the
// CRDs and the examples, and a line for each Application synced (as which ServiceAccount) or refused (why).
import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { parseFlags, stringFlag } from './args.ts';
import { startController } from '../controller/controller.ts';
import type { RunningController } from '../controller/controller.ts';
import type { EventSink } from '../controller/events.ts';
import { defaultPorts } from '../controller/adapters.ts';
import { defaultIdentity, startLeaderElection } from '../controller/leader.ts';
import { startHealthServer } from '../observability/health.ts';
import { createLogger, isLogLevel } from '../observability/logger.ts';
import { createMetrics } from '../observability/metrics.ts';

export const RUN_USAGE = `usage: impersync run [--kubeconfig FILE] [--context NAME] [--namespace NS]
                    [--application-namespaces GLOBS] [--status-processors N] [--operation-processors N]
                    [--health-port PORT] [--log-level LEVEL] [--leader-elect [--leader-election-lease NAME]]

Runs the controller: watches Applications, AppProjects, argocd-cm and cluster Secrets in NS and
syncs each Application as the ServiceAccount its AppProject assigns (destinationServiceAccounts).

  --kubeconfig FILE              the control cluster (default: KUBECONFIG, ~/.kube/config, in-cluster)
  --namespace NS                 the control namespace (default argocd)
  --application-namespaces GLOBS more namespaces whose Applications are reconciled, comma-separated
                                 globs (apps in any namespace; the project's sourceNamespaces must allow them)
  --status-processors N          comparison workers (default 20)
  --operation-processors N       sync workers (default 10)
  --health-port PORT             /healthz, /readyz, /metrics (default 8080; 0 picks a free port)
  --log-level LEVEL              trace, debug, info (default), warn, error
  --leader-elect                 run as one of several replicas: only the holder of a Lease in NS reconciles
  --leader-election-lease NAME   the Lease's name (default impersync-controller)

Environment: IMPERSYNC_CACHE_DIR (Git checkouts; default $XDG_CACHE_HOME or ~/.cache), POD_NAME
(leader election identity).

With no flag at all and not in a Pod, starts a local control plane with the examples instead.
`;

function positiveInt(v: string | undefined, name: string): number | string | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isInteger(n) && n >= 0 ? n : `--${name} must be a whole number, not '${v}'`;
}

function inCluster(): boolean {
  return (
    Boolean(process.env['KUBERNETES_SERVICE_HOST']) && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')
  );
}

/** Prints what a person running the controller wants to see: who synced as whom, who was refused. */
export function printerSink(write: (line: string) => void): EventSink {
  return {
    record: async (obj, type, reason, message) => {
      const app = `${obj.namespace}/${obj.name}`;
      if (reason === 'OperationCompleted') write(`✔ ${app}: ${message}`);
      else if (reason === 'OperationFailed') write(`✖ ${app}: ${message}`);
      else if (reason === 'ImpersonationFallback') write(`! ${app}: ${message}`);
      else if (reason === 'DeletionFailed') write(`✖ ${app}: deletion: ${message}`);
      else if (reason === 'ResourcesDeleted') write(`✔ ${app}: ${message}`);
      else if (type === 'Warning' && reason !== 'ImpersonationDenied') write(`! ${app}: ${reason}: ${message}`);
    },
  };
}

export async function main(argv: string[]): Promise<number> {
  const flags = parseFlags(argv, {
    kubeconfig: { type: 'string' },
    context: { type: 'string' },
    namespace: { type: 'string', short: 'n' },
    'application-namespaces': { type: 'string' },
    'status-processors': { type: 'string' },
    'operation-processors': { type: 'string' },
    'health-port': { type: 'string' },
    'log-level': { type: 'string' },
    'leader-elect': { type: 'boolean' },
    'leader-election-lease': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (!flags.ok) {
    process.stderr.write(`impersync run: ${flags.error}\n${RUN_USAGE}`);
    return 2;
  }
  const v = flags.values;
  if (v['help'] === true) {
    process.stdout.write(RUN_USAGE);
    return 0;
  }
  const level = stringFlag(v, 'log-level', 'info');
  if (!isLogLevel(level)) {
    process.stderr.write(`impersync run: --log-level must be one of trace, debug, info, warn, error, not '${level}'\n`);
    return 2;
  }
  const numbers: Record<string, number | undefined> = {};
  for (const name of ['status-processors', 'operation-processors', 'health-port']) {
    const n = positiveInt(typeof v[name] === 'string' ? v[name] : undefined, name);
    if (typeof n === 'string') {
      process.stderr.write(`impersync run: ${n}\n`);
      return 2;
    }
    if (n === 0 && name !== 'health-port') {
      process.stderr.write(`impersync run: --${name} must be at least 1\n`);
      return 2;
    }
    numbers[name] = n;
  }
  if (argv.length === 0 && !inCluster() && !process.env['KUBECONFIG']) {
    const { runLocal } = await import('../controller/local.ts');
    return runLocal({ write: (line) => process.stdout.write(line + '\n') });
  }
  const kc = new KubeConfig();
  try {
    const file = typeof v['kubeconfig'] === 'string' ? v['kubeconfig'] : undefined;
    if (file) kc.loadFromFile(file);
    else kc.loadFromDefault();
    if (typeof v['context'] === 'string') kc.setCurrentContext(v['context']);
  } catch (err) {
    process.stderr.write(`impersync run: cannot load kubeconfig: ${(err as Error).message}\n`);
    return 2;
  }
  const logger = createLogger({ level });
  const namespace = stringFlag(v, 'namespace', 'argocd');
  const globs = stringFlag(v, 'application-namespaces', '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const metrics = createMetrics({ defaultMetrics: true });
  const cacheDir = process.env['IMPERSYNC_CACHE_DIR'];
  const ports = defaultPorts({ controllerNamespace: namespace, ...(cacheDir ? { cacheDir } : {}) });
  let controller: RunningController | undefined;
  let starting: Promise<void> | undefined;
  const leaderElect = v['leader-elect'] === true;
  const health = await startHealthServer({
    port: numbers['health-port'] ?? 8080,
    registry: metrics.registry,
    // A standby replica is ready (it serves nothing but may take over); a leader once its caches synced.
    readiness: () =>
      controller
        ? controller.cache.notSynced()
          ? `caches not synced: ${controller.cache.notSynced()}`
          : ''
        : leaderElect
          ? ''
          : 'starting',
  });
  logger.info({ port: health.port }, 'serving /healthz, /readyz and /metrics');
  const start = async () => {
    controller = await startController({
      kc,
      namespace,
      applicationNamespaces: globs,
      logger,
      ports,
      metrics,
      events: [printerSink((line) => logger.info(line))],
      ...(numbers['status-processors'] !== undefined ? { statusProcessors: numbers['status-processors'] } : {}),
      ...(numbers['operation-processors'] !== undefined
        ? { operationProcessors: numbers['operation-processors'] }
        : {}),
    });
  };
  const stopController = async () => {
    await starting;
    const c = controller;
    controller = undefined;
    await c?.stop();
  };
  let election: ReturnType<typeof startLeaderElection> | undefined;
  if (leaderElect) {
    const lease = stringFlag(v, 'leader-election-lease', 'impersync-controller');
    election = startLeaderElection({
      kc,
      namespace,
      name: lease,
      identity: defaultIdentity(),
      onStartedLeading: (signal) => {
        logger.info({ lease }, 'leading: starting the controller');
        starting = start();
        signal.addEventListener(
          'abort',
          () => {
            void stopController();
          },
          { once: true },
        );
      },
      onStoppedLeading: (reason) => logger.info({ lease, reason }, 'no longer leading: controller stopped'),
      onNewLeader: (id) => logger.info({ lease, leader: id }, 'leader observed'),
      onError: (err) => logger.warn({ lease, err: err.message }, 'leader election'),
    });
  } else {
    await start();
  }
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  logger.info('stopping');
  await stopController();
  await election?.stop();
  await health.close();
  return 0;
}
