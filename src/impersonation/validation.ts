// Validating an AppProject's destinationServiceAccounts (spec §8). Argo CD stops at the first
// failure; impersync lists every failure, entry by entry and rule by rule, so the first one listed
// is the one Argo CD would report.
import type { DestinationServiceAccount } from '../api/index.ts';
import { compileGlob } from './glob.ts';
import { isInvalidServiceAccountName } from './resolver.ts';

export interface ValidationFailure {
  /** Index in spec.destinationServiceAccounts. */
  index: number;
  field: 'server' | 'namespace' | 'defaultServiceAccount';
  /** Argo CD's message, verbatim. */
  message: string;
}

export interface ProjectValidation {
  valid: boolean;
  failures: ValidationFailure[];
}

/** Checks a list of destinationServiceAccounts entries against the six rules of spec §8. */
export function validateDestinationServiceAccounts(entries: readonly DestinationServiceAccount[]): ProjectValidation {
  const failures: ValidationFailure[] = [];
  const seen = new Set<string>();
  entries.forEach((entry, index) => {
    const namespace = entry.namespace ?? '';
    const found: ValidationFailure[] = [];
    const fail = (field: ValidationFailure['field'], message: string) => {
      // Rules 1 and 4 (and 2 and 5) share a message: say it once per entry.
      if (!found.some((f) => f.message === message)) found.push({ index, field, message });
    };
    const serverMessage = `server has an invalid format, '${entry.server}'`;
    const namespaceMessage = `namespace has an invalid format, '${namespace}'`;
    if (entry.server.includes('!')) fail('server', serverMessage); // rule 1
    if (namespace.includes('!')) fail('namespace', namespaceMessage); // rule 2
    if (isInvalidServiceAccountName(entry.defaultServiceAccount)) {
      fail('defaultServiceAccount', `defaultServiceAccount has an invalid format, '${entry.defaultServiceAccount}'`); // rule 3
    }
    if (!compileGlob(entry.server).ok) fail('server', serverMessage); // rule 4
    if (!compileGlob(namespace).ok) fail('namespace', namespaceMessage); // rule 5
    const key = `${entry.server}/${namespace}`;
    if (seen.has(key)) fail('server', `destinationServiceAccount '${key}' already added`); // rule 6
    seen.add(key);
    failures.push(...found);
  });
  return { valid: failures.length === 0, failures };
}

/** spec §8 for an AppProject. */
export function validateProject(project: {
  spec: { destinationServiceAccounts?: readonly DestinationServiceAccount[] | undefined };
}): ProjectValidation {
  return validateDestinationServiceAccounts(project.spec.destinationServiceAccounts ?? []);
}
