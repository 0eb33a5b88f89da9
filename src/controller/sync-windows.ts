// Sync windows for one Application as the controller applies them (project/windows.ts has the
// rules): whether its operation may run now, Argo CD's message when it may not, and the windows
// shown in status (impersync's `status.syncWindows`, the shape of Argo CD's
// ApplicationSyncWindowState) with when they next change, for the refresh to come back then.
import type { AppProject, Application, OperationState, SyncWindowsStatus } from '../api/index.ts';
import { activeWindows, blockedMessage, canSync, matchingWindows, nextWindowChange } from '../project/windows.ts';

export type WindowHold = { canSync: true } | { canSync: false; message: string };

/** Whether `state`'s operation may run now (manual unless initiatedBy.automated). */
export function windowVerdict(project: AppProject, app: Application, state: OperationState, now: Date): WindowHold {
  const windows = matchingWindows(project.spec.syncWindows, app);
  if (windows.length === 0) return { canSync: true };
  const started = Date.parse(state.startedAt);
  const verdict = canSync(
    windows,
    state.operation.initiatedBy?.automated !== true,
    Number.isNaN(started) ? undefined : new Date(started),
    now,
  );
  return verdict.canSync ? { canSync: true } : { canSync: false, message: blockedMessage(verdict) };
}

/** Whether an automated sync may start now (Argo CD: CanSync(false, nil)). */
export function automatedSyncAllowed(project: AppProject, app: Application, now: Date): boolean {
  const windows = matchingWindows(project.spec.syncWindows, app);
  return windows.length === 0 || canSync(windows, false, undefined, now).canSync;
}

export function syncWindowsStatus(
  project: AppProject,
  app: Application,
  now: Date,
): { status?: SyncWindowsStatus; nextChange?: Date } {
  const assigned = matchingWindows(project.spec.syncWindows, app);
  if (assigned.length === 0) return {};
  const active = activeWindows(assigned, now);
  const verdict = canSync(assigned, true, undefined, now);
  const status: SyncWindowsStatus = {
    assignedWindows: assigned,
    activeWindows: active instanceof Error ? [] : active,
    canSync: verdict.canSync,
    ...(!verdict.canSync && verdict.error ? { error: verdict.error } : {}),
  };
  const next = nextWindowChange(assigned, now);
  return { status, ...(next ? { nextChange: next } : {}) };
}
