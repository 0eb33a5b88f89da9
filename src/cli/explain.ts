// `impersync explain`: which ServiceAccount an Application syncs as, and why (spec §3–§7, §10).
// Exit 0 whenever an explanation was produced, whatever the decision; 3 when the controller's
// admission gate refuses the Application before its identity is decided (printed as the answer);
// 2 when the input is unusable. With --check-rights (check-rights.ts), 1 when the identity lacks a
// right a sync needs.
import { defaultSourceCacheDir } from '../renderer/child.ts';
import { listFlag, startCommand, stringFlag } from './args.ts';
import { checkRights, formatRights } from './check-rights.ts';
import { extrasRefusedWarning } from './extras.ts';
import { explain } from './explain-core.ts';
import { formatExplanation, formatRefusal } from './explain-format.ts';
import { processIO, type CommandIO } from './io.ts';
import { DEFAULT_CONTROL_NAMESPACE, INPUT_FLAGS, loadInput } from './load.ts';

export const EXPLAIN_USAGE = `usage: impersync explain -f FILE [-f FILE ...] [--app NAMESPACE/NAME] [-o json|text]
       impersync explain [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] [--app NAMESPACE/NAME] [--check-rights] [-o json|text]

Shows which ServiceAccount an Application syncs as, and why: each destinationServiceAccounts entry
tried in order, the one that decided, and the outcome (disabled, impersonate, fallback, deny, error).

  -f, --filename FILE   YAML or JSON documents (Applications, AppProjects, argocd-cm, cluster
                        Secrets); '-' reads stdin. Without -f, the objects are read live from the
                        cluster of the current kubeconfig.
      --app NS/NAME     the Application to explain (needed when there are several)
  -o, --output FORMAT   text (default) or json
  -n, --namespace NS    the control namespace (argocd-cm, AppProjects, cluster Secrets; default argocd)
      --kubeconfig FILE, --context NAME   the cluster to read in live mode
      --check-rights    live mode only: render the Application's source and ask the API server,
                        as the identity it syncs as (SelfSubjectAccessReviews), about every verb
                        and resource a sync of it needs in each namespace; names every one refused
                        in the words of the controller's condition
      --cache-dir DIR   with --check-rights: where Git clones are kept (default ~/.cache/impersync/source)
      --allow-local-repositories   with --check-rights: render file:// and local repoURLs too

The Application is admitted as the controller admits it: one the controller refuses before deciding
its identity (its project missing, a source or destination the project does not permit, a namespace
its sourceNamespaces do not list) is answered with the controller's refusal and message.

Exit status: 0 when the identity was explained (whatever the decision: impersonate, disabled,
fallback, deny or error), 3 when the controller refuses the Application before deciding its
identity, 2 when the input is unusable; with --check-rights, 1 when a right is missing and 2 when
the rights could not be checked.
`;

/** The exit status of an Application the controller refuses before deciding its identity. */
export const REFUSED_EXIT = 3;

const FLAGS = {
  ...INPUT_FLAGS,
  app: { type: 'string' },
  'check-rights': { type: 'boolean' },
  'cache-dir': { type: 'string' },
  'allow-local-repositories': { type: 'boolean' },
} as const;

export async function run(argv: string[], io: CommandIO): Promise<number> {
  const flags = startCommand('explain', argv, FLAGS, EXPLAIN_USAGE, io);
  if (flags.done) return flags.code;
  const checking = flags.values['check-rights'] === true;
  if (checking && listFlag(flags.values, 'filename').length > 0) {
    io.stderr('impersync explain: --check-rights asks a live cluster: give no -f\n');
    return 2;
  }
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
  if (!result.ok && 'refused' in result) {
    io.stdout(flags.format === 'json' ? JSON.stringify(result.refused, null, 2) + '\n' : formatRefusal(result.refused));
    return REFUSED_EXIT;
  }
  if (!result.ok) {
    io.stderr(`impersync explain: ${oneLine(result.error)}\n`);
    return 2;
  }
  if (!checking) {
    io.stdout(
      flags.format === 'json' ? JSON.stringify(result.value.report, null, 2) + '\n' : formatExplanation(result.value),
    );
    return 0;
  }
  const checked = await checkRights(result.value, {
    kubeconfig: typeof flags.values.kubeconfig === 'string' ? flags.values.kubeconfig : undefined,
    context: typeof flags.values.context === 'string' ? flags.values.context : undefined,
    namespace,
    settings: input.value.inventory.configMap?.value,
    cacheDir: stringFlag(flags.values, 'cache-dir', defaultSourceCacheDir()),
    allowLocalRepositories: flags.values['allow-local-repositories'] === true,
    onExtrasRefused: (server) => io.stderr(extrasRefusedWarning(server)),
  });
  const rights = checked.ok ? checked.rights : undefined;
  if (flags.format === 'json')
    io.stdout(JSON.stringify({ ...result.value.report, rights: rights ?? null }, null, 2) + '\n');
  else io.stdout(formatExplanation(result.value) + (rights ? formatRights(rights).join('\n') + '\n' : ''));
  if (!checked.ok) {
    io.stderr(`impersync explain: rights: ${oneLine(checked.error)}\n`);
    return 2;
  }
  return checked.rights.message === null ? 0 : 1;
}

/** Errors are promised as one stderr line. */
export function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, ' ');
}

export function main(argv: string[]): Promise<number> {
  return run(argv, processIO);
}
