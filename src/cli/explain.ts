// `impersync explain`: which ServiceAccount an Application syncs as, and why (spec §3–§7, §10).
// Exit 0 whenever an explanation was produced, whatever the decision; 2 when the input is unusable
// or the controller's admission gate refuses the Application before its identity is decided.
import { listFlag, startCommand, stringFlag } from './args.ts';
import { explain } from './explain-core.ts';
import { formatExplanation } from './explain-format.ts';
import { processIO, type CommandIO } from './io.ts';
import { DEFAULT_CONTROL_NAMESPACE, INPUT_FLAGS, loadInput } from './load.ts';

export const EXPLAIN_USAGE = `usage: impersync explain -f FILE [-f FILE ...] [--app NAMESPACE/NAME] [-o json|text]
       impersync explain [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] [--app NAMESPACE/NAME] [-o json|text]

Shows which ServiceAccount an Application syncs as, and why: each destinationServiceAccounts entry
tried in order, the one that decided, and the outcome (disabled, impersonate, fallback, deny, error).

  -f, --filename FILE   YAML or JSON documents (Applications, AppProjects, argocd-cm, cluster
                        Secrets); '-' reads stdin. Without -f, the objects are read live from the
                        cluster of the current kubeconfig.
      --app NS/NAME     the Application to explain (needed when there are several)
  -o, --output FORMAT   text (default) or json
  -n, --namespace NS    the control namespace (argocd-cm, AppProjects, cluster Secrets; default argocd)
      --kubeconfig FILE, --context NAME   the cluster to read in live mode

The Application is admitted as the controller admits it: one the controller refuses before deciding
its identity (its project missing or invalid under spec §8, a source or destination the project does
not permit, a namespace its sourceNamespaces do not list) is refused here with the controller's message.

Exit status: 0 when an explanation was produced, 2 when the input is unusable or the Application refused.
`;

export async function run(argv: string[], io: CommandIO): Promise<number> {
  const flags = startCommand('explain', argv, { ...INPUT_FLAGS, app: { type: 'string' } }, EXPLAIN_USAGE, io);
  if (flags.done) return flags.code;
  const namespace = stringFlag(flags.values, 'namespace', DEFAULT_CONTROL_NAMESPACE);
  const app = typeof flags.values.app === 'string' ? flags.values.app : undefined;
  const appNamespace = app?.includes('/') ? app.slice(0, app.indexOf('/')) : undefined;
  const input = await loadInput(
    {
      files: listFlag(flags.values, 'filename'),
      namespace,
      kubeconfig: typeof flags.values.kubeconfig === 'string' ? flags.values.kubeconfig : undefined,
      context: typeof flags.values.context === 'string' ? flags.values.context : undefined,
      applicationNamespace: appNamespace,
    },
    io,
  );
  if (!input.ok) {
    io.stderr(`impersync explain: ${oneLine(input.error)}\n`);
    return 2;
  }
  const result = explain(input.value.inventory, { app, namespace, source: input.value.source });
  if (!result.ok) {
    io.stderr(`impersync explain: ${oneLine(result.error)}\n`);
    return 2;
  }
  io.stdout(
    flags.format === 'json' ? JSON.stringify(result.value.report, null, 2) + '\n' : formatExplanation(result.value),
  );
  return 0;
}

/** Errors are promised as one stderr line. */
export function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, ' ');
}

export function main(argv: string[]): Promise<number> {
  return run(argv, processIO);
}
