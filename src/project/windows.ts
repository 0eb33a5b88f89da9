// An AppProject's syncWindows, with Argo CD's exact rules (pkg/apis/application/v1alpha1/types.go:
// SyncWindows.Matches, Active, InactiveAllows, CanSync): which windows an Application falls under
// (applications, clusters, namespaces, globs; OR unless andOperator), which are active now, and
// whether a sync, manual or automated, may run, syncOverrun included. Pure: the time is a parameter.
//
// A window is active when its cron schedule (5 fields, robfig/cron's standard parser; evaluated by
// the croner library) fired within the last `duration`. As Argo CD does, a timeZone shifts the
// clock by that zone's offset now and the schedule is evaluated in UTC on the shifted clock.
import { Cron } from 'croner';
import type { Application, SyncWindow } from '../api/index.ts';
import { globMatch } from '../impersonation/glob.ts';

export type WindowVerdict = { canSync: true } | { canSync: false; error?: string };

interface Parsed {
  window: SyncWindow;
  cron: Cron;
  durationMs: number;
}

/** Go's time.ParseDuration (no bare numbers but 0), in milliseconds. */
export function parseGoDuration(raw: string): number | Error {
  const units: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    μs: 1e-3,
    ms: 1,
    s: 1000,
    m: 60_000,
    h: 3_600_000,
  };
  let s = raw;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    sign = s.startsWith('-') ? -1 : 1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') return new Error(`time: invalid duration ${JSON.stringify(raw)}`);
  let total = 0;
  const re = /(\d+\.?\d*|\.\d+)([a-zµμ]*)/y;
  while (re.lastIndex < s.length) {
    const m = re.exec(s);
    if (!m) return new Error(`time: invalid duration ${JSON.stringify(raw)}`);
    if (m[2] === '') return new Error(`time: missing unit in duration ${JSON.stringify(raw)}`);
    const f = units[m[2] as string];
    if (f === undefined)
      return new Error(`time: unknown unit ${JSON.stringify(m[2])} in duration ${JSON.stringify(raw)}`);
    total += Number(m[1]) * f;
  }
  return sign * total;
}

// Schedules parsed, by their text: a refresh looks at its windows several times (the status, whether
// an automated sync may start, when they next change), and every Application of a project shares its
// windows. A croner Cron that is paused is only asked nextRun(from), so one can be shared.
const PARSED_SCHEDULES = new Map<string, Cron | Error>();
const MAX_PARSED_SCHEDULES = 512;
const MAX_CACHED_SCHEDULE_CHARS = 256;

/** robfig/cron's standard parser: exactly five fields; `?` is `*`; no L, W or # (croner has them). */
function parseSchedule(schedule: string): Cron | Error {
  const known = PARSED_SCHEDULES.get(schedule);
  if (known !== undefined) return known;
  const parsed = parseScheduleOnce(schedule);
  if (schedule.length <= MAX_CACHED_SCHEDULE_CHARS) {
    if (PARSED_SCHEDULES.size >= MAX_PARSED_SCHEDULES) {
      const oldest = PARSED_SCHEDULES.keys().next();
      if (!oldest.done) PARSED_SCHEDULES.delete(oldest.value);
    }
    PARSED_SCHEDULES.set(schedule, parsed);
  }
  return parsed;
}

function parseScheduleOnce(schedule: string): Cron | Error {
  const fields = schedule
    .trim()
    .split(/\s+/)
    .filter((f) => f !== '');
  if (fields.length !== 5) return new Error(`expected exactly 5 fields, found ${fields.length}: [${fields.join(' ')}]`);
  if (schedule.startsWith('@')) return new Error(`parser does not accept descriptors: ${schedule}`);
  const bad = fields.find((f) =>
    /[LW#]/i.test(
      f.replace(/[A-Za-z]{3}/g, (w) =>
        /^(mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)$/i.test(w) ? '' : w,
      ),
    ),
  );
  if (bad !== undefined) return new Error(`failed to parse int from ${bad}`);
  try {
    return new Cron(fields.map((f) => (f === '?' ? '*' : f)).join(' '), {
      timezone: 'UTC',
      mode: '5-part',
      sloppyRanges: true,
      paused: true,
    });
  } catch (err) {
    return new Error((err as Error).message.replace(/^CronPattern: /, ''));
  }
}

function parse(w: SyncWindow): Parsed | Error {
  const cron = parseSchedule(w.schedule ?? '');
  if (cron instanceof Error) return new Error(`cannot parse schedule '${w.schedule ?? ''}': ${cron.message}`);
  const d = parseGoDuration(w.duration ?? '');
  if (d instanceof Error) return new Error(`cannot parse duration '${w.duration ?? ''}': ${d.message}`);
  return { window: w, cron, durationMs: d };
}

/** The zone's UTC offset at `at`, in ms; an unknown zone is UTC (Argo CD logs and uses UTC). */
export function zoneOffsetMs(timeZone: string | undefined, at: Date): number {
  if (!timeZone || timeZone === 'UTC') return 0;
  try {
    const name = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' })
      .formatToParts(at)
      .find((p) => p.type === 'timeZoneName')?.value;
    const m = /GMT([+-])(\d{2}):(\d{2})/.exec(name ?? '');
    return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 3_600_000 + Number(m[3]) * 60_000) : 0;
  } catch {
    return 0;
  }
}

/** Active at `at`: the schedule fired in (at - duration, at) on the zone-shifted clock. */
function activeAt(p: Parsed, at: Date, offsetAt: Date): boolean {
  const shifted = at.getTime() + zoneOffsetMs(p.window.timeZone, offsetAt);
  const next = p.cron.nextRun(new Date(shifted - p.durationMs));
  return next !== null && next.getTime() < shifted;
}

