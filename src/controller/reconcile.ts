// The reconcile contract, level-based as controller-runtime's: a key in, a result out, an error
// thrown for the queue to retry with backoff. The manager's side is one switch over the result
// (manager.ts handle()); the two workers are the refresh (reconciler.ts) and the operation
// (operation.ts).
import type { Operation } from '../api/index.ts';

export interface ReconcileResult {
  /** Ask for an operation run (an operation was set, or one is Running). */
  operation?: boolean;
  /** Refresh again after this long (retry backoff, self-heal wait). */
  requeueAfterMs?: number;
  /** An automated operation to set once the status is written (reconciler internal). */
  startOperation?: Operation;
  /**
   * The operation finished and cleared `operation`: the watch event of that clear refreshes the
   * Application, from a cache that then holds the final status (a refresh queued at once would
   * read the older one, conflict on its status write and compare again).
   */
  operationCleared?: boolean;
  /**
   * The operation is still Running (it waits between steps, or for a retry): no refresh now, the
   * refresh after it finishes sees all.
   */
  operationRunning?: boolean;
}

export interface Workers {
  /** Comparison + status for one Application key. */
  refresh(key: string): Promise<ReconcileResult>;
  /** Run (or continue) the operation of one Application key. */
  operate(key: string): Promise<ReconcileResult>;
  /** Abort the operation in flight for this key (operationState.phase Terminating); false when none. */
  terminate?(key: string): boolean;
}
