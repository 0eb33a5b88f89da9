// Keeping an Application's status within what the API server and etcd accept. An Application with
// thousands of resources makes the per-resource results of its last sync the largest part of its
// status (about 180 bytes each); past a few thousand the write is refused (413 from the API
// server above 3 MiB, ResourceExhausted from etcd above its request limit, 1.5 MiB by default)
// and the finished sync could never be recorded, so it would run again and again. The results of
// resources that synced fine are the ones left out, and the operation's message says how many;
// failures are always kept. `status.resources` (the inventory pruning relies on) is never trimmed.

/** The status JSON this size or less is written as is; above it, sync results are summarised. */
export const STATUS_BUDGET_BYTES = 1_000_000;

type SyncResource = { status?: string; hookPhase?: string; message?: string; [k: string]: unknown };

function size(x: unknown): number {
  return Buffer.byteLength(JSON.stringify(x));
}

function isFine(r: SyncResource): boolean {
  return (
    (r.status === 'Synced' || r.status === 'Pruned' || r.status === 'PruneSkipped') &&
    (r.hookPhase === undefined || r.hookPhase === 'Succeeded')
  );
}

/**
 * The status to write: unchanged when within `budget` bytes; else `operationState.syncResult.resources`
 * without the resources that synced fine (all of them when `budget` is 0 or still too big), and the
 * count left out appended to `operationState.message` and recorded as `syncResult.resourcesOmitted`.
 */
export function fitStatus<S extends Record<string, unknown>>(status: S, budget = STATUS_BUDGET_BYTES): S {
  if (budget > 0 && size(status) <= budget) return status;
  const op = status['operationState'] as
    | {
        message?: string;
        syncResult?: { resources?: SyncResource[]; resourcesOmitted?: number; [k: string]: unknown };
        [k: string]: unknown;
      }
    | undefined;
  const all = op?.syncResult?.resources;
  if (!op || !op.syncResult || !all || all.length === 0) return status;
  const already = op.syncResult.resourcesOmitted ?? 0;
  const build = (kept: SyncResource[]): S => {
    const omitted = already + all.length - kept.length;
    const note = `${omitted} resource result(s) not listed: the Application's status would exceed the API server's size limit`;
    // The note of an earlier fit is replaced, whether it followed a message or was the whole of it.
    const base = (op.message ?? '').replace(
      /^\d+ resource result\(s\) not listed: [^)]*$| \(\d+ resource result\(s\) not listed: [^)]*\)$/,
      '',
    );
    return {
      ...status,
      operationState: {
        ...op,
        message: base ? `${base} (${note})` : note,
        syncResult: { ...op.syncResult, resources: kept, resourcesOmitted: omitted },
      },
    };
  };
  if (budget > 0) {
    const trimmed = build(all.filter((r) => !isFine(r)));
    if (size(trimmed) <= budget) return trimmed;
  }
  return build([]);
}

/** The API server or etcd refused a write for its size. */
export function isTooLarge(code: number, message: string): boolean {
  return (
    code === 413 || /request entity too large|larger than max|ResourceExhausted|Request is too large/i.test(message)
  );
}