/** SyncWindows.Matches: the windows that apply to `app`. */
export function matchingWindows(windows: readonly SyncWindow[] | undefined, app: Application): SyncWindow[] {
  const dst = app.spec.destination ?? {};
  return (windows ?? []).filter((w) => {
    const and = w.andOperator === true;
    let matched = false;
    let isSet = false;
    if ((w.applications ?? []).length > 0) {
      isSet = true;
      matched = (w.applications ?? []).some((a) => globMatch(a, app.metadata.name));
    }
    if (and && !matched && isSet) return false;
    if (!and && matched) return true;
    if ((w.clusters ?? []).length > 0) {
      matched = false;
      isSet = true;
      matched = (w.clusters ?? []).some(
        (c) => (!!dst.name && globMatch(c, dst.name)) || (!!dst.server && globMatch(c, dst.server)),
      );
    }
    if (isSet && and && !matched) return false;
    if (!and && matched) return true;
    if ((w.namespaces ?? []).length > 0) {
      matched = (w.namespaces ?? []).some((n) => globMatch(n, dst.namespace ?? ''));
    }
    return matched;
  });
}

function parseAll(windows: readonly SyncWindow[]): Parsed[] | Error {
  const out: Parsed[] = [];
  for (const w of windows) {
    const p = parse(w);
    if (p instanceof Error) return p;
    out.push(p);
  }
  return out;
}

/** The windows of `windows` active at `at` (SyncWindows.Active); an Error for one that does not parse. */
export function activeWindows(windows: readonly SyncWindow[], at: Date, offsetAt: Date = at): SyncWindow[] | Error {
  const parsed = parseAll(windows);
  if (parsed instanceof Error) return parsed;
  return parsed.filter((p) => activeAt(p, at, offsetAt)).map((p) => p.window);
}

function canSyncAtTime(windows: readonly Parsed[], isManual: boolean, at: Date, offsetAt: Date): boolean {
  const active = windows.filter((p) => activeAt(p, at, offsetAt));
  const denies = active.filter((p) => p.window.kind === 'deny');
  if (denies.length > 0) return isManual && denies.every((p) => p.window.manualSync === true);
  if (active.some((p) => p.window.kind === 'allow')) return true;
  const inactiveAllows = windows.filter((p) => p.window.kind === 'allow' && !activeAt(p, at, offsetAt));
  if (inactiveAllows.length > 0) return isManual && inactiveAllows.every((p) => p.window.manualSync === true);
  return true;
}

/**
 * SyncWindows.CanSync for the windows matching an Application: deny windows win (unless manual and
 * every active deny allows manual syncs), then an active allow, then inactive allows hold it
 * (unless manual and every inactive allow allows manual syncs). syncOverrun lets an operation that
 * started while syncs were allowed go on: into a deny window when every active deny has it, past an
 * allow window's end when every allow window has it.
 */
export function canSync(
  windows: readonly SyncWindow[],
  isManual: boolean,
  operationStartedAt: Date | undefined,
  now: Date,
): WindowVerdict {
  if (windows.length === 0) return { canSync: true };
  const parsed = parseAll(windows);
  if (parsed instanceof Error) return { canSync: false, error: `invalid sync windows: ${parsed.message}` };
  const active = parsed.filter((p) => activeAt(p, now, now));
  const denies = active.filter((p) => p.window.kind === 'deny');
  const startedOk = () => operationStartedAt !== undefined && canSyncAtTime(parsed, isManual, operationStartedAt, now);
  if (denies.length > 0) {
    if (isManual && denies.every((p) => p.window.manualSync === true)) return { canSync: true };
    // denyAllowsOverrun reads the active windows' deny entries: every one must allow overrun.
    if (denies.every((p) => p.window.syncOverrun === true) && startedOk()) return { canSync: true };
    return { canSync: false };
  }
  if (active.some((p) => p.window.kind === 'allow')) return { canSync: true };
  const inactiveAllows = parsed.filter((p) => p.window.kind === 'allow' && !activeAt(p, now, now));
  if (inactiveAllows.length > 0) {
    if (isManual && inactiveAllows.every((p) => p.window.manualSync === true)) return { canSync: true };
    if (inactiveAllows.every((p) => p.window.syncOverrun === true) && startedOk()) return { canSync: true };
    return { canSync: false };
  }
  return { canSync: true };
}

/** When the set of active windows may next change after `now` (a window opens or one's span ends). */
export function nextWindowChange(windows: readonly SyncWindow[], now: Date): Date | undefined {
  const parsed = parseAll(windows);
  if (parsed instanceof Error) return undefined;
  let best: number | undefined;
  for (const p of parsed) {
    const offset = zoneOffsetMs(p.window.timeZone, now);
    const shifted = now.getTime() + offset;
    const opens = p.cron.nextRun(new Date(shifted))?.getTime();
    const fired = p.cron.nextRun(new Date(shifted - p.durationMs))?.getTime();
    const ends = fired !== undefined && fired < shifted ? fired + p.durationMs : undefined;
    for (const t of [opens, ends]) if (t !== undefined && (best === undefined || t - offset < best)) best = t - offset;
  }
  return best === undefined ? undefined : new Date(best);
}

/** Argo CD's message for an operation held by a window (controller/sync.go SyncAppState). */
export function blockedMessage(verdict: WindowVerdict): string {
  const error = !verdict.canSync ? verdict.error : undefined;
  return `Sync operation blocked by sync window${error ? `: ${error}` : ''}`;
}
