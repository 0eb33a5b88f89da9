// The text trace of `impersync explain`: each entry tried in order, whether its server and namespace
// matched, the entry that decided, and the outcome, in words a person can check against spec §3/§5.
import type { Explanation, RefusalReport } from './explain-core.ts';

const q = (s: string) => `'${s}'`;

function settingsLine(x: Explanation): string {
  const s = x.settings;
  const from =
    s.source === 'configmap'
      ? 'from argocd-cm'
      : s.source === 'absent'
        ? 'defaults: no argocd-cm'
        : 'defaults: argocd-cm unreadable';
  // impersync's own key (docs/impersonation.md §10), shown only when it opens the system namespaces.
  const system = s.allowSystemNamespaces ? ', ServiceAccounts in system namespaces allowed' : '';
  return `${s.enabled ? 'enabled' : 'disabled'}, ${s.enforced ? 'enforced' : 'not enforced'}${system} (${from})`;
}

function outcomeLines(x: Explanation): string[] {
  const r = x.report;
  switch (r.decision) {
    case 'disabled':
      return ["DISABLED: sync impersonation is off; every request uses the controller's own credential"];
    case 'impersonate':
      return [
        `IMPERSONATE ${r.serviceAccount ?? ''}`,
        '  every request to the destination carries Impersonate-User with this name (no groups)',
      ];
    case 'fallback':
      return ["FALLBACK to the controller's own credential (enforced is off)", `  logged: ${r.message}`];
    case 'deny':
      return ['DENY: the sync fails with phase Error', `  message: ${r.message}`];
    case 'error':
      return ['ERROR: the sync fails with phase Error', `  message: ${r.message}`];
  }
}

export function formatExplanation(x: Explanation): string {
  const r = x.report;
  const id = x.identity;
  const lines: string[] = [];
  lines.push(`Application:   ${r.application}`);
  lines.push(
    `Project:       ${r.project}${id.globalProjects.length > 0 ? ` (inherits from global projects: ${id.globalProjects.join(', ')})` : ''}`,
  );
  const dest = r.destination.name !== '' ? `name ${q(r.destination.name)}` : `server ${q(r.destination.server)}`;
  lines.push(
    `Destination:   ${dest}, namespace ${q(r.destination.namespace)}${r.destination.namespace === '' ? " (empty: a bare ServiceAccount name goes to the Application's namespace)" : ''}`,
  );
  lines.push(`Cluster:       ${x.clusterName} -> ${r.resolvedServer}`);
  lines.push(`Impersonation: ${settingsLine(x)}`);
  if (r.syncWindows) lines.push(`Sync windows:  ${windowsLine(r.syncWindows)}`);
  lines.push('');
  if (r.decision === 'disabled') {
    lines.push(
      `destinationServiceAccounts: ${id.entries.length} entr${id.entries.length === 1 ? 'y' : 'ies'} (not consulted while impersonation is disabled)`,
    );
  } else {
    lines.push(
      `destinationServiceAccounts, in order (server matched against ${q(r.resolvedServer)}, namespace against ${q(r.destination.namespace)}):`,
    );
    if (id.entries.length === 0) lines.push('  (none)');
    const visited = new Set(id.trace.map((t) => t.index));
    for (const t of id.trace) {
      const e = t.entry;
      const badServer = t.error?.startsWith('invalid glob pattern for destination server') ?? false;
      const badNamespace = t.error?.startsWith('invalid glob pattern for destination namespace') ?? false;
      const server = badServer ? 'is not a valid glob' : t.serverMatched ? 'matches' : 'does not match';
      const namespace = badServer
        ? 'not evaluated'
        : badNamespace
          ? 'is not a valid glob'
          : t.namespaceMatched
            ? 'matches'
            : 'does not match';
      const verdict = t.error
        ? `error: ${t.error}`
        : t.serverMatched && t.namespaceMatched
          ? 'MATCH, this entry decides'
          : 'no match';
      lines.push(
        `  [${t.index}] server ${q(e.server)} ${server}, namespace ${q(e.namespace ?? '')} ${namespace}; defaultServiceAccount ${q(e.defaultServiceAccount)} (from ${e.fromProject}): ${verdict}`,
      );
    }
    const skipped = id.entries.length - visited.size;
    if (skipped > 0)
      lines.push(`  ... ${skipped} later entr${skipped === 1 ? 'y' : 'ies'} not looked at (the first match decides)`);
  }
  lines.push('');
  lines.push(...outcomeLines(x));
  for (const w of r.warnings) lines.push(`warning: ${w}`);
  return lines.join('\n') + '\n';
}

/** `1 assigned, active now: deny '* * * * *' for 1h; a manual sync may not run now`. */
function windowsLine(w: NonNullable<Explanation['report']['syncWindows']>): string {
  const describe = (x: Record<string, unknown>) =>
    `${String(x['kind'])} '${String(x['schedule'])}' for ${String(x['duration'])}`;
  const active = w.activeWindows.length > 0 ? w.activeWindows.map(describe).join(', ') : 'none';
  const verdict = w.error ? w.error : `a manual sync ${w.canSync ? 'may' : 'may not'} run now`;
  return `${w.assignedWindows.length} assigned, active now: ${active}; ${verdict}`;
}

/** The text answer for an Application the controller refuses before deciding its identity. */
export function formatRefusal(r: RefusalReport): string {
  return [
    `Application:   ${r.application}`,
    `Project:       ${r.project}`,
    '',
    `REFUSED: the controller neither compares nor syncs it, and decides no identity for it (${r.condition})`,
    `  message: ${r.message}`,
    '',
  ].join('\n');
}
