// Sync options with Argo CD's meaning: the Application's `syncPolicy.syncOptions` (or the
// operation's) as a list of `Key=value` strings, and the per-resource annotation of the same name.
import type { KubeObject } from '../api/index.ts';
import { hasSyncOption } from './annotations.ts';

export type PropagationPolicy = 'Foreground' | 'Background' | 'Orphan';

export interface AppSyncOptions {
  /** CreateNamespace=true: create the destination namespace (as the identity) when it is missing. */
  createNamespace: boolean;
  /** PruneLast=true: prune after every wave of the Sync phase. */
  pruneLast: boolean;
  /** ApplyOutOfSyncOnly=true: skip objects the comparison found Synced. */
  applyOutOfSyncOnly: boolean;
  /** Validate=false: the API server ignores unknown and duplicate fields. */
  validate: boolean;
  /** PrunePropagationPolicy=foreground|background|orphan (default foreground). */
  prunePropagationPolicy: PropagationPolicy;
  /** Options this engine does not act on, so a caller can say so rather than pretend. */
  ignored: string[];
}

const POLICIES: Record<string, PropagationPolicy> = {
  foreground: 'Foreground',
  background: 'Background',
  orphan: 'Orphan',
};

// Options whose effect is already how this engine always works (server-side apply) or that it
// leaves to the controller (retry); they are accepted silently.
const ALWAYS_ON = new Set([
  'ServerSideApply=true',
  'RespectIgnoreDifferences=true',
  'RespectIgnoreDifferences=false',
  'ApplyOutOfSyncOnly=false',
  'CreateNamespace=false',
  'PruneLast=false',
  'Validate=true',
  'SkipDryRunOnMissingResource=true',
]);

export function parseSyncOptions(list: readonly string[] | undefined): AppSyncOptions {
  const out: AppSyncOptions = {
    createNamespace: false,
    pruneLast: false,
    applyOutOfSyncOnly: false,
    validate: true,
    prunePropagationPolicy: 'Foreground',
    ignored: [],
  };
  for (const raw of list ?? []) {
    const opt = raw.trim();
    if (opt === 'CreateNamespace=true') out.createNamespace = true;
    else if (opt === 'PruneLast=true') out.pruneLast = true;
    else if (opt === 'ApplyOutOfSyncOnly=true') out.applyOutOfSyncOnly = true;
    else if (opt === 'Validate=false') out.validate = false;
    else if (opt.startsWith('PrunePropagationPolicy=') && POLICIES[opt.slice('PrunePropagationPolicy='.length)]) {
      out.prunePropagationPolicy = POLICIES[opt.slice('PrunePropagationPolicy='.length)] as PropagationPolicy;
    } else if (!ALWAYS_ON.has(opt)) out.ignored.push(opt);
  }
  return out;
}

/** `argocd.argoproj.io/sync-options: Prune=false` on the live object: never prune it. */
export function pruneDisabled(live: KubeObject | null): boolean {
  return hasSyncOption(live, 'Prune=false');
}

export function pruneLastOn(live: KubeObject | null): boolean {
  return hasSyncOption(live, 'PruneLast=true');
}

export function validationDisabled(target: KubeObject | null): boolean {
  return hasSyncOption(target, 'Validate=false');
}
