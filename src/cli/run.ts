// `impersync run`: the controller against a cluster (a kubeconfig, or in-cluster in a Pod). With no
// flag and no in-cluster environment it is the README's first command: a local control plane, the
// CRDs and the examples, and a line for each Application synced (as which ServiceAccount) or refused (why).
import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { parseFlags, stringFlag } from './args.ts';
import { startController } from '../controller/controller.ts';
import type { EventSink } from '../controller/events.ts';
import { defaultPorts } from '../controller/adapters.ts';
import { createLogger, isLogLevel } from '../observability/logger.ts';

export const RUN_USAGE = `usage: impersync run [--kubeconfig FILE] [--context NAME] [--namespace NS]
                    [--application-namespaces GLOBS] [--status-processors N] [--operation-processors N]
                    [--health-port PORT] [--log-level LEVEL]

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

With no flag at all and not in a Pod, starts a local control plane with the examples instead.
`;

function positiveInt(v: string | undefined, name: string): number | string | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isInteger(n) && n >= 0 ? n : `--${name} must be a whole number, not '${v}'`;
}

function inCluster(): boolean {
  return Boolean(process.env['KUBERNETES_SERVICE_HOST']) && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token');
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
  const globs = stringFlag(v, 'application-namespaces', '').split(',').map((s) => s.trim()).filter(Boolean);
  const controller = await startController({
    kc,
    namespace: stringFlag(v, 'namespace', 'argocd'),
    applicationNamespaces: globs,
    logger,
    ports: defaultPorts({ controllerNamespace: stringFlag(v, 'namespace', 'argocd') }),
    healthPort: numbers['health-port'] ?? 8080,
    events: [printerSink((line) => process.stderr.write(line + '\n'))],
    ...(numbers['status-processors'] !== undefined ? { statusProcessors: numbers['status-processors'] } : {}),
    ...(numbers['operation-processors'] !== undefined ? { operationProcessors: numbers['operation-processors'] } : {}),
  });
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  logger.info('stopping');
  await controller.stop();
  return 0;
}
