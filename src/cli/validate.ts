// `impersync validate`: checks every AppProject's destinationServiceAccounts against spec §8.
// Exit 0 when all are valid, 1 when any is invalid, 2 when the input is unusable. It also warns,
// without changing validity (Argo CD accepts them), about entries the controller will refuse to
// impersonate: ServiceAccounts in a system namespace while argocd-cm does not allow them.
import {
  readImpersonationSettings,
  systemNamespaceEntries,
  validateProject,
  type SystemNamespaceEntry,
  type ValidationFailure,
} from '../impersonation/index.ts';
import { listFlag, startCommand, stringFlag } from './args.ts';
import { oneLine } from './explain.ts';
import type { Inventory } from './inventory.ts';
import { processIO, type CommandIO } from './io.ts';
import { DEFAULT_CONTROL_NAMESPACE, INPUT_FLAGS, loadInput } from './load.ts';

export const VALIDATE_USAGE = `usage: impersync validate -f FILE [-f FILE ...] [-o json|text]
       impersync validate [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] [-o json|text]

Checks every AppProject's destinationServiceAccounts as Argo CD does, and lists every failure in
order (the first is the one Argo CD reports). Warns about entries naming a ServiceAccount in
kube-system, kube-public or kube-node-lease, which the controller refuses to impersonate unless
argocd-cm (given with -f, or read live) sets impersync.impersonation.allowSystemNamespaces: "true".

  -f, --filename FILE   YAML or JSON documents; '-' reads stdin; without -f, read live
  -o, --output FORMAT   text (default) or json: an array of {project, valid, errors, warnings}
  -n, --namespace NS    the namespace of the AppProjects in live mode (default argocd)

Exit status: 0 when all are valid, 1 when any is invalid, 2 when the input is unusable.
`;

export interface ProjectReport {
  project: string;
  valid: boolean;
  /** Argo CD's messages, in order. */
  errors: string[];
  /** impersync's own: entries the controller will refuse to impersonate (valid for Argo CD). */
  warnings: string[];
}

export interface ValidateResult {
  reports: ProjectReport[];
  failures: ValidationFailure[][];
  refused: SystemNamespaceEntry[][];
}

/** The pure part: every AppProject of the inventory, in input order. */
export function validateInventory(inventory: Inventory): ValidateResult {
  const reports: ProjectReport[] = [];
  const failures: ValidationFailure[][] = [];
  const refused: SystemNamespaceEntry[][] = [];
  const settings = readImpersonationSettings(inventory.configMap?.value ?? inventory.configMapError);
  for (const { value } of inventory.projects) {
    const result = validateProject(value);
    const system = settings.allowSystemNamespaces
      ? []
      : systemNamespaceEntries(value.spec.destinationServiceAccounts ?? []);
    reports.push({
      project: value.metadata.name,
      valid: result.valid,
      errors: result.failures.map((f) => f.message),
      warnings: system.map((e) => e.message),
    });
    failures.push(result.failures);
    refused.push(system);
  }
  return { reports, failures, refused };
}

export function formatValidation(result: ValidateResult): string {
  const lines: string[] = [];
  result.reports.forEach((r, i) => {
    lines.push(`${r.project}: ${r.valid ? 'valid' : 'INVALID'}`);
    for (const f of result.failures[i] ?? [])
      lines.push(`  spec.destinationServiceAccounts[${f.index}].${f.field}: ${f.message}`);
    for (const e of result.refused[i] ?? [])
      lines.push(`  spec.destinationServiceAccounts[${e.index}].defaultServiceAccount: warning: ${e.message}`);
  });
  const bad = result.reports.filter((r) => !r.valid).length;
  lines.push(`${result.reports.length} AppProject${result.reports.length === 1 ? '' : 's'} checked, ${bad} invalid`);
  return lines.join('\n') + '\n';
}

export async function run(argv: string[], io: CommandIO): Promise<number> {
  const flags = startCommand('validate', argv, INPUT_FLAGS, VALIDATE_USAGE, io);
  if (flags.done) return flags.code;
  const input = await loadInput(
    {
      files: listFlag(flags.values, 'filename'),
      namespace: stringFlag(flags.values, 'namespace', DEFAULT_CONTROL_NAMESPACE),
      kubeconfig: typeof flags.values.kubeconfig === 'string' ? flags.values.kubeconfig : undefined,
      context: typeof flags.values.context === 'string' ? flags.values.context : undefined,
    },
    io,
  );
  if (!input.ok) {
    io.stderr(`impersync validate: ${oneLine(input.error)}\n`);
    return 2;
  }
  if (input.value.inventory.projects.length === 0) {
    io.stderr(`impersync validate: no AppProject in ${input.value.source}\n`);
    return 2;
  }
  const result = validateInventory(input.value.inventory);
  io.stdout(flags.format === 'json' ? JSON.stringify(result.reports, null, 2) + '\n' : formatValidation(result));
  return result.reports.every((r) => r.valid) ? 0 : 1;
}

export function main(argv: string[]): Promise<number> {
  return run(argv, processIO);
}
